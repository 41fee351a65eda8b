package comworker

import (
	"context"
	"sync"
	"syscall"
	"testing"
)

// TestWorkerKeepsItsThread checks, with Linux thread IDs, that Init, every
// call and Close of one worker run on one OS thread: COM state is per
// thread, so a worker that wandered between threads would use an apartment
// it never joined.
func TestWorkerKeepsItsThread(t *testing.T) {
	var mu sync.Mutex
	var initTid, closeTid int
	p, err := New(Config[int]{
		Workers: 1,
		Init: func() (int, error) {
			mu.Lock()
			defer mu.Unlock()
			initTid = syscall.Gettid()
			return initTid, nil
		},
		Close: func(int) {
			mu.Lock()
			defer mu.Unlock()
			closeTid = syscall.Gettid()
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for i := range 50 {
		got, err := Call(context.Background(), p, opTest, func(state int) (int, error) {
			return syscall.Gettid(), nil
		})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got != initTid {
			t.Fatalf("call %d ran on thread %d, want the worker's thread %d", i, got, initTid)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if closeTid != initTid {
		t.Errorf("Close ran on thread %d, want %d", closeTid, initTid)
	}
}
