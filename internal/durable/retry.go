package durable

import (
	"errors"
	"math/rand/v2"
	"os"
	"time"
)

// retryFor bounds the retries of one rename, read or removal: as long as
// Go's own cmd/internal/robustio waits for the same Windows errors (golang/go
// src/cmd/internal/robustio/robustio_flaky.go, arbitraryTimeout, at
// go1.26.8).
const retryFor = 2 * time.Second

// retry repeats an operation that fails for a reason that passes: on
// Windows, another process holding the file open without sharing delete
// (a tool reading the journal with os.ReadFile, an antivirus scanner
// opening a file just written) makes MoveFileEx and DeleteFile fail with
// ERROR_ACCESS_DENIED or ERROR_SHARING_VIOLATION until it closes the file
// (golang/go#31247 and #32188, the reports behind robustio; SQLite's
// winIoerrCanRetry1 in src/os_win.c retries the same codes for the same
// reason). Elsewhere nothing is retried.
type retry struct {
	// passes reports whether err is worth another try.
	passes func(error) bool
	// sleep waits between tries; the bound is the sum of the waits, so
	// that a test decides it without a clock.
	sleep func(time.Duration)
	max   time.Duration
}

// systemRetry is the retry of this system's renames and removals, and
// readRetry of its reads (passingError and passingReadError in
// retry_windows.go and retry_other.go).
var (
	systemRetry = retry{passes: passingError, sleep: time.Sleep, max: retryFor}
	readRetry   = retry{passes: passingReadError, sleep: time.Sleep, max: retryFor}
)

// do runs op until it succeeds, fails for a reason that does not pass, or
// the waits reach r.max; a missing file never passes. Waits start at 1 ms
// and roughly double, randomised as robustio's are so that two writers
// retrying together drift apart. The error returned is op's last.
func (r retry) do(op func() error) error {
	wait, waited := time.Millisecond, time.Duration(0)
	for {
		err := op()
		if err == nil || errors.Is(err, os.ErrNotExist) || !r.passes(err) || waited >= r.max {
			return err
		}
		d := min(wait, r.max-waited)
		r.sleep(d)
		waited += d
		wait += time.Duration(rand.Int64N(int64(wait))) + 1
	}
}
