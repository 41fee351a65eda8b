package durable

import (
	"errors"

	"golang.org/x/sys/windows"
)

// passingError: ERROR_ACCESS_DENIED and ERROR_SHARING_VIOLATION, the codes
// robustio retries (golang/go src/cmd/internal/robustio/robustio_windows.go
// at go1.26.8; its ERROR_FILE_NOT_FOUND is left out, a missing file is an
// answer here), and ERROR_LOCK_VIOLATION, which SQLite adds for the same
// scanners (sqlite/sqlite src/os_win.c, winIoerrCanRetry1).
func passingError(err error) bool {
	return errors.Is(err, windows.ERROR_ACCESS_DENIED) ||
		errors.Is(err, windows.ERROR_SHARING_VIOLATION) ||
		errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}

// passingReadError: ERROR_SHARING_VIOLATION, what opening a file another
// process holds without sharing it answers (CreateFileW's dwShareMode on
// learn.microsoft.com), and ERROR_LOCK_VIOLATION. Not ERROR_ACCESS_DENIED:
// an open for reading meets it when the file's DACL denies the reader (the
// journal refuses such a file, and waiting would only delay the start),
// and a journal file is never left "delete pending", the state in which
// a held file answers it, because the journal removes with POSIX
// semantics (Remove).
func passingReadError(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) ||
		errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}
