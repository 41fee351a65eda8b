//go:build !windows

package testbin

import "syscall"

var terminate = syscall.SIGTERM
