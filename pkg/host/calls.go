package host

import (
	"context"
	"fmt"
	"sync"
)

// A Tracker counts the host calls made under a context that are still
// running, including calls whose caller has stopped waiting because its
// context ended. The node service holds a volume's lock until the tracker
// of the RPC that took it is idle, so a retry never overlaps host work that
// is still going on for the same volume.
type Tracker struct {
	mu      sync.Mutex
	n       int
	waiters []func()
}

type trackersKey struct{}

type backgroundKey struct{}

// Background returns a context whose host calls are background work (the
// orphan sweep's stock-take): hosts that share a limited resource with
// RPCs, such as the Windows executor's worker threads, run them apart so
// that they never make an RPC wait.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx is the context of background work
// (Background).
func IsBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}

// Track returns a context whose host calls are counted by the returned
// tracker as well as by every tracker already in ctx.
func Track(ctx context.Context) (context.Context, *Tracker) {
	t := &Tracker{}
	prev, _ := ctx.Value(trackersKey{}).([]*Tracker)
	next := make([]*Tracker, len(prev)+1)
	copy(next, prev)
	next[len(prev)] = t
	return context.WithValue(ctx, trackersKey{}, next), t
}

// Running reports whether a host call counted by ctx's innermost tracker
// (the one the latest Track added) is still running, such as a call whose
// caller stopped waiting when its context ended. Without a tracker it
// reports false.
func Running(ctx context.Context) bool {
	ts, _ := ctx.Value(trackersKey{}).([]*Tracker)
	return len(ts) > 0 && ts[len(ts)-1].Outstanding() > 0
}

// BeginCall records the start of a host call made on behalf of ctx. The
// returned end function must be called exactly when the call has really
// finished, even if the caller gave up waiting; calling it again is a no-op.
func BeginCall(ctx context.Context) (end func()) {
	ts, _ := ctx.Value(trackersKey{}).([]*Tracker)
	for _, t := range ts {
		t.add()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, t := range ts {
				t.done()
			}
		})
	}
}

// Outstanding returns the number of calls still running.
func (t *Tracker) Outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// WhenIdle runs f once no call is outstanding: at once, in the caller's
// goroutine, when the tracker is idle now; otherwise in the goroutine that
// ends the last call.
func (t *Tracker) WhenIdle(f func()) {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		f()
		return
	}
	t.waiters = append(t.waiters, f)
	t.mu.Unlock()
}

func (t *Tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *Tracker) done() {
	t.mu.Lock()
	t.n--
	var ws []func()
	if t.n == 0 {
		ws, t.waiters = t.waiters, nil
	}
	t.mu.Unlock()
	for _, f := range ws {
		f()
	}
}

// Detached runs fn as one tracked host call on behalf of ctx. When ctx ends
// before fn returns, Detached returns an error wrapping ctx.Err() at once,
// and fn goes on in the background; the call stays outstanding on ctx's
// trackers until fn returns. fn receives a context that is never cancelled,
// because the work it stands for cannot be interrupted.
func Detached(ctx context.Context, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("host call not started: %w", err)
	}
	end := BeginCall(ctx)
	done := make(chan error, 1)
	bg := context.WithoutCancel(ctx)
	go func() {
		err := fn(bg)
		// Ended before the caller hears of it: a caller that goes on to
		// ask its tracker whether a call still runs must not count this
		// one.
		end()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("host call still running: %w", ctx.Err())
	}
}
