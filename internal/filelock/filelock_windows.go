package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile locks the file's first byte exclusively with LockFileEx and
// LOCKFILE_FAIL_IMMEDIATELY; a held lock fails with ERROR_LOCK_VIOLATION.
// The lock belongs to the handle, and Windows releases it when the handle
// closes or the process ends
// (https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-lockfileex).
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return ErrLocked
	}
	return fmt.Errorf("lock %s: %w", f.Name(), err)
}
