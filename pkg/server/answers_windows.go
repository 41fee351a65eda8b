package server

import "time"

// On Windows the first dial of a live unix socket may fail: kubelet's
// plugin watcher dials a socket up to 4 s, once a second, before it takes
// it for something else ("the first attempt will most likely fail",
// IsUnixDomainSocket in kubernetes/kubernetes pkg/kubelet/util/util_windows.go
// at commit 025f2834a128; kubernetes#104584, kubernetes#110075). A socket
// judged stale is removed, so a live process's socket (a
// node-driver-registrar's) judged stale on one failed dial would be taken
// from it: answers dials three times, a second apart, as kubelet would in
// its first 2 s. Claim is slower by 2 s when a socket really is stale.
const (
	dialAttempts = 3
	dialPause    = time.Second
)
