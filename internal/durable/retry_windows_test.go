package durable

import (
	"os"
	"testing"

	"golang.org/x/sys/windows"
)

// TestPassingErrors: a rename or a removal waits for a holder of the file
// whatever it answers (access denied or a sharing violation); a read only
// for a sharing or lock violation, access denied being the file's DACL.
func TestPassingErrors(t *testing.T) {
	for _, c := range []struct {
		code          windows.Errno
		write, readOK bool
	}{
		{windows.ERROR_ACCESS_DENIED, true, false},
		{windows.ERROR_SHARING_VIOLATION, true, true},
		{windows.ERROR_LOCK_VIOLATION, true, true},
		{windows.ERROR_FILE_NOT_FOUND, false, false},
	} {
		err := &os.PathError{Op: "open", Path: `C:\state\v.json`, Err: c.code}
		if got := passingError(err); got != c.write {
			t.Errorf("passingError(%v) = %t, want %t", c.code, got, c.write)
		}
		if got := passingReadError(err); got != c.readOK {
			t.Errorf("passingReadError(%v) = %t, want %t", c.code, got, c.readOK)
		}
	}
}
