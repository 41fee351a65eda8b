package filelock

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
)

func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock while held = %v, want ErrLocked", err)
	}
	unlock()
	unlock2, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after unlock: %v", err)
	}
	unlock2()
	if _, err := TryLock(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock in a missing directory = %v, want an open error", err)
	}
}

// TestTryLockRace: of many simultaneous tries, exactly one gets the lock.
func TestTryLockRace(t *testing.T) {
	for round := 0; round < 100; round++ {
		path := filepath.Join(t.TempDir(), "lock")
		const n = 8
		var wg sync.WaitGroup
		start := make(chan struct{})
		unlocks := make(chan func(), n)
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				u, err := TryLock(path)
				if err != nil {
					errs <- err
					return
				}
				unlocks <- u
			}()
		}
		close(start)
		wg.Wait()
		close(unlocks)
		close(errs)
		if len(unlocks) != 1 {
			t.Fatalf("round %d: %d holders, want 1", round, len(unlocks))
		}
		for err := range errs {
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("round %d: a loser got %v, want ErrLocked", round, err)
			}
		}
		(<-unlocks)()
	}
}
