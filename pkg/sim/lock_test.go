//go:build linux

// Linux only: the simulated host runs only on Linux (see doc.go).

package sim

import (
	"errors"
	"sync"
	"testing"
)

func TestDirLockedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: dir}); !errors.Is(err, ErrDirInUse) {
		t.Fatalf("second open: %v, want ErrDirInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

// A lock released while New waits (as when the holder closes it during a
// fork elsewhere in its process) is taken, not reported as in use. The
// holder closes when New has found the lock held, whatever the speed of
// the machine.
func TestDirLockReleasedWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	var once sync.Once
	lockBusy = func() { once.Do(func() { closed <- s.Close() }) }
	t.Cleanup(func() { lockBusy = nil })
	s2, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatalf("open while the holder closes: %v", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("New took the lock without waiting for it")
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}
