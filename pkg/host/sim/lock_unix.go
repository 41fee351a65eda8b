//go:build !windows

package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrDirInUse means another process (or another Sim) has the directory open.
var ErrDirInUse = errors.New("sim directory is in use by another process")

// lockDir takes an exclusive lock on <dir>/lock so that two processes never
// simulate the same host at once (each would overwrite the other's state).
// The lock dies with the process, so a crash never leaves it behind.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sim dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the lock error is the one to report
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sim dir %s: %w", dir, ErrDirInUse)
		}
		return nil, fmt.Errorf("lock sim dir %s: %w", dir, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}
