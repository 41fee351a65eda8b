//go:build !windows

package filelock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes flock(2)'s exclusive lock without blocking. A flock belongs
// to the open file description and is released when the last descriptor of
// it closes, also when the process dies.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return ErrLocked
	}
	return fmt.Errorf("lock %s: %w", f.Name(), err)
}
