package comworker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// thread is the fake per-thread state: the worker's number, and whether
// its Close hook ran.
type thread struct {
	id     int64
	closed atomic.Bool
}

// fakeHooks stands for COM initialisation: it numbers the threads it sets
// up and records the ones torn down.
type fakeHooks struct {
	next    atomic.Int64
	failAt  int64 // Init number that fails; 0 never
	mu      sync.Mutex
	threads []*thread
}

var errInit = errors.New("fake thread init failed")

func (h *fakeHooks) init() (*thread, error) {
	n := h.next.Add(1)
	if n == h.failAt {
		return nil, errInit
	}
	t := &thread{id: n}
	h.mu.Lock()
	h.threads = append(h.threads, t)
	h.mu.Unlock()
	return t, nil
}

func (h *fakeHooks) close(t *thread) { t.closed.Store(true) }

func (h *fakeHooks) thread(id int64) *thread {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.threads {
		if t.id == id {
			return t
		}
	}
	return nil
}

func (h *fakeHooks) closedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.threads {
		if t.closed.Load() {
			n++
		}
	}
	return n
}

func newPool(t *testing.T, h *fakeHooks, workers, queue, maxStuck int) *Pool[*thread] {
	t.Helper()
	p, err := New(Config[*thread]{
		Name: "test", Workers: workers, Queue: queue, MaxStuck: maxStuck,
		Init: h.init, Close: h.close,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// manualCtx is a context the test ends by hand with the error it chooses,
// so that "the deadline passed while the call was running" is staged
// deterministically rather than raced against a timer.
type manualCtx struct {
	context.Context
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func newManualCtx(parent context.Context) *manualCtx {
	return &manualCtx{Context: parent, done: make(chan struct{})}
}

func (c *manualCtx) Done() <-chan struct{} { return c.done }

func (c *manualCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *manualCtx) end(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

var opTest = Op{Kind: "wmi", Name: "Test.Method"}

// hang returns a job that reports the thread it runs on, then blocks until
// release is closed.
func hang(started chan<- int64, release <-chan struct{}) func(*thread) error {
	return func(t *thread) error {
		started <- t.id
		<-release
		return nil
	}
}

// eventually polls cond, yielding between tries; it bounds the number of
// tries, not the time, and fails the test if cond never holds. The bound
// (a minute at least) only turns a condition that never holds into a
// failure: a loaded machine takes longer, never that long.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 60000 {
		if cond() {
			return
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never happened: %s", what)
}

// noLeak checks that the goroutine count comes back to base.
func noLeak(t *testing.T, base int) {
	t.Helper()
	eventually(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= base })
}

func waitIdle(tr *host.Tracker) {
	idle := make(chan struct{})
	tr.WhenIdle(func() { close(idle) })
	<-idle
}

func TestDoRunsOnAWorkerWithItsState(t *testing.T) {
	h := &fakeHooks{}
	p := newPool(t, h, 2, 4, 2)

	// The three workers start concurrently, so which state each holds is
	// not fixed: learn the background worker's, then a call must run on a
	// live state that is not it.
	bgState, err := Call(host.Background(context.Background()), p, Op{Kind: "probe", Name: "Background"},
		func(t *thread) (int64, error) { return t.id, nil })
	if err != nil {
		t.Fatalf("background Call: %v", err)
	}
	got, err := Call(context.Background(), p, opTest, func(t *thread) (int64, error) { return t.id, nil })
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if th := h.thread(got); th == nil || th.closed.Load() || got == bgState {
		t.Errorf("job ran with thread state %d, want a live worker's other than the background worker's %d", got, bgState)
	}
	errJob := errors.New("job failed")
	if _, err := Call(context.Background(), p, opTest, func(*thread) (int, error) { return 7, errJob }); !errors.Is(err, errJob) {
		t.Errorf("Call error = %v, want the job's error", err)
	}
	st := p.Stats()
	if st.Calls["wmi Test.Method"] != 2 || st.ByKind["wmi"] != 2 || st.ByKind["probe"] != 1 || st.QueueWaits != 3 {
		t.Errorf("stats = %+v, want 2 calls of wmi Test.Method and 1 background probe through the queues", st)
	}
	p.Note(Op{Kind: "wmi", Name: "Connect Root"})
	if st := p.Stats(); st.ByKind["wmi"] != 3 || st.Calls["wmi Connect Root"] != 1 {
		t.Errorf("after Note: stats = %+v, want 3 wmi calls", st)
	}
}

func TestNewFailsWhenAWorkerCannotStart(t *testing.T) {
	base := runtime.NumGoroutine()
	h := &fakeHooks{failAt: 2}
	_, err := New(Config[*thread]{Workers: 3, Init: h.init, Close: h.close})
	if !errors.Is(err, errInit) {
		t.Fatalf("New error = %v, want errInit", err)
	}
	if got := h.closedCount(); got != 3 {
		t.Errorf("%d thread states torn down, want the 3 that started (2 of the 3 workers, and the background worker)", got)
	}
	noLeak(t, base)
}

func TestContextAlreadyEnded(t *testing.T) {
	h := &fakeHooks{}
	p := newPool(t, h, 1, 1, 1)
	ctx, tr := host.Track(context.Background())
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := p.Do(ctx, opTest, func(*thread) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do error = %v, want context.Canceled", err)
	}
	if ran || tr.Outstanding() != 0 {
		t.Errorf("ran=%v outstanding=%d, want a call neither run nor tracked", ran, tr.Outstanding())
	}
}

func TestQueueBound(t *testing.T) {
	h := &fakeHooks{}
	p := newPool(t, h, 1, 2, 1)

	started, release := make(chan int64, 4), make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(1)
	go func() { defer wg.Done(); errs <- p.Do(context.Background(), opTest, hang(started, release)) }()
	<-started // the one worker is busy
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- p.Do(context.Background(), opTest, hang(started, release)) }()
	}
	eventually(t, "two calls queued", func() bool { return p.Stats().Queued == 2 })

	err := p.Do(context.Background(), opTest, func(*thread) error { return nil })
	if !errors.Is(err, host.ErrBusy) {
		t.Fatalf("Do on a full queue = %v, want host.ErrBusy", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("queued call failed: %v", err)
		}
	}
	if st := p.Stats(); st.Busy != 1 {
		t.Errorf("Busy = %d, want 1", st.Busy)
	}
}

func TestHungCallRetiresAndReplacesItsWorker(t *testing.T) {
	base := runtime.NumGoroutine()
	h := &fakeHooks{}
	p := newPool(t, h, 1, 4, 2)

	ctx, tr := host.Track(context.Background())
	mctx := newManualCtx(ctx)
	started, release := make(chan int64, 1), make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- p.Do(mctx, opTest, hang(started, release)) }()
	stuckOn := <-started
	mctx.end(context.DeadlineExceeded)

	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do error = %v, want context.DeadlineExceeded", err)
	}
	if n := tr.Outstanding(); n != 1 {
		t.Errorf("tracker shows %d outstanding calls, want 1 while the hung call runs", n)
	}
	st := p.Stats()
	if st.Timeouts != 1 || st.Retired != 1 || st.Replaced != 1 || st.Stuck != 1 || st.Workers != 1 {
		t.Errorf("stats = %+v, want 1 timeout, 1 retired, 1 replaced, 1 stuck, 1 worker", st)
	}

	// The next call runs at once on the fresh worker.
	got, err := Call(context.Background(), p, opTest, func(t *thread) (int64, error) { return t.id, nil })
	if err != nil {
		t.Fatalf("call after the hang: %v", err)
	}
	if got == stuckOn {
		t.Errorf("call ran on the stuck worker's thread %d", got)
	}

	close(release)
	waitIdle(tr) // the tracker stays busy until the hung call has returned
	eventually(t, "stuck worker exits", func() bool { return p.Stats().Stuck == 0 })
	if !h.thread(stuckOn).closed.Load() {
		t.Errorf("the retired worker did not tear down its thread state")
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := h.closedCount(); got != 3 {
		t.Errorf("%d thread states torn down, want 3 (the stuck worker, its replacement, the background worker)", got)
	}
	noLeak(t, base)
}

func TestCallerGivesUpWhileQueued(t *testing.T) {
	h := &fakeHooks{}
	p := newPool(t, h, 1, 4, 2)

	started, release := make(chan int64, 1), make(chan struct{})
	go func() { _ = p.Do(context.Background(), opTest, hang(started, release)) }() // its result is not under test
	<-started

	ctx, tr := host.Track(context.Background())
	mctx := newManualCtx(ctx)
	var ran atomic.Bool
	errc := make(chan error, 1)
	go func() { errc <- p.Do(mctx, opTest, func(*thread) error { ran.Store(true); return nil }) }()
	eventually(t, "call queued", func() bool { return p.Stats().Queued == 1 })
	mctx.end(context.Canceled)
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do error = %v, want context.Canceled", err)
	}
	if n := tr.Outstanding(); n != 0 {
		t.Errorf("tracker shows %d outstanding, want 0: a dropped call never runs", n)
	}
	close(release)
	// The dropped job is skipped; a later call proves the worker went past it.
	if err := p.Do(context.Background(), opTest, func(*thread) error { return nil }); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if ran.Load() {
		t.Errorf("a call whose caller gave up while it was queued ran anyway")
	}
	if st := p.Stats(); st.Cancelled != 1 || st.Retired != 0 {
		t.Errorf("stats = %+v, want 1 cancelled and no retired worker", st)
	}
}

func TestStuckCap(t *testing.T) {
	base := runtime.NumGoroutine()
	h := &fakeHooks{}
	p := newPool(t, h, 1, 4, 2)

	release := make(chan struct{})
	for i := range 2 {
		mctx := newManualCtx(context.Background())
		started := make(chan int64, 1)
		errc := make(chan error, 1)
		go func() { errc <- p.Do(mctx, opTest, hang(started, release)) }()
		<-started
		mctx.end(context.DeadlineExceeded)
		if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hang %d: Do error = %v, want DeadlineExceeded", i, err)
		}
	}
	if st := p.Stats(); st.Stuck != 2 {
		t.Fatalf("Stuck = %d, want 2", st.Stuck)
	}
	ran := false
	err := p.Do(context.Background(), opTest, func(*thread) error { ran = true; return nil })
	if !errors.Is(err, host.ErrBusy) || ran {
		t.Fatalf("Do with the stuck cap reached = %v (ran=%v), want host.ErrBusy without running", err, ran)
	}
	if err := p.Healthy(); !errors.Is(err, host.ErrBusy) {
		t.Fatalf("Healthy with the stuck cap reached = %v, want host.ErrBusy", err)
	}

	close(release) // both hung calls return; their workers exit
	eventually(t, "stuck workers exit", func() bool { return p.Stats().Stuck == 0 })
	if err := p.Healthy(); err != nil {
		t.Fatalf("Healthy after the stuck calls returned: %v", err)
	}
	if err := p.Do(context.Background(), opTest, func(*thread) error { return nil }); err != nil {
		t.Fatalf("Do after the stuck calls returned: %v", err)
	}
	if st := p.Stats(); st.Workers != 1 {
		t.Errorf("Workers = %d, want capacity restored to 1", st.Workers)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	noLeak(t, base)
}

func TestPanicIsAnError(t *testing.T) {
	h := &fakeHooks{}
	p := newPool(t, h, 1, 1, 1)
	err := p.Do(context.Background(), opTest, func(*thread) error { panic("bad VARIANT") })
	if !errors.Is(err, ErrPanic) {
		t.Fatalf("Do error = %v, want ErrPanic", err)
	}
	if err := p.Do(context.Background(), opTest, func(*thread) error { return nil }); err != nil {
		t.Errorf("worker unusable after a panic: %v", err)
	}
}

func TestClose(t *testing.T) {
	base := runtime.NumGoroutine()
	h := &fakeHooks{}
	p := newPool(t, h, 1, 4, 2)

	started, release := make(chan int64, 1), make(chan struct{})
	running := make(chan error, 1)
	go func() { running <- p.Do(context.Background(), opTest, hang(started, release)) }()
	<-started
	ctx, tr := host.Track(context.Background())
	queued := make(chan error, 1)
	go func() { queued <- p.Do(ctx, opTest, func(*thread) error { return nil }) }()
	eventually(t, "call queued", func() bool { return p.Stats().Queued == 1 })

	closeCtx := newManualCtx(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- p.Close(closeCtx) }()

	if err := <-queued; !errors.Is(err, ErrClosed) {
		t.Errorf("queued call = %v, want ErrClosed", err)
	}
	if tr.Outstanding() != 0 {
		t.Errorf("a call dropped by Close is still tracked")
	}
	if err := p.Do(context.Background(), opTest, func(*thread) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
	// The running call keeps Close waiting until its ctx gives up.
	closeCtx.end(context.DeadlineExceeded)
	if err := <-closed; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with a call still running = %v, want DeadlineExceeded", err)
	}
	close(release)
	if err := <-running; err != nil {
		t.Errorf("running call: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if h.closedCount() != 2 {
		t.Errorf("thread states not torn down on Close")
	}
	noLeak(t, base)
}

// TestBackgroundCallsRunApart: a call of background work (host.Background)
// runs on a background worker only, and while it holds that worker an RPC's
// call runs at once on a worker of its own; background calls queue behind
// each other, never behind or in front of RPCs.
//
// A pool that sent background calls to the RPCs' workers would queue the
// RPC's call behind the held one: the test waits for the RPC's call a
// bounded number of attempts (eventually), then fails, and its cleanup lets
// the held call go before the pool is closed, so that nothing waits for
// ever.
func TestBackgroundCallsRunApart(t *testing.T) {
	h := &fakeHooks{}
	p := newPool(t, h, 1, 4, 2)
	bg := host.Background(context.Background())

	started, release := make(chan int64, 1), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before newPool's Close: cleanups run last first
	bgDone := make(chan error, 1)
	go func() { bgDone <- p.Do(bg, opTest, hang(started, release)) }()
	bgThread := <-started

	// rpcCall makes an RPC's call and waits for it as long as eventually
	// does.
	rpcCall := func(what string) int64 {
		t.Helper()
		type result struct {
			id  int64
			err error
		}
		done := make(chan result, 1)
		go func() {
			id, err := Call(context.Background(), p, opTest, func(t *thread) (int64, error) { return t.id, nil })
			done <- result{id, err}
		}()
		var r result
		eventually(t, what+" returned", func() bool {
			select {
			case r = <-done:
				return true
			default:
				return false
			}
		})
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.id
	}

	// The RPC's call does not wait for the background call.
	if got := rpcCall("an RPC's call while a background call runs"); got == bgThread {
		t.Fatalf("the RPC's call ran on the background worker %d", got)
	}

	// A second background call queues behind the first.
	second := make(chan int64, 1)
	go func() {
		id, err := Call(bg, p, opTest, func(t *thread) (int64, error) { return t.id, nil })
		if err != nil {
			t.Errorf("second background call: %v", err)
		}
		second <- id
	}()
	eventually(t, "background call queued", func() bool { return p.Stats().Queued == 1 })
	for i := range 3 {
		rpcCall(fmt.Sprintf("RPC call %d while background calls wait", i+1))
	}
	letGo()
	if err := <-bgDone; err != nil {
		t.Fatalf("background call: %v", err)
	}
	if id := <-second; id != bgThread {
		t.Errorf("the second background call ran on worker %d, want the background worker %d", id, bgThread)
	}
	if st := p.Stats(); st.Workers != 1 || st.BackgroundWorkers != 1 {
		t.Errorf("stats = %+v, want 1 worker and 1 background worker", st)
	}
}
