// Package inflight keeps the per-volume guard of the node service: at most one
// operation per volume ID runs at a time, and a second one is refused at once
// (the caller answers Aborted, as the CSI spec asks) instead of queueing
// behind the first. Different volumes never wait for each other.
//
// It also offers KeyMutex, a blocking, context-aware mutex per key, for the
// shared resources several volumes use (an SMB share root, an iSCSI target,
// one disk's partition table); LockUntilIdle keeps such a key locked until
// the host calls made under it have really ended.
package inflight
