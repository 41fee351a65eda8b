package simnode

import (
	"runtime"
	"testing"
	"time"
)

// WaitUntil waits for cond, which an event makes true (a call reaching a
// hung host call, a host call counted). It has no bound of its own: a
// broken interleaving is ended by go test's -timeout, never by a
// wall-clock margin a loaded machine could miss.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(500 * time.Microsecond)
	}
	t.Logf("happened: %s", what)
}

// Settle lets the goroutines started so far run; it makes an interleaving
// likely, it asserts nothing.
func Settle() {
	for range 2000 {
		runtime.Gosched()
	}
}
