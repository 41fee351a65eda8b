package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// errHeld stands for ERROR_SHARING_VIOLATION: another process holds the
// file open without sharing delete.
var errHeld = errors.New("the process cannot access the file because it is being used by another process")

// fakeRetry passes errHeld and records its waits instead of sleeping.
func fakeRetry(waits *[]time.Duration) retry {
	return retry{
		passes: func(err error) bool { return errors.Is(err, errHeld) },
		sleep:  func(d time.Duration) { *waits = append(*waits, d) },
		max:    retryFor,
	}
}

func total(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

func TestRetry(t *testing.T) {
	other := errors.New("disk full")
	cases := []struct {
		name      string
		fails     []error // op's errors, in order, then success
		wantErr   error
		wantTries int
	}{
		{name: "success", wantTries: 1},
		{name: "held, then released", fails: []error{errHeld, errHeld, errHeld}, wantTries: 4},
		{name: "wrapped like os does", fails: []error{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: errHeld}}, wantTries: 2},
		{name: "another error is not retried", fails: []error{other, errHeld}, wantErr: other, wantTries: 1},
		{name: "a missing file is an answer", fails: []error{fmt.Errorf("open: %w", fs.ErrNotExist), errHeld}, wantErr: fs.ErrNotExist, wantTries: 1},
		{name: "held then another error", fails: []error{errHeld, other}, wantErr: other, wantTries: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			tries := 0
			err := fakeRetry(&waits).do(func() error {
				tries++
				if tries <= len(tc.fails) {
					return tc.fails[tries-1]
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("do = %v, want %v", err, tc.wantErr)
			}
			if tries != tc.wantTries || len(waits) != tries-1 {
				t.Fatalf("%d tries and %d waits, want %d tries and one wait between each two", tries, len(waits), tc.wantTries)
			}
		})
	}
}

// TestRetryIsBounded: a file held for ever fails with its error once the
// waits add up to retryFor, not before and not much after; the waits grow.
func TestRetryIsBounded(t *testing.T) {
	var waits []time.Duration
	tries := 0
	err := fakeRetry(&waits).do(func() error { tries++; return errHeld })
	if !errors.Is(err, errHeld) {
		t.Fatalf("do = %v, want the last error", err)
	}
	if got := total(waits); got != retryFor {
		t.Fatalf("waited %v in all, want exactly %v", got, retryFor)
	}
	if waits[0] != time.Millisecond || len(waits) > 40 {
		t.Fatalf("waits %v: want a first wait of 1ms growing to the bound in a few dozen tries", waits)
	}
	for i := 1; i < len(waits)-1; i++ {
		if waits[i] <= waits[i-1] {
			t.Fatalf("wait %d (%v) is not longer than the one before (%v)", i, waits[i], waits[i-1])
		}
	}
}

// TestOperationsRetry runs the package's rename, read and removal against a
// file that stands in their way the first time (a directory where a file
// is expected: the refusal Linux gives for it stands for the one Windows
// gives while another process holds the file) and lets go when the retry
// waits: each operation succeeds on its second try.
func TestOperationsRetry(t *testing.T) {
	dir := t.TempDir()
	saved, savedRead := systemRetry, readRetry
	t.Cleanup(func() { systemRetry, readRetry = saved, savedRead })
	var (
		blocked bool
		release func()
		waits   int
	)
	systemRetry = retry{
		passes: func(error) bool { return blocked },
		sleep: func(time.Duration) {
			waits++
			blocked = false
			release()
		},
		max: retryFor,
	}
	readRetry = systemRetry
	block := func(name string, inside bool) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if inside {
			if err := os.WriteFile(filepath.Join(p, "x"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		blocked, waits = true, 0
	}
	unblock := func(name string, then func(p string) error) func() {
		return func() {
			p := filepath.Join(dir, name)
			if err := os.RemoveAll(p); err != nil {
				t.Error(err)
			}
			if then != nil {
				if err := then(p); err != nil {
					t.Error(err)
				}
			}
		}
	}

	block("w.json", true)
	release = unblock("w.json", nil)
	if err := WriteFile(dir, "w.json", []byte("new")); err != nil || waits != 1 {
		t.Fatalf("WriteFile: %v after %d waits, want success after 1", err, waits)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "w.json")); err != nil || string(b) != "new" {
		t.Fatalf("written file holds %q, %v", b, err)
	}

	block("r.json", false)
	release = unblock("r.json", func(p string) error { return os.WriteFile(p, []byte("content"), 0o600) })
	var b []byte
	read := func(name string) func() error {
		return func() error {
			var err error
			b, err = os.ReadFile(filepath.Join(dir, name))
			return err
		}
	}
	if err := RetryRead(read("r.json")); err != nil || string(b) != "content" || waits != 1 {
		t.Fatalf("RetryRead = %q, %v after %d waits; want the content after 1", b, err, waits)
	}

	block("d", true)
	release = func() {
		if err := os.Remove(filepath.Join(dir, "d", "x")); err != nil {
			t.Error(err)
		}
	}
	if err := Remove(dir, "d"); err != nil || waits != 1 {
		t.Fatalf("Remove: %v after %d waits, want success after 1", err, waits)
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed entry still there: %v", err)
	}

	blocked = true
	if err := Remove(dir, "d"); !errors.Is(err, fs.ErrNotExist) || waits != 1 {
		t.Fatalf("Remove of a missing file = %v after %d more waits, want fs.ErrNotExist at once", err, waits-1)
	}
	if err := RetryRead(read("d")); !errors.Is(err, fs.ErrNotExist) || waits != 1 {
		t.Fatalf("RetryRead of a missing file = %v, want fs.ErrNotExist at once", err)
	}
}
