package shared

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend/backendtest"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

const key = "smb:\\\\srv\\data"

func newSet(t *testing.T) (*Set[string], *journal.Journal) {
	t.Helper()
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return NewSet[string]("share", jr), jr
}

func put(t *testing.T, jr *journal.Journal, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := jr.Put(context.Background(), journal.Entry{VolumeID: id, StagingPath: "/k/" + id, Backend: "smb", ResourceKey: key}); err != nil {
			t.Fatal(err)
		}
	}
}

// counter counts the calls of a transition function.
type counter struct{ n atomic.Int64 }

func (c *counter) connect(err error) ConnectFunc[string] {
	return func(context.Context, *Transition[string]) error { c.n.Add(1); return err }
}

func (c *counter) disconnect(next State) DisconnectFunc[string] {
	return func(context.Context, *Transition[string]) (State, error) { c.n.Add(1); return next, nil }
}

func yes(context.Context, *string) (bool, error) { return true, nil }

func wantState(t *testing.T, s *Set[string], want State) {
	t.Helper()
	if got := s.State(key); got != want {
		t.Fatalf("state %s, want %s", got, want)
	}
}

// stage registers id and acquires the resource.
func stage(t *testing.T, s *Set[string], id string, verify func(context.Context, *string) (bool, error), connect ConnectFunc[string]) *Use[string] {
	t.Helper()
	ctx, u := s.Stage(context.Background(), key, id)
	if _, err := u.Acquire(ctx, verify, connect); err != nil {
		t.Errorf("acquire %s: %v", id, err)
	}
	return u
}

// TestAcquire: an unknown resource is connected by the first stage; a
// ready one is verified and used without a transition; a ready one that
// fails verification is connected again; a connect that fails leaves it
// unknown.
func TestAcquire(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ready       bool // the resource was connected before
		verifyOK    bool
		connectErr  error
		wantConnect int64
		wantState   State
	}{
		{name: "unknown is connected", wantConnect: 1, wantState: Ready},
		{name: "ready and verified needs no transition", ready: true, verifyOK: true, wantConnect: 0, wantState: Ready},
		{name: "ready but unusable is connected again", ready: true, wantConnect: 1, wantState: Ready},
		{name: "failed connect leaves unknown", connectErr: host.ErrUnreachable, wantConnect: 1, wantState: Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSet(t)
			if tc.ready {
				stage(t, s, "before", yes, (&counter{}).connect(nil)).Staged()
			}
			var c counter
			var verified atomic.Int64
			verify := func(context.Context, *string) (bool, error) { verified.Add(1); return tc.verifyOK, nil }
			ctx, u := s.Stage(context.Background(), key, "v")
			connected, err := u.Acquire(ctx, verify, c.connect(tc.connectErr))
			if !errors.Is(err, tc.connectErr) {
				t.Fatalf("acquire: %v, want %v", err, tc.connectErr)
			}
			if got := c.n.Load(); got != tc.wantConnect || connected != (tc.wantConnect > 0) {
				t.Fatalf("connect ran %d times (connected %t), want %d", got, connected, tc.wantConnect)
			}
			if tc.ready && verified.Load() != 1 {
				t.Fatalf("verify ran %d times on a ready resource, want 1", verified.Load())
			}
			if !tc.ready && verified.Load() != 0 {
				t.Fatalf("verify ran on a resource that was not ready")
			}
			wantState(t, s, tc.wantState)
		})
	}
}

// TestWaitersTakeTheTransitionResult: stages that arrive while the first
// stage connects wait for it and use its result, which their verify gets:
// one connect for all; a stage that comes later, not having waited, gets
// nothing kept and asks the host.
func TestWaitersTakeTheTransitionResult(t *testing.T) {
	s, _ := newSet(t)
	var c counter
	inConnect, release := make(chan struct{}), make(chan struct{})
	go func() {
		stage(t, s, "first", yes, func(_ context.Context, tr *Transition[string]) error {
			c.n.Add(1)
			tr.Keep("made")
			close(inConnect)
			<-release
			return nil
		})
	}()
	<-inConnect
	wantState(t, s, Connecting)
	const n = 16
	got := make([]*string, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, u := s.Stage(context.Background(), key, fmt.Sprint("w", i))
		wg.Go(func() {
			if _, err := u.Acquire(ctx, func(_ context.Context, fresh *string) (bool, error) { got[i] = fresh; return true, nil },
				c.connect(nil)); err != nil {
				t.Error(err)
			}
		})
	}
	for s.waiting.Load() < n {
		runtime.Gosched() // until every waiter waits for the transition
	}
	close(release)
	wg.Wait()
	if n := c.n.Load(); n != 1 {
		t.Fatalf("connect ran %d times, want 1", n)
	}
	for i, g := range got {
		if g == nil || *g != "made" {
			t.Errorf("waiter %d's verify got %v, want what the transition kept", i, g)
		}
	}
	wantState(t, s, Ready)
	later := new(string) // unset
	stage(t, s, "later", func(_ context.Context, fresh *string) (bool, error) { later = fresh; return true, nil }, c.connect(nil))
	if later != nil {
		t.Fatalf("a stage that did not wait got %v kept, want nil (it must ask the host)", later)
	}
}

// TestWaitingHonoursContext: a stage waiting for another's transition
// gives up when its context ends, and then holds nothing.
func TestWaitingHonoursContext(t *testing.T) {
	s, _ := newSet(t)
	inConnect, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		stage(t, s, "first", yes, func(context.Context, *Transition[string]) error { close(inConnect); <-release; return nil })
	}()
	<-inConnect
	ctx, cancel := context.WithCancel(context.Background())
	uctx, u := s.Stage(ctx, key, "second")
	cancel()
	if _, err := u.Acquire(uctx, yes, (&counter{}).connect(nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire while another stage connects, context cancelled: %v, want Canceled", err)
	}
	u.Failed()
	close(release)
	<-done
	if s.Registered(key, "second") {
		t.Fatal("the stage that gave up is still registered")
	}
}

// TestLastOneOutReleasesOnce: unstages of every volume at once remove the
// resource exactly once, after the last volume left it, whatever the
// order; a release of a resource this process removed needs nothing. The
// "host" is a set of linked volumes that each unstage leaves before it
// says Gone, and that the releases consult as the backends do.
func TestLastOneOutReleasesOnce(t *testing.T) {
	for _, n := range []int{1, 2, 8, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, jr := newSet(t)
			var linked sync.Map
			for i := range n {
				id := fmt.Sprint("v", i)
				put(t, jr, id)
				stage(t, s, id, yes, (&counter{}).connect(nil)).Staged()
				linked.Store(id, true)
			}
			var removals, asked atomic.Int64
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					id := fmt.Sprint("v", i)
					ctx, u, err := s.Unstage(context.Background(), key, id)
					if err != nil {
						t.Error(err)
						return
					}
					linked.Delete(id)
					u.Gone()
					u.Done()
					if _, err := s.Release(ctx, key, id, true, func(ctx context.Context, tr *Transition[string]) (State, error) {
						inUse, check, err := tr.Others(ctx)
						if err != nil {
							return Unknown, err
						}
						if len(inUse) > 0 {
							t.Errorf("in use at a release no volume is registered for: %v", inUse)
						}
						user, err := FirstUser(ctx, check, func(_ context.Context, e journal.Entry) (bool, error) {
							asked.Add(1)
							_, ok := linked.Load(e.VolumeID)
							return ok, nil
						})
						if err != nil || user != "" {
							return tr.Prev(), err
						}
						linked.Range(func(k, _ any) bool {
							t.Errorf("resource removed while %v is linked", k)
							return true
						})
						removals.Add(1)
						return Absent, nil
					}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got := removals.Load(); got != 1 {
				t.Fatalf("%d removals, want exactly 1", got)
			}
			wantState(t, s, Absent)
			t.Logf("%d volumes: %d host checks of other volumes", n, asked.Load())
			var c counter
			st, err := s.Release(context.Background(), key, "late", true, c.disconnect(Absent))
			if err != nil || st != Absent || c.n.Load() != 0 {
				t.Fatalf("release of an absent resource: %s, %v, %d disconnects; want Absent and none", st, err, c.n.Load())
			}
		})
	}
}

// TestReleaseLeavesTheDecisionToRegisteredVolumes: a release while a stage
// is registered keeps the resource; the stage's success makes that moot,
// its failure hands the release to it.
func TestReleaseLeavesTheDecisionToRegisteredVolumes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		succeed      bool
		wantDeferred bool
	}{
		{name: "stage succeeds", succeed: true},
		{name: "stage fails", wantDeferred: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSet(t)
			stage(t, s, "old", yes, (&counter{}).connect(nil)).Staged()
			_, u := s.Stage(context.Background(), key, "new")
			var c counter
			st, err := s.Release(context.Background(), key, "old", true, c.disconnect(Absent))
			if err != nil || st != Ready || c.n.Load() != 0 {
				t.Fatalf("release while a stage is registered: %s, %v, %d disconnects; want Ready, kept", st, err, c.n.Load())
			}
			if tc.succeed {
				u.Staged()
				_, u2 := s.Stage(context.Background(), key, "other")
				if deferred, _ := u2.Failed(); deferred {
					t.Fatal("a release deferred to a stage that succeeded is handed to a later failure")
				}
				return
			}
			deferred, running := u.Failed()
			if deferred != tc.wantDeferred || running {
				t.Fatalf("Failed() = %t, %t; want %t, false", deferred, running, tc.wantDeferred)
			}
		})
	}
}

// TestUnstageWaitsWhileDisconnecting: an unstage does not start its
// per-volume work while the resource is being disconnected.
func TestUnstageWaitsWhileDisconnecting(t *testing.T) {
	s, _ := newSet(t)
	stage(t, s, "a", yes, (&counter{}).connect(nil)).Staged()
	inDisconnect, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.Release(context.Background(), key, "a", false, func(context.Context, *Transition[string]) (State, error) {
			close(inDisconnect)
			<-release
			return Absent, nil
		}); err != nil {
			t.Error(err)
		}
	}()
	<-inDisconnect
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Unstage(ctx, key, "b"); !errors.Is(err, context.Canceled) {
		t.Fatalf("unstage during a disconnection: %v, want it to wait (Canceled)", err)
	}
	// A stage registers at once and waits in Acquire instead.
	_, u := s.Stage(context.Background(), key, "c")
	if !s.Registered(key, "c") {
		t.Fatal("a stage did not register during a disconnection")
	}
	close(release)
	<-done
	_, _, err := s.Unstage(context.Background(), key, "b")
	if err != nil {
		t.Fatal(err)
	}
	u.Failed()
}

// TestUnstageDoesNotWaitForAConnect: only a disconnection holds an unstage
// back; while a stage connects the resource, an unstage registers at once.
func TestUnstageDoesNotWaitForAConnect(t *testing.T) {
	s, _ := newSet(t)
	inConnect, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		stage(t, s, "a", yes, func(context.Context, *Transition[string]) error {
			close(inConnect)
			<-release
			return nil
		}).Staged()
	}()
	<-inConnect
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // an unstage that waited would fail with Canceled
	_, u, err := s.Unstage(ctx, key, "b")
	if err != nil {
		t.Fatalf("unstage while a stage connects: %v, want it registered at once", err)
	}
	if !s.Registered(key, "b") {
		t.Fatal("the unstage did not register")
	}
	u.Done()
	close(release)
	<-done
}

// TestOthers: who counts as another user in a transition.
func TestOthers(t *testing.T) {
	s, jr := newSet(t)
	put(t, jr, "self", "holding", "waiting", "leaving", "gone", "stale", "done")
	stage(t, s, "holding", yes, (&counter{}).connect(nil))
	s.Stage(context.Background(), key, "waiting")
	_, leaving, err := s.Unstage(context.Background(), key, "leaving")
	if err != nil {
		t.Fatal(err)
	}
	_, gone, err := s.Unstage(context.Background(), key, "gone")
	if err != nil {
		t.Fatal(err)
	}
	gone.Gone()
	_, doneU, err := s.Unstage(context.Background(), key, "done")
	if err != nil {
		t.Fatal(err)
	}
	doneU.Gone()
	doneU.Done()
	_ = leaving
	_, err = s.Release(context.Background(), key, "self", false, func(ctx context.Context, tr *Transition[string]) (State, error) { return tr.Prev(), nil })
	if err != nil {
		t.Fatal(err)
	}
	// The release above was deferred (others are registered): look at a
	// transition directly.
	var inUse []string
	var check []string
	tr := s.begin(key, "self", Disconnecting)
	if tr == nil {
		t.Fatal("a transition is running")
	}
	err = tr.run(context.Background(), func(ctx context.Context, tr *Transition[string]) (State, error) {
		u, c, err := tr.Others(ctx)
		inUse = u
		for _, e := range c {
			check = append(check, e.VolumeID)
		}
		return tr.Prev(), err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(check)
	if want := []string{"holding", "leaving"}; !slices.Equal(inUse, want) {
		t.Errorf("in use %v, want %v", inUse, want)
	}
	if want := []string{"stale", "waiting"}; !slices.Equal(check, want) {
		t.Errorf("to check on the host %v, want %v", check, want)
	}
	// Once its entry is gone from the journal, a gone volume is forgotten.
	if err := jr.Delete(context.Background(), "done"); err != nil {
		t.Fatal(err)
	}
	tr = s.begin(key, "self", Disconnecting)
	if err := tr.run(context.Background(), func(ctx context.Context, tr *Transition[string]) (State, error) {
		_, _, err := tr.Others(ctx)
		return tr.Prev(), err
	}); err != nil {
		t.Fatal(err)
	}
	if s.IsGone(key, "done") || !s.IsGone(key, "gone") {
		t.Errorf("gone markers: done %t (want false), gone %t (want true)", s.IsGone(key, "done"), s.IsGone(key, "gone"))
	}
}

// TestOthersRefusedEntry: the volume of a refused journal file counts as
// a user of the resource, whatever the host says (it is never checked),
// so the last unstage of the plugin's own volumes keeps the resource.
func TestOthersRefusedEntry(t *testing.T) {
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := NewSet[string]("share", backendtest.WithRefused{Store: jr, Key: key, VolumeID: "refused"})
	put(t, jr, "self")
	var inUse []string
	var check []journal.Entry
	released := false
	_, err = s.Release(context.Background(), key, "self", false, func(ctx context.Context, tr *Transition[string]) (State, error) {
		var err error
		inUse, check, err = tr.Others(ctx)
		if err != nil || len(inUse) > 0 || len(check) > 0 {
			return tr.Prev(), err
		}
		released = true
		return Absent, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if released || !slices.Equal(inUse, []string{"refused"}) || len(check) != 0 {
		t.Fatalf("released %t, in use %v, to check %v; want the refused file's volume in use", released, inUse, check)
	}
}

// TestHungCallKeepsTheResource: a host call still running after its stage
// failed keeps the volume registered (so no release removes the resource
// under it) and the transition's lock held (so the next transition does
// not overlap it), until the call ends.
func TestHungCallKeepsTheResource(t *testing.T) {
	s, _ := newSet(t)
	var end func()
	ctx, u := s.Stage(context.Background(), key, "hung")
	_, err := u.Acquire(ctx, yes, func(ctx context.Context, _ *Transition[string]) error {
		end = host.BeginCall(ctx) // a call the stage stops waiting for
		return context.DeadlineExceeded
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if deferred, running := u.Failed(); deferred || !running {
		t.Fatalf("Failed() = %t, %t; want false, true", deferred, running)
	}
	if !s.Registered(key, "hung") {
		t.Fatal("registration dropped while a host call of the stage runs")
	}
	var c counter
	if st, err := s.Release(context.Background(), key, "other", false, c.disconnect(Absent)); err != nil || c.n.Load() != 0 || st != Unknown {
		t.Fatalf("release while a hung call runs: %s, %v, %d disconnects; want kept", st, err, c.n.Load())
	}
	// The next transition waits for the lock.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	ctx2, u2 := s.Stage(cctx, key, "next")
	if _, err := u2.Acquire(ctx2, yes, c.connect(nil)); !errors.Is(err, context.Canceled) || c.n.Load() != 0 {
		t.Fatalf("connect while the previous transition's call runs: %v, %d connects; want Canceled, none", err, c.n.Load())
	}
	u2.Failed()
	end()
	if s.Registered(key, "hung") {
		t.Fatal("registration kept after the hung call ended")
	}
	stage(t, s, "after", yes, c.connect(nil)).Staged()
	if c.n.Load() != 1 {
		t.Fatalf("%d connects after the hang, want 1", c.n.Load())
	}
}

// TestPanicInTransitionDoesNotWedge: a transition that panics leaves the
// resource Unknown and free for the next one.
func TestPanicInTransitionDoesNotWedge(t *testing.T) {
	s, _ := newSet(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		stage(t, s, "p", yes, func(context.Context, *Transition[string]) error { panic("boom") })
	}()
	wantState(t, s, Unknown)
	var c counter
	stage(t, s, "q", yes, c.connect(nil)).Staged()
	if c.n.Load() != 1 {
		t.Fatalf("%d connects after the panic, want 1", c.n.Load())
	}
}

// TestRepair: a stage past Acquire runs connect again; when another
// transition runs it waits for it instead.
func TestRepair(t *testing.T) {
	s, _ := newSet(t)
	u := stage(t, s, "a", yes, (&counter{}).connect(nil))
	var c counter
	ran, err := u.Repair(context.Background(), c.connect(nil))
	if err != nil || !ran || c.n.Load() != 1 {
		t.Fatalf("repair: %t, %v, %d connects; want one", ran, err, c.n.Load())
	}
	wantState(t, s, Ready)
}

// TestFirstUser: finds a user among many without asking about all of
// them at once, and reports an error only when no user was found.
func TestFirstUser(t *testing.T) {
	entries := func(n int) []journal.Entry {
		out := make([]journal.Entry, n)
		for i := range out {
			out[i] = journal.Entry{VolumeID: fmt.Sprint("v", i)}
		}
		return out
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		n       int
		user    string // the one that is a user
		failing string // the one whose check fails
		wantID  string
		wantErr error
	}{
		{name: "none", n: 0},
		{name: "one user", n: 1, user: "v0", wantID: "v0"},
		{name: "no user", n: 50},
		{name: "user among many", n: 50, user: "v37", wantID: "v37"},
		{name: "error without user", n: 20, failing: "v3", wantErr: boom},
		{name: "user wins over error", n: 20, failing: "v3", user: "v11", wantID: "v11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var running, most atomic.Int64
			id, err := FirstUser(context.Background(), entries(tc.n), func(ctx context.Context, e journal.Entry) (bool, error) {
				now := running.Add(1)
				defer running.Add(-1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				if e.VolumeID == tc.failing {
					return false, boom
				}
				return e.VolumeID == tc.user, nil
			})
			if id != tc.wantID || !errors.Is(err, tc.wantErr) {
				t.Fatalf("FirstUser = %q, %v; want %q, %v", id, err, tc.wantID, tc.wantErr)
			}
			if most.Load() > checkParallel {
				t.Fatalf("%d checks at once, want at most %d", most.Load(), checkParallel)
			}
		})
	}
}

// TestEnd: the end of a stage's registration, as the backends' Stage
// ends it. Success stages (a deferred release is moot) and undoes nothing;
// a failure undoes, saying whether a release was deferred to it; a failure
// whose host call still runs undoes nothing and stays registered until the
// call ends.
func TestEnd(t *testing.T) {
	const none, notDeferred, wasDeferred = 0, 1, 2
	tests := []struct {
		name     string
		err      error
		deferTo  bool // another volume's release is deferred to this stage
		hung     bool // a host call of the stage still runs
		wantUndo int
	}{
		{name: "success", wantUndo: none},
		{name: "success with a deferred release", deferTo: true, wantUndo: none},
		{name: "failure", err: errors.New("boom"), wantUndo: notDeferred},
		{name: "failure with a deferred release", err: errors.New("boom"), deferTo: true, wantUndo: wasDeferred},
		{name: "failure while a call runs", err: errors.New("boom"), deferTo: true, hung: true, wantUndo: none},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSet(t)
			ctx, u := s.Stage(context.Background(), key, "v")
			var end func()
			if _, err := u.Acquire(ctx, yes, func(ctx context.Context, _ *Transition[string]) error {
				if tc.hung {
					end = host.BeginCall(ctx)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if tc.deferTo {
				var c counter
				if _, err := s.Release(context.Background(), key, "other", false, c.disconnect(Absent)); err != nil || c.n.Load() != 0 {
					t.Fatalf("release while v is registered: %v, %d disconnects; want it deferred", err, c.n.Load())
				}
			}
			undo := none
			u.End(context.Background(), tc.err, func(deferred bool) {
				undo = notDeferred
				if deferred {
					undo = wasDeferred
				}
			})
			if undo != tc.wantUndo {
				t.Fatalf("undo = %d, want %d", undo, tc.wantUndo)
			}
			if got := s.Registered(key, "v"); got != tc.hung {
				t.Fatalf("registered after End: %t, want %t", got, tc.hung)
			}
			if end != nil {
				end()
				if s.Registered(key, "v") {
					t.Fatal("still registered after the hung call ended")
				}
			}
		})
	}
}

// TestSecondReleaseWaitsForTheFirst: the last two volumes of a resource
// leave it at once; the second release arrives while the first one's
// transition removes the resource, waits for it, and then has nothing to
// do: the resource is removed exactly once and is Absent at the end.
func TestSecondReleaseWaitsForTheFirst(t *testing.T) {
	s, jr := newSet(t)
	put(t, jr, "v1", "v2")
	for _, id := range []string{"v1", "v2"} {
		stage(t, s, id, yes, (&counter{}).connect(nil)).Staged()
	}
	leave := func(id string) context.Context {
		ctx, u, err := s.Unstage(context.Background(), key, id)
		if err != nil {
			t.Fatal(err)
		}
		u.Gone()
		u.Done()
		return ctx
	}
	ctx1, ctx2 := leave("v1"), leave("v2")
	var removals atomic.Int64
	inDisconnect, release := make(chan struct{}), make(chan struct{})
	first := make(chan State, 1)
	go func() {
		st, err := s.Release(ctx1, key, "v1", true, func(ctx context.Context, tr *Transition[string]) (State, error) {
			inUse, check, err := tr.Others(ctx)
			if err != nil || len(inUse)+len(check) != 0 {
				t.Errorf("others of the first release: %v, %v, %v; want none (both left)", inUse, check, err)
			}
			close(inDisconnect)
			<-release
			removals.Add(1)
			return Absent, nil
		})
		if err != nil {
			t.Error(err)
		}
		first <- st
	}()
	<-inDisconnect
	second := make(chan State, 1)
	go func() {
		st, err := s.Release(ctx2, key, "v2", true, func(context.Context, *Transition[string]) (State, error) {
			removals.Add(1)
			return Absent, nil
		})
		if err != nil {
			t.Error(err)
		}
		second <- st
	}()
	for s.waiting.Load() == 0 {
		runtime.Gosched() // until the second release waits for the first's transition
	}
	select {
	case st := <-second:
		t.Fatalf("the second release returned %s while the first one's transition ran", st)
	default:
	}
	close(release)
	if st1, st2 := <-first, <-second; st1 != Absent || st2 != Absent {
		t.Fatalf("releases ended %s and %s, want Absent", st1, st2)
	}
	if n := removals.Load(); n != 1 {
		t.Fatalf("%d removals, want exactly 1", n)
	}
	wantState(t, s, Absent)
}

// TestOlderRegistrationLeavesTheNewerOne: a volume registered again (its
// retry, its unstage) while an older registration of it ends, as one
// whose host call outlived it does: the older one's Failed or Done never
// removes the newer one.
func TestOlderRegistrationLeavesTheNewerOne(t *testing.T) {
	for _, end := range []string{"Failed", "Done", "Staged"} {
		t.Run(end, func(t *testing.T) {
			s, _ := newSet(t)
			stage(t, s, "other", yes, (&counter{}).connect(nil)).Staged()
			_, old := s.Stage(context.Background(), key, "v")
			_, newer := s.Stage(context.Background(), key, "v")
			// A release is deferred to the newer registration...
			var c counter
			if st, err := s.Release(context.Background(), key, "other", false, c.disconnect(Absent)); err != nil || st != Ready || c.n.Load() != 0 {
				t.Fatalf("release while the newer registration holds: %s, %v, %d disconnects; want kept", st, err, c.n.Load())
			}
			// ...and the older one's end touches neither the registration
			// nor the deferred release.
			switch end {
			case "Failed":
				if deferred, _ := old.Failed(); deferred {
					t.Fatal("the older registration's Failed took the release deferred to the newer one")
				}
			case "Done":
				old.Done()
			case "Staged":
				old.Staged()
			}
			if !s.Registered(key, "v") {
				t.Fatalf("the older registration's %s removed the newer one", end)
			}
			if deferred, _ := newer.Failed(); !deferred {
				t.Fatal("the newer registration lost the release deferred to it")
			}
			if s.Registered(key, "v") {
				t.Fatal("the newer registration's Failed left it registered")
			}
		})
	}
}

// TestReconnectAfterADeferredReleaseKeepsIt: a release deferred to a stage
// that then runs its own connect (the resource had to be made again)
// stays deferred: when the stage fails after that, it must release the
// resource the unstage meant to remove.
func TestReconnectAfterADeferredReleaseKeepsIt(t *testing.T) {
	s, _ := newSet(t)
	stage(t, s, "old", yes, (&counter{}).connect(nil)).Staged()
	ctx, u := s.Stage(context.Background(), key, "new")
	var c counter
	if st, err := s.Release(context.Background(), key, "old", true, c.disconnect(Absent)); err != nil || st != Ready || c.n.Load() != 0 {
		t.Fatalf("release while a stage is registered: %s, %v, %d disconnects; want deferred", st, err, c.n.Load())
	}
	no := func(context.Context, *string) (bool, error) { return false, nil }
	connected, err := u.Acquire(ctx, no, c.connect(nil))
	if err != nil || !connected || c.n.Load() != 1 {
		t.Fatalf("acquire: %t, %v, %d connects; want one connect", connected, err, c.n.Load())
	}
	if deferred, running := u.Failed(); !deferred || running {
		t.Fatalf("Failed() after a reconnect = %t, %t; want the deferred release (true, false)", deferred, running)
	}
}

// TestGoneMarkerOutlivesItsRegistration: a volume seen to leave a resource
// the process knows nothing else of (after a restart: Unknown, nobody
// registered) stays marked gone once its unstage's registration ends, so
// that the release counts users without it; the marker goes with the
// journal entry.
func TestGoneMarkerOutlivesItsRegistration(t *testing.T) {
	s, jr := newSet(t)
	put(t, jr, "v")
	_, u, err := s.Unstage(context.Background(), key, "v")
	if err != nil {
		t.Fatal(err)
	}
	u.Gone()
	u.Done()
	if !s.IsGone(key, "v") {
		t.Fatal("the gone marker went with the registration")
	}
	var check []journal.Entry
	if _, err := s.Release(context.Background(), key, "other", false, func(ctx context.Context, tr *Transition[string]) (State, error) {
		_, check, err = tr.Others(ctx)
		return tr.Prev(), err
	}); err != nil {
		t.Fatal(err)
	}
	if len(check) != 0 {
		t.Fatalf("a release asks the host about %v, which was seen to leave", check)
	}
}

// TestWaitersOfALaterTransitionTakeItsResult: the stages that wait for a
// resource's second transition get what that one kept, as those of the
// first did, and nobody is left counted as waiting.
func TestWaitersOfALaterTransitionTakeItsResult(t *testing.T) {
	s, _ := newSet(t)
	for round, made := range []string{"first", "second"} {
		inConnect, release := make(chan struct{}), make(chan struct{})
		no := func(context.Context, *string) (bool, error) { return false, nil } // the resource needs connecting again
		done := make(chan struct{})
		go func() {
			defer close(done)
			stage(t, s, fmt.Sprint("maker", round), no, func(_ context.Context, tr *Transition[string]) error {
				tr.Keep(made)
				close(inConnect)
				<-release
				return nil
			})
		}()
		<-inConnect
		ctx, u := s.Stage(context.Background(), key, fmt.Sprint("waiter", round))
		var got *string
		waited := make(chan error, 1)
		go func() {
			_, err := u.Acquire(ctx, func(_ context.Context, fresh *string) (bool, error) { got = fresh; return true, nil },
				(&counter{}).connect(nil))
			waited <- err
		}()
		for s.waiting.Load() == 0 {
			runtime.Gosched()
		}
		close(release)
		<-done
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if got == nil || *got != made {
			t.Fatalf("round %d: the waiter's verify got %v, want %q", round, got, made)
		}
		if n := s.waiting.Load(); n != 0 {
			t.Fatalf("round %d: %d still counted as waiting", round, n)
		}
	}
}

// TestReleaseHonoursContextWhileWaiting: a release waiting for another
// transition gives up when its context ends.
func TestReleaseHonoursContextWhileWaiting(t *testing.T) {
	s, _ := newSet(t)
	inConnect, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		stage(t, s, "a", yes, func(context.Context, *Transition[string]) error { close(inConnect); <-release; return nil })
	}()
	<-inConnect
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var c counter
	if _, err := s.Release(ctx, key, "b", false, c.disconnect(Absent)); !errors.Is(err, context.Canceled) || c.n.Load() != 0 {
		t.Fatalf("release during a transition, context ended: %v, %d disconnects; want Canceled, none", err, c.n.Load())
	}
	close(release)
	<-done
}
