package sim

import (
	"errors"
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
