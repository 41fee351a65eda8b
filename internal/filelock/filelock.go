package filelock

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked means another open file (in this process or another) holds the
// lock.
var ErrLocked = errors.New("locked by another process")

// TryLock opens path, creating it if needed, and takes an exclusive lock on
// it without waiting: ErrLocked when the lock is held. The lock belongs to
// this open file, so a second TryLock of the same path fails even in the
// same process. unlock releases it; the file stays, for the next holder.
func TryLock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close() // the lock error is the one to report
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing the file releases the lock
}
