package shared

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inflight"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// State is what this process knows of a shared resource.
type State int

// The states of a resource (doc.go).
const (
	Unknown State = iota
	Connecting
	Ready
	Disconnecting
	Absent
)

func (s State) String() string {
	switch s {
	case Unknown:
		return "Unknown"
	case Connecting:
		return "Connecting"
	case Ready:
		return "Ready"
	case Disconnecting:
		return "Disconnecting"
	case Absent:
		return "Absent"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// role is what a registered volume is doing with the resource.
type role int8

const (
	waiting role = iota + 1 // a stage that has not acquired the resource yet
	holding                 // a stage past Acquire: its per-volume work relies on the resource
	leaving                 // an unstage doing its per-volume work
)

// resource is one shared resource. Guarded by Set.mu.
type resource[T any] struct {
	state State
	busy  bool          // a transition runs
	idle  chan struct{} // while busy: closed when the transition ends
	users map[string]*Use[T]
	// gone holds the volumes seen to leave (Use.Gone) whose journal
	// entries may still be there: counting users skips them without
	// asking the host.
	gone map[string]struct{}
	// deferred is set when a release found another volume registered and
	// left the decision to it (Use.Failed).
	deferred bool
	// ends counts the transitions that ended; result is what the last
	// one left (Transition.Keep) when it made the resource Ready, or nil.
	ends   uint64
	result *T
}

// Set is the shared resources of one backend, by key (the journal's
// ResourceKey of the volumes that share it, backend.Record.Resource). T is
// what a transition that makes a resource ready hands to the stages that
// waited for it (Transition.Keep): the mapping, the sessions.
type Set[T any] struct {
	what  string // "share", "target": in errors
	store backend.Store
	locks *inflight.KeyMutex // one transition per resource, held until its host calls end

	mu sync.Mutex
	m  map[string]*resource[T]

	// waiting counts the stages, unstages and releases waiting for a
	// transition to end; tests read it to know one waits.
	waiting atomic.Int64
}

// NewSet returns an empty set of resources of the kind what names (for
// errors), whose users the stage journal store records.
func NewSet[T any](what string, store backend.Store) *Set[T] {
	return &Set[T]{what: what, store: store, locks: inflight.NewKeyMutex(), m: make(map[string]*resource[T])}
}

// res returns the resource of key, creating it. The caller holds s.mu.
func (s *Set[T]) res(key string) *resource[T] {
	r := s.m[key]
	if r == nil {
		r = &resource[T]{users: make(map[string]*Use[T]), gone: make(map[string]struct{})}
		s.m[key] = r
	}
	return r
}

// tidy forgets a resource that holds nothing worth keeping: a fresh one
// would be the same. The caller holds s.mu.
func (s *Set[T]) tidy(key string, r *resource[T]) {
	if r.state == Unknown && !r.busy && !r.deferred && len(r.users) == 0 && len(r.gone) == 0 {
		delete(s.m, key)
	}
}

// State returns the state of the resource of key.
func (s *Set[T]) State(key string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.m[key]; r != nil {
		return r.state
	}
	return Unknown
}

// wait waits until ch is closed (a transition ended) or ctx ends.
func (s *Set[T]) wait(ctx context.Context, key string, ch <-chan struct{}) error {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for other operations on %s %s: %w", s.what, key, ctx.Err())
	}
}

// Use is one volume's registration with a resource, from the start of its
// stage or unstage until the host calls made for it have ended.
type Use[T any] struct {
	set      *Set[T]
	key      string
	volumeID string
	role     role // guarded by set.mu
	tracker  *host.Tracker
	once     sync.Once
}

// register adds a registration. The caller holds s.mu.
func (s *Set[T]) register(ctx context.Context, r *resource[T], key, volumeID string, ro role) (context.Context, *Use[T]) {
	ctx, tr := host.Track(ctx)
	u := &Use[T]{set: s, key: key, volumeID: volumeID, role: ro, tracker: tr}
	r.users[volumeID] = u
	delete(r.gone, volumeID)
	return ctx, u
}

// Stage registers volumeID as a volume being staged on the resource of
// key. It never waits. The host calls made under the returned context
// keep the registration until they have ended, even past Done. Call
// Acquire next, and Staged or Failed at the end.
func (s *Set[T]) Stage(ctx context.Context, key, volumeID string) (context.Context, *Use[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.register(ctx, s.res(key), key, volumeID, waiting)
}

// Unstage registers volumeID as a volume being unstaged from the resource
// of key, waiting first while the resource is being disconnected, so that
// the volume's per-volume work never overlaps a disconnection. While it is
// registered, no release removes the resource. Call Gone once the volume
// no longer uses the resource, then Done, then Release.
func (s *Set[T]) Unstage(ctx context.Context, key, volumeID string) (context.Context, *Use[T], error) {
	for {
		s.mu.Lock()
		r := s.res(key)
		if r.busy && r.state == Disconnecting {
			ch := r.idle
			s.mu.Unlock()
			if err := s.wait(ctx, key, ch); err != nil {
				return ctx, nil, err
			}
			continue
		}
		uctx, u := s.register(ctx, r, key, volumeID, leaving)
		s.mu.Unlock()
		return uctx, u, nil
	}
}

// Acquire waits while a transition of the resource runs, then makes it
// usable for this stage: a Ready resource that verify accepts is used as
// it is, without waiting for anything; otherwise connect runs as the
// resource's transition (exclusive, under the resource's lock). It reports
// whether this stage ran connect. verify runs outside any lock, while the
// registration keeps the resource from being removed. When this stage
// waited for a transition that made the resource Ready, verify gets what
// that transition kept (Transition.Keep): the resource as it just found or
// made it, which the stage checks against its own volume instead of asking
// the host again; otherwise it gets nil.
func (u *Use[T]) Acquire(ctx context.Context, verify func(ctx context.Context, fresh *T) (bool, error), connect ConnectFunc[T]) (connected bool, err error) {
	s := u.set
	var waitedFrom uint64
	waited := false
	for {
		st, busy, ends, result := s.peek(u.key)
		if busy != nil {
			if !waited {
				waited, waitedFrom = true, ends
			}
			if err := s.wait(ctx, u.key, busy); err != nil {
				return false, err
			}
			continue
		}
		if st == Ready {
			var fresh *T
			if waited && ends > waitedFrom {
				fresh = result
			}
			ok, err := verify(ctx, fresh)
			if err != nil {
				return false, err
			}
			if ok {
				s.setRole(u, holding)
				return false, nil
			}
		}
		t := s.begin(u.key, u.volumeID, Connecting)
		if t == nil {
			continue // another transition began: wait for it
		}
		if err := t.run(ctx, ready(connect)); err != nil {
			return true, err
		}
		s.setRole(u, holding)
		return true, nil
	}
}

// Repair runs connect as a transition for a stage past Acquire whose
// per-volume work found the resource unusable (a refusal that a stale
// mapping or session explains). When another transition runs, Repair waits
// for it instead and reports false: the caller checks again.
func (u *Use[T]) Repair(ctx context.Context, connect ConnectFunc[T]) (ran bool, err error) {
	s := u.set
	for {
		_, busy, _, _ := s.peek(u.key)
		if busy != nil {
			return false, s.wait(ctx, u.key, busy)
		}
		t := s.begin(u.key, u.volumeID, Connecting)
		if t == nil {
			continue
		}
		return true, t.run(ctx, ready(connect))
	}
}

// Staged ends the registration of a stage that succeeded: the volume now
// uses the resource as the host shows (a link, a mount point), so a
// release deferred to it is moot.
func (u *Use[T]) Staged() {
	s := u.set
	s.mu.Lock()
	if r := s.m[u.key]; r != nil && r.users[u.volumeID] == u {
		r.deferred = false
	}
	s.mu.Unlock()
	u.Done()
}

// Failed ends the registration of a stage that failed. It reports whether
// a release was deferred to this stage (Set.Release found it registered):
// the caller must then release the resource itself. When a host call of
// the stage still runs (running), the registration lasts until it ends and
// the caller must not release anything: the retry or the unstage of the
// volume will.
func (u *Use[T]) Failed() (deferred, running bool) {
	if u.tracker.Outstanding() > 0 {
		u.Done()
		return false, true
	}
	s := u.set
	u.once.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		r := s.m[u.key]
		if r == nil || r.users[u.volumeID] != u {
			return
		}
		deferred = r.deferred
		delete(r.users, u.volumeID)
		s.tidy(u.key, r)
	})
	return deferred, false
}

// End ends the registration of a stage that returned err, as every
// backend's Stage does in its deferred block: Staged on success; on
// failure Failed, then undo unless a host call of the stage still runs.
// undo gets whether a release was deferred to this stage (Failed); it
// removes what the stage made, or what the deferred release meant to
// remove, when nothing else uses it. While a call still runs nothing is
// undone: the call may yet use the resource, so the retry or the unstage
// of the volume (whose journal entry the node keeps) releases it.
func (u *Use[T]) End(ctx context.Context, err error, undo func(deferred bool)) {
	if err == nil {
		u.Staged()
		return
	}
	deferred, running := u.Failed()
	if running {
		klog.FromContext(ctx).Info("A host call of the failed stage is still running; leaving the "+u.set.what+" to the retry or the unstage",
			"resource", u.key)
		return
	}
	undo(deferred)
}

// Gone records that the unstaged volume no longer uses the resource (its
// link or mount point is gone): users are counted without it from now on.
func (u *Use[T]) Gone() {
	s := u.set
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res(u.key).gone[u.volumeID] = struct{}{}
}

// Done ends the registration once the host calls made under its context
// have ended. Calling it again is a no-op.
func (u *Use[T]) Done() {
	u.once.Do(func() {
		u.tracker.WhenIdle(func() {
			s := u.set
			s.mu.Lock()
			defer s.mu.Unlock()
			if r := s.m[u.key]; r != nil && r.users[u.volumeID] == u {
				delete(r.users, u.volumeID)
				s.tidy(u.key, r)
			}
		})
	})
}

// Release decides, as the resource's last user, whether it goes:
//   - while a transition runs, it waits for it;
//   - when the resource is Absent (this process removed it and nothing
//     made it since) and trustAbsent is set, there is nothing to do;
//   - when a volume other than volumeID is registered, the decision is
//     left to it (the last one out releases, or a failing stage does);
//   - otherwise disconnect runs as the resource's transition: it counts the
//     remaining users (Transition.Others) and removes the resource or keeps
//     it, returning the state it leaves.
//
// It returns the state of the resource afterwards. volumeID is the volume
// being unstaged, or "" for a caller that is not a volume (an orphan sweep,
// a failed stage that counts itself from the host).
func (s *Set[T]) Release(ctx context.Context, key, volumeID string, trustAbsent bool, disconnect DisconnectFunc[T]) (State, error) {
	for {
		s.mu.Lock()
		r := s.res(key)
		if r.busy {
			ch := r.idle
			s.mu.Unlock()
			if err := s.wait(ctx, key, ch); err != nil {
				return Unknown, err
			}
			continue
		}
		if trustAbsent && r.state == Absent {
			s.mu.Unlock()
			return Absent, nil
		}
		if other := r.registered(volumeID); other != "" {
			r.deferred = true
			st := r.state
			s.mu.Unlock()
			klog.FromContext(ctx).V(4).Info("Leaving the release of a shared resource to a volume still working on it",
				"resource", key, "volumes", []string{other})
			return st, nil
		}
		t := s.beginLocked(r, key, volumeID, Disconnecting)
		s.mu.Unlock()
		err := t.run(ctx, disconnect)
		return t.next, err
	}
}

// registered returns a registered volume other than volumeID, or "".
func (r *resource[T]) registered(volumeID string) string {
	for id := range r.users {
		if id != volumeID {
			return id
		}
	}
	return ""
}

// peek returns the state of the resource, while a transition runs a
// channel closed when it ends, how many transitions ended so far and what
// the last one kept.
func (s *Set[T]) peek(key string) (State, <-chan struct{}, uint64, *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res(key)
	if r.busy {
		return r.state, r.idle, r.ends, nil
	}
	return r.state, nil, r.ends, r.result
}

func (s *Set[T]) setRole(u *Use[T], ro role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u.role = ro
}

// begin starts a transition to state st, or returns nil when one runs.
func (s *Set[T]) begin(key, volumeID string, st State) *Transition[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res(key)
	if r.busy {
		return nil
	}
	return s.beginLocked(r, key, volumeID, st)
}

// beginLocked starts a transition. The caller holds s.mu and checked that
// none runs.
func (s *Set[T]) beginLocked(r *resource[T], key, volumeID string, st State) *Transition[T] {
	t := &Transition[T]{set: s, key: key, volumeID: volumeID, prev: r.state}
	r.busy, r.idle, r.state = true, make(chan struct{}), st
	if st == Disconnecting {
		r.deferred = false // this transition decides
	}
	return t
}

// ConnectFunc makes the resource usable, as a transition.
type ConnectFunc[T any] func(ctx context.Context, t *Transition[T]) error

// DisconnectFunc decides, as a transition, whether the resource goes: it
// removes it and returns Absent, or keeps it and returns the state it is in
// (Transition.Prev when nothing changed, Unknown when the host may differ
// from what the set knew).
type DisconnectFunc[T any] func(ctx context.Context, t *Transition[T]) (State, error)

// ready runs c as a transition that leaves the resource Ready.
func ready[T any](c ConnectFunc[T]) DisconnectFunc[T] {
	return func(ctx context.Context, t *Transition[T]) (State, error) {
		if err := c(ctx, t); err != nil {
			return Unknown, err
		}
		return Ready, nil
	}
}

// Transition is one exclusive change of a resource.
type Transition[T any] struct {
	set      *Set[T]
	key      string
	volumeID string
	prev     State
	next     State
	result   *T
}

// Keep leaves v, what a connect found or made (the mapping, the sessions),
// to the stages that waited for this transition: Acquire gives it to their
// verify when the transition leaves the resource Ready.
func (t *Transition[T]) Keep(v T) { t.result = &v }

// Key is the resource's key.
func (t *Transition[T]) Key() string { return t.key }

// Prev is the state the resource was in before the transition.
func (t *Transition[T]) Prev() State { return t.prev }

// run takes the resource's lock (held until the host calls made under it
// have ended) and runs fn; the resource ends in the state fn returns, or
// Unknown when fn fails.
func (t *Transition[T]) run(ctx context.Context, fn DisconnectFunc[T]) error {
	t.next = t.prev
	lctx, unlock, err := t.set.locks.LockUntilIdle(ctx, t.key)
	if err != nil {
		t.end()
		return fmt.Errorf("wait for other operations on %s %s: %w", t.set.what, t.key, err)
	}
	defer unlock()
	t.next = Unknown
	defer t.end() // also when fn panics: the resource must not stay busy
	next, err := fn(lctx, t)
	if err == nil {
		t.next = next
	}
	return err
}

// end ends the transition in state t.next and wakes whoever waits.
func (t *Transition[T]) end() {
	s := t.set
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res(t.key)
	r.state, r.busy = t.next, false
	close(r.idle)
	r.idle = nil
	r.ends++
	r.result = nil
	if t.next == Ready {
		r.result = t.result
	}
	if t.next == Absent {
		clear(r.gone) // no entry needs counting against a resource that is gone
	}
	s.tidy(t.key, r)
}

// Others returns, for the decisions of a transition, the other volumes
// that use the resource: inUse lists the registered volumes known to rely
// on it (stages past Acquire, unstages not yet gone) and the volumes of
// journal files the journal refused that name it (journal.Entry.Refused:
// whether they still use it cannot be told, and the plugin never releases
// a resource under them, so a planted file can only keep one); check lists the
// journal entries of the resource that the host must decide on (a link or
// mount point still there): every entry other than the transition's own
// volume's, except those of volumes in inUse and of volumes seen to leave.
// Stages still waiting for the resource are in check, not in inUse: they
// use it only if the host says so (a repeated stage of a staged volume).
func (t *Transition[T]) Others(ctx context.Context) (inUse []string, check []journal.Entry, err error) {
	entries, err := t.set.store.ByResource(ctx, t.key)
	if err != nil {
		return nil, nil, fmt.Errorf("read the volumes of %s %s from the stage journal: %w", t.set.what, t.key, err)
	}
	var refused []string
	for _, e := range entries {
		if e.Refused {
			refused = append(refused, e.VolumeID)
		}
	}
	if len(refused) > 0 {
		klog.FromContext(ctx).V(2).Info("Journal files the plugin did not write name the resource; it is kept while they are there",
			"resource", t.key, "volumes", refused)
	}
	s := t.set
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res(t.key)
	listed := make(map[string]bool, len(entries))
	for _, e := range entries {
		if !e.Refused {
			listed[e.VolumeID] = true
		}
	}
	for id := range r.gone {
		if !listed[id] {
			delete(r.gone, id) // its unstage finished: nothing to skip any more
		}
	}
	for id, u := range r.users {
		_, gone := r.gone[id]
		if id != t.volumeID && (u.role == holding || (u.role == leaving && !gone)) {
			inUse = append(inUse, id)
		}
	}
	inUse = append(inUse, refused...)
	slices.Sort(inUse)
	for _, e := range entries {
		if e.Refused || e.VolumeID == t.volumeID || e.StagingPath == "" || slices.Contains(inUse, e.VolumeID) {
			continue
		}
		if _, gone := r.gone[e.VolumeID]; gone {
			continue
		}
		check = append(check, e)
	}
	return inUse, check, nil
}

// IsGone reports whether volumeID was seen to leave the resource of key
// and its journal entry may still be there.
func (s *Set[T]) IsGone(key, volumeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[key]
	if r == nil {
		return false
	}
	_, gone := r.gone[volumeID]
	return gone
}

// Registered reports whether volumeID is registered with the resource of
// key: a stage or unstage of it is working on the resource.
func (s *Set[T]) Registered(key, volumeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[key]
	return r != nil && r.users[volumeID] != nil
}
