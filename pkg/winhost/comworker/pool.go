package comworker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Defaults of Config.
const (
	DefaultWorkers           = 2
	DefaultBackgroundWorkers = 1
	DefaultQueue             = 64
	DefaultMaxStuck          = 4
)

var (
	// ErrClosed: the pool has been closed; no call is accepted any more.
	ErrClosed = errors.New("host call pool closed")

	// ErrPanic: the call panicked; the panic was recovered and logged.
	ErrPanic = errors.New("host call panicked")
)

// Op names a call for errors, logs and counters.
type Op struct {
	// Kind is the family of the call: "wmi" or "win32".
	Kind string
	// Name is the class and method ("MSFT_Disk.Online"), the query's class
	// ("Query MSFT_Disk") or the Win32 function ("SetVolumeMountPoint").
	Name string
}

func (o Op) String() string { return o.Kind + " " + o.Name }

// Config configures a pool. T is the per-thread state Init returns.
type Config[T any] struct {
	// Name names the pool in logs and errors ("wmi", "win32").
	Name string
	// Workers is the number of workers kept ready (DefaultWorkers if 0).
	Workers int
	// BackgroundWorkers is the number of workers kept ready for the calls
	// of background work (host.Background: the orphan sweep's
	// stock-take), DefaultBackgroundWorkers if 0. Background calls run on
	// these workers only, and the other workers take no background call,
	// so background work never holds a worker an RPC waits for: RPCs go
	// first by having workers of their own.
	BackgroundWorkers int
	// Queue is the number of calls that may wait for a worker
	// (DefaultQueue if 0), for RPCs and for background work each. A call
	// that finds its queue full fails at once with an error wrapping
	// host.ErrBusy.
	Queue int
	// MaxStuck is the number of retired workers that may still be stuck in
	// a call (DefaultMaxStuck if 0). While that many are, new calls fail
	// at once with an error wrapping host.ErrBusy.
	MaxStuck int
	// Init runs once on each worker's locked OS thread before the worker
	// takes calls. Its result is passed to every call on that worker. A
	// worker whose Init fails exits without taking calls.
	Init func() (T, error)
	// Close runs on the worker's own thread when the worker exits, after
	// an Init that succeeded. Nil means nothing to tear down.
	Close func(T)
	// Logger receives the pool's own log lines; the zero value discards.
	Logger klog.Logger
}

// Pool runs calls on long-lived, OS-thread-locked workers. It is safe for
// concurrent use.
type Pool[T any] struct {
	cfg     Config[T]
	log     klog.Logger
	queue   chan *job[T] // calls of RPCs
	bgQueue chan *job[T] // calls of background work (host.Background)
	quit    chan struct{}
	wg      sync.WaitGroup // every worker goroutine, retired ones included

	mu          sync.Mutex
	closed      bool
	live        int // workers taking calls of RPCs (including those still in Init)
	bgLive      int // workers taking background calls
	stuck       int // retired workers still inside their call
	nextID      int
	lastInitErr error
	st          Stats
}

// New starts cfg.Workers workers and waits until each has run Init. If any
// Init fails, the workers already started are stopped and New returns that
// error.
func New[T any](cfg Config[T]) (*Pool[T], error) {
	if cfg.Init == nil {
		return nil, errors.New("comworker: Config.Init is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.BackgroundWorkers <= 0 {
		cfg.BackgroundWorkers = DefaultBackgroundWorkers
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.MaxStuck <= 0 {
		cfg.MaxStuck = DefaultMaxStuck
	}
	if cfg.Name == "" {
		cfg.Name = "host"
	}
	p := &Pool[T]{
		cfg:     cfg,
		log:     cfg.Logger.WithValues("pool", cfg.Name),
		queue:   make(chan *job[T], cfg.Queue),
		bgQueue: make(chan *job[T], cfg.Queue),
		quit:    make(chan struct{}),
		st:      Stats{Calls: map[string]uint64{}, ByKind: map[string]uint64{}},
	}
	all := cfg.Workers + cfg.BackgroundWorkers
	ready := make(chan error, all)
	p.mu.Lock()
	for i := range all {
		p.spawnLocked(ready, i >= cfg.Workers)
	}
	p.mu.Unlock()
	var first error
	for range all {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		// Close only waits for workers that started; the failed ones
		// have already exited. Nothing can be stuck yet.
		if err := p.Close(context.Background()); err != nil {
			p.log.Error(err, "Stopping workers after a failed start")
		}
		return nil, fmt.Errorf("start %s workers: %w", cfg.Name, first)
	}
	return p, nil
}

// Do runs fn on a worker and returns its error: on a background worker
// when ctx carries host.Background, otherwise on one of the workers of
// RPCs. It fails at once, without
// running fn, when ctx has already ended, when the pool is closed, when the
// queue is full or too many workers are stuck (errors wrapping
// host.ErrBusy). When ctx ends first, Do returns an error wrapping ctx.Err():
// fn is then either never run (it was still queued) or left to finish on a
// worker that is retired and replaced. In both cases the call counts as
// outstanding on ctx's host trackers until fn has really returned or been
// dropped from the queue.
//
// fn must not keep the thread state beyond its return, and must not write
// anything the caller reads after Do returned an error: use Call to get a
// result.
func (p *Pool[T]) Do(ctx context.Context, op Op, fn func(T) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: not started: %w", op, err)
	}
	j := &job[T]{op: op, fn: fn, done: make(chan error, 1), queued: time.Now()}

	q, what := p.queue, ""
	if host.IsBackground(ctx) {
		q, what = p.bgQueue, " background"
	}
	p.mu.Lock()
	if err := p.admitLocked(op, q == p.bgQueue); err != nil {
		p.mu.Unlock()
		return err
	}
	j.end = host.BeginCall(ctx)
	select {
	case q <- j:
	default:
		p.st.Busy++
		p.mu.Unlock()
		j.end()
		return fmt.Errorf("%s: %s%s queue full (%d calls waiting): %w", op, p.cfg.Name, what, p.cfg.Queue, host.ErrBusy)
	}
	p.mu.Unlock()

	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		return p.abandon(ctx, j)
	}
}

// Call runs fn on a worker like Do and returns its result. The result is
// handed over only when fn has finished and Call returns no error.
func Call[T, R any](ctx context.Context, p *Pool[T], op Op, fn func(T) (R, error)) (R, error) {
	var r R
	err := p.Do(ctx, op, func(t T) error {
		var err error
		r, err = fn(t)
		return err
	})
	if err != nil {
		var zero R
		return zero, err
	}
	return r, nil
}

// Note counts one more call of op without running anything: a call a job
// makes besides its main one (a connection, a class definition fetched on
// a cache miss). Jobs call it from their worker.
func (p *Pool[T]) Note(op Op) {
	p.mu.Lock()
	p.countLocked(op)
	p.mu.Unlock()
}

func (p *Pool[T]) countLocked(op Op) {
	p.st.Calls[op.String()]++
	p.st.ByKind[op.Kind]++
}

// Healthy returns nil while the pool can take calls, and the reason
// otherwise: closed, too many workers stuck in calls that never returned
// (a wedged provider), or no worker running. Readiness probes use it, so
// that a wedged host makes the plugin report not ready instead of failing
// every call while claiming to be fine.
func (p *Pool[T]) Healthy() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unavailableLocked(false)
}

// unavailableLocked returns why the pool takes no call of RPCs (or, with
// background, of background work), or nil: it is closed (ErrClosed), or
// too many workers are stuck or none of the kind is running
// (host.ErrBusy).
func (p *Pool[T]) unavailableLocked(background bool) error {
	live, kind := p.live, p.cfg.Name
	if background {
		live, kind = p.bgLive, p.cfg.Name+" background"
	}
	switch {
	case p.closed:
		return fmt.Errorf("%s pool: %w", p.cfg.Name, ErrClosed)
	case p.stuck >= p.cfg.MaxStuck:
		return fmt.Errorf("%d %s workers are stuck in host calls that have not returned: %w", p.stuck, p.cfg.Name, host.ErrBusy)
	case live == 0 && p.lastInitErr != nil:
		return fmt.Errorf("no %s worker is running (last start failed: %w): %w", kind, p.lastInitErr, host.ErrBusy)
	case live == 0:
		return fmt.Errorf("no %s worker is running: %w", kind, host.ErrBusy)
	}
	return nil
}

// admitLocked refuses a call the pool cannot take, counting it as Busy
// unless the pool is closed.
func (p *Pool[T]) admitLocked(op Op, background bool) error {
	err := p.unavailableLocked(background)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrClosed) {
		p.st.Busy++
	}
	return fmt.Errorf("%s: %w", op, err)
}

// abandon handles a caller whose ctx ended while its job was queued or
// running.
func (p *Pool[T]) abandon(ctx context.Context, j *job[T]) error {
	j.mu.Lock()
	switch j.state {
	case stateQueued:
		j.state = stateDropped
		j.mu.Unlock()
		j.end()
		p.mu.Lock()
		p.st.Cancelled++
		p.mu.Unlock()
		return fmt.Errorf("%s: not started: %w", j.op, ctx.Err())
	case stateRunning:
		j.abandoned = true
		w := j.w
		j.mu.Unlock()
		p.mu.Lock()
		p.st.Timeouts++
		p.retireLocked(w)
		p.mu.Unlock()
		p.log.Info("Host call outlived its caller; retiring its worker", "op", j.op.String(), "worker", w.id, "err", ctx.Err())
		return fmt.Errorf("%s: still running after the caller gave up: %w", j.op, ctx.Err())
	default: // finished: the result is (or is about to be) in done
		j.mu.Unlock()
		return <-j.done
	}
}

// retireLocked takes w out of the pool as stuck and starts a replacement
// unless too many workers are stuck. It is idempotent.
func (p *Pool[T]) retireLocked(w *worker) {
	if w.retired {
		return
	}
	w.retired = true
	*p.liveOf(w)--
	p.stuck++
	p.st.Retired++
	if !p.closed && p.stuck <= p.cfg.MaxStuck {
		p.st.Replaced++
		p.spawnLocked(nil, w.background)
	}
}

// liveOf returns the counter of the running workers of w's kind.
func (p *Pool[T]) liveOf(w *worker) *int {
	if w.background {
		return &p.bgLive
	}
	return &p.live
}

// wantedOf returns how many workers of w's kind the pool keeps.
func (p *Pool[T]) wantedOf(w *worker) int {
	if w.background {
		return p.cfg.BackgroundWorkers
	}
	return p.cfg.Workers
}

// spawnLocked starts a worker, for background calls with background.
// ready, when not nil, receives its Init result.
func (p *Pool[T]) spawnLocked(ready chan<- error, background bool) {
	p.nextID++
	w := &worker{id: p.nextID, background: background}
	*p.liveOf(w)++
	p.wg.Add(1)
	go p.run(w, ready)
}

func (p *Pool[T]) run(w *worker, ready chan<- error) {
	defer p.wg.Done()
	// The goroutine never unlocks its thread: when it exits, the runtime
	// ends the thread too, so no other goroutine inherits whatever the
	// thread state left behind.
	runtime.LockOSThread()

	state, err := p.initThread()
	if ready != nil {
		ready <- err
	}
	if err != nil {
		p.mu.Lock()
		*p.liveOf(w)--
		p.st.InitFailures++
		p.lastInitErr = err
		p.mu.Unlock()
		p.log.Error(err, "Starting a worker failed", "worker", w.id)
		return
	}
	// The thread state is torn down before the worker stops counting:
	// a retired worker counts as stuck until its teardown has returned
	// too (a teardown can hang like a call), so Stats().Stuck == 0 means
	// every retired worker has gone.
	queue := p.queue
	if w.background {
		queue = p.bgQueue
	}
	for {
		select {
		case <-p.quit:
			p.closeThread(state)
			p.mu.Lock()
			if !w.retired {
				*p.liveOf(w)--
			}
			p.mu.Unlock()
			return
		case j := <-queue:
			if !j.start(w) {
				continue // its caller gave up while it was queued
			}
			p.mu.Lock()
			p.countLocked(j.op)
			p.st.QueueWaits++
			p.st.QueueWait += time.Since(j.queued)
			p.mu.Unlock()

			err := p.call(w, j, state)
			// Ended before the caller hears of it: a caller that then
			// asks its tracker whether a call still runs must not
			// count this one.
			j.end()
			abandoned := j.finish(err)
			if abandoned {
				p.closeThread(state)
				p.mu.Lock()
				p.retireLocked(w) // normally done by the caller already
				p.stuck--
				// A replacement was not started if too many were
				// stuck, or its start failed: restore capacity now.
				for !p.closed && *p.liveOf(w) < p.wantedOf(w) {
					p.st.Replaced++
					p.spawnLocked(nil, w.background)
				}
				p.mu.Unlock()
				p.log.Info("Retired worker's host call returned; worker exits", "op", j.op.String(), "worker", w.id)
				return
			}
		}
	}
}

func (p *Pool[T]) initThread() (state T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("worker start: %w: %v", ErrPanic, r)
		}
	}()
	return p.cfg.Init()
}

func (p *Pool[T]) closeThread(state T) {
	if p.cfg.Close == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			p.log.Error(fmt.Errorf("%w: %v", ErrPanic, r), "Tearing down a worker's thread state panicked")
		}
	}()
	p.cfg.Close(state)
}

// call runs the job's function, turning a panic into an error so that one
// bad reply cannot take the plugin down.
func (p *Pool[T]) call(w *worker, j *job[T], state T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.mu.Lock()
			p.st.Panics++
			p.mu.Unlock()
			err = fmt.Errorf("%s: %w: %v", j.op, ErrPanic, r)
			p.log.Error(err, "Host call panicked", "worker", w.id, "stack", string(debug.Stack()))
		}
	}()
	return j.fn(state)
}

// Close stops taking calls, fails the queued ones with ErrClosed, lets
// running calls finish and waits until every worker has torn down its
// thread state and exited, or ctx ends. Workers stuck in a call that never
// returns can only be waited for; when ctx ends first, Close returns an
// error wrapping ctx.Err() and those workers exit whenever their call does.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
	p.mu.Unlock()
	for drained := false; !drained; {
		select {
		case j := <-p.queue:
			j.drop(fmt.Errorf("%s: %w", j.op, ErrClosed))
		case j := <-p.bgQueue:
			j.drop(fmt.Errorf("%s: %w", j.op, ErrClosed))
		default:
			drained = true
		}
	}
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		stuck := p.stuck
		p.mu.Unlock()
		return fmt.Errorf("close %s pool: %d workers still inside host calls: %w", p.cfg.Name, stuck, ctx.Err())
	}
}

type worker struct {
	id         int
	background bool // takes background calls only
	retired    bool // guarded by Pool.mu
}

type jobState int

const (
	stateQueued jobState = iota
	stateRunning
	stateFinished
	stateDropped
)

type job[T any] struct {
	op     Op
	fn     func(T) error
	end    func() // ends the host.BeginCall tracking
	done   chan error
	queued time.Time

	mu        sync.Mutex
	state     jobState
	w         *worker
	abandoned bool
}

// start marks the job running on w; false when it was dropped.
func (j *job[T]) start(w *worker) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != stateQueued {
		return false
	}
	j.state = stateRunning
	j.w = w
	return true
}

// finish records the result and reports whether the caller gave up.
func (j *job[T]) finish(err error) (abandoned bool) {
	j.mu.Lock()
	j.state = stateFinished
	abandoned = j.abandoned
	j.mu.Unlock()
	j.done <- err
	return abandoned
}

// drop fails a job that never started.
func (j *job[T]) drop(err error) {
	j.mu.Lock()
	if j.state != stateQueued {
		j.mu.Unlock()
		return
	}
	j.state = stateDropped
	j.mu.Unlock()
	j.end()
	j.done <- err
}
