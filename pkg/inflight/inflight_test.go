package inflight

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestSetTryAcquire(t *testing.T) {
	s := NewSet()
	rel, ok := s.TryAcquire("vol-1")
	if !ok {
		t.Fatal("first acquire refused")
	}
	if _, ok := s.TryAcquire("vol-1"); ok {
		t.Fatal("second acquire of the same key granted")
	}
	rel2, ok := s.TryAcquire("vol-2")
	if !ok {
		t.Fatal("other key refused")
	}
	rel()
	rel() // no-op
	if s.InFlight("vol-1") {
		t.Fatal("vol-1 still in flight after release")
	}
	if _, ok := s.TryAcquire("vol-1"); !ok {
		t.Fatal("acquire after release refused")
	}
	rel2()
	if got := s.Len(); got != 1 {
		t.Fatalf("Len = %d, want 1", got)
	}
}

func TestSetConcurrentExclusive(t *testing.T) {
	s := NewSet()
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := s.TryAcquire("same"); ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 1 {
		t.Fatalf("granted %d times, want exactly 1", granted)
	}
}

func TestKeyMutexExclusion(t *testing.T) {
	k := NewKeyMutex()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	holders, maxHolders := 0, 0
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := k.Lock(ctx, "share")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			holders++
			if holders > maxHolders {
				maxHolders = holders
			}
			mu.Unlock()
			mu.Lock()
			holders--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if maxHolders != 1 {
		t.Fatalf("max concurrent holders = %d, want 1", maxHolders)
	}
	if len(k.m) != 0 {
		t.Fatalf("entries leaked: %d", len(k.m))
	}
}

func TestKeyMutexHonoursContext(t *testing.T) {
	k := NewKeyMutex()
	unlock, err := k.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := k.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	// A different key is independent.
	u2, err := k.Lock(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	unlock()
	unlock() // no-op
	u3, err := k.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	u3()
	if len(k.m) != 0 {
		t.Fatalf("entries leaked: %d", len(k.m))
	}
}

func TestLockUntilIdleHoldsWhileHostCallRuns(t *testing.T) {
	k := NewKeyMutex()
	ctx, unlock, err := k.LockUntilIdle(context.Background(), "target")
	if err != nil {
		t.Fatal(err)
	}
	stuck := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()                    // the caller gives up at once…
	end := host.BeginCall(cctx) // …while a host call it started is still running
	go func() { <-stuck; end() }()
	unlock()

	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := k.Lock(short, "target"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("key free while a host call under it runs: %v", err)
	}
	close(stuck)
	u2, err := k.Lock(context.Background(), "target")
	if err != nil {
		t.Fatalf("key not released after the host call ended: %v", err)
	}
	u2()
}

// LockUntilIdleWaited reports a key held by another caller when asked for,
// and Waiting counts the callers blocked on it.
func TestLockUntilIdleWaited(t *testing.T) {
	k := NewKeyMutex()
	ctx := context.Background()
	_, unlock, waited, err := k.LockUntilIdleWaited(ctx, "a")
	if err != nil || waited {
		t.Fatalf("a free key: waited %v, %v", waited, err)
	}
	if n := k.Waiting("a"); n != 0 {
		t.Fatalf("Waiting = %d with the key held and no one waiting", n)
	}
	got := make(chan bool)
	go func() {
		_, u, w, err := k.LockUntilIdleWaited(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		u()
		got <- w
	}()
	for k.Waiting("a") != 1 {
		runtime.Gosched()
	}
	unlock()
	if !<-got {
		t.Fatal("a caller that waited for the key was told it did not")
	}
	if n := k.Waiting("a"); n != 0 {
		t.Fatalf("Waiting = %d after everyone left", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	_, unlock, _, _ = k.LockUntilIdleWaited(ctx, "b")
	cancel()
	if _, _, waited, err := k.LockUntilIdleWaited(cctx, "b"); !errors.Is(err, context.Canceled) || !waited {
		t.Fatalf("a held key and an ended context: waited %v, %v", waited, err)
	}
	unlock()
}
