//go:build !windows

package server

import "time"

// On Linux a dial fails at once with ECONNREFUSED only when no process
// listens on the socket, so one dial decides (answers_windows.go says why
// Windows dials more).
const (
	dialAttempts = 1
	dialPause    = time.Duration(0)
)
