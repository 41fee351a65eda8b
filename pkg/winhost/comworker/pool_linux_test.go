package comworker

import (
	"context"
	"sync"
	"syscall"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// TestWorkerKeepsItsThread checks, with Linux thread IDs, that Init, every
// call and Close of one worker run on one OS thread: COM state is per
// thread, so a worker that wandered between threads would use an apartment
// it never joined.
func TestWorkerKeepsItsThread(t *testing.T) {
	var mu sync.Mutex
	closeTid := map[int]int{} // thread of Init -> thread of Close
	p, err := New(Config[int]{
		Workers: 1,
		Init: func() (int, error) {
			return syscall.Gettid(), nil
		},
		Close: func(initTid int) {
			mu.Lock()
			defer mu.Unlock()
			closeTid[initTid] = syscall.Gettid()
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for i := range 50 {
		ctx := context.Background()
		if i%2 == 1 {
			ctx = host.Background(ctx) // the background worker keeps its thread too
		}
		got, err := Call(ctx, p, opTest, func(initTid int) ([2]int, error) {
			return [2]int{initTid, syscall.Gettid()}, nil
		})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got[0] != got[1] {
			t.Fatalf("call %d ran on thread %d, want the worker's thread %d", i, got[1], got[0])
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(closeTid) != 2 {
		t.Errorf("%d workers closed, want the worker and the background worker", len(closeTid))
	}
	for initTid, tid := range closeTid {
		if tid != initTid {
			t.Errorf("Close ran on thread %d, want %d", tid, initTid)
		}
	}
}
