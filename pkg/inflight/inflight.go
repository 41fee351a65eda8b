package inflight

import (
	"context"
	"sync"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Set is a set of keys with an operation in flight.
type Set struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{m: make(map[string]struct{})} }

// TryAcquire marks key as in flight. It returns false, without waiting,
// when key is already in flight. release ends the operation; calling it
// more than once is a no-op.
func (s *Set) TryAcquire(key string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.m[key]; busy {
		return nil, false
	}
	s.m[key] = struct{}{}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.m, key)
			s.mu.Unlock()
		})
	}, true
}

// InFlight reports whether key is in flight.
func (s *Set) InFlight(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, busy := s.m[key]
	return busy
}

// Len returns the number of keys in flight.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// KeyMutex is a mutex per key. Waiting honours ctx.
type KeyMutex struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	ch   chan struct{} // holds one token while the key is locked
	refs int
}

// NewKeyMutex returns a KeyMutex.
func NewKeyMutex() *KeyMutex { return &KeyMutex{m: make(map[string]*entry)} }

// Lock locks key, waiting until it is free or ctx ends (then it returns
// ctx.Err()). unlock releases it; calling unlock more than once is a no-op.
func (k *KeyMutex) Lock(ctx context.Context, key string) (unlock func(), err error) {
	unlock, _, err = k.lock(ctx, key)
	return unlock, err
}

// lock is Lock that also reports whether the key was held by another
// caller when asked for (waited).
func (k *KeyMutex) lock(ctx context.Context, key string) (unlock func(), waited bool, err error) {
	k.mu.Lock()
	e := k.m[key]
	if e == nil {
		e = &entry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	// Held when asked for: decided here, under k.mu, where Waiting starts
	// counting the caller. A holder that lets go between this and the
	// send below still had the key after the caller asked, and may have
	// changed what the caller read before.
	waited = e.refs > 0
	e.refs++
	k.mu.Unlock()

	select {
	case e.ch <- struct{}{}:
	default:
		waited = true // also when a caller that asked later got the key first
		select {
		case e.ch <- struct{}{}:
		case <-ctx.Done():
			k.drop(key, e)
			return nil, true, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.ch
			k.drop(key, e)
		})
	}, waited, nil
}

// Waiting returns how many callers wait for key, the holder not counted.
// It is a snapshot, for diagnostics and for tests that must know a caller
// has asked for the key before they release it: a caller counted here
// reports that it waited.
func (k *KeyMutex) Waiting(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.m[key]
	if e == nil {
		return 0
	}
	return e.refs - len(e.ch)
}

func (k *KeyMutex) drop(key string, e *entry) {
	k.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(k.m, key)
	}
	k.mu.Unlock()
}

// LockUntilIdle is Lock for a key that guards host state: it also returns
// a context whose host calls keep the key locked. The key is released only
// when unlock has been called AND every host call made under the returned
// context has really ended, so work still running after a deadline (a hung
// WMI provider) never overlaps the next operation on the same resource.
func (k *KeyMutex) LockUntilIdle(ctx context.Context, key string) (context.Context, func(), error) {
	ctx, unlock, _, err := k.LockUntilIdleWaited(ctx, key)
	return ctx, unlock, err
}

// LockUntilIdleWaited is LockUntilIdle that also reports whether the key
// was held by another caller when asked for: what the caller read of the
// resource before it had the key may have changed while it waited (the
// disk backend reads its disk again then: another operation on the same
// disk number means the number may name another disk by now).
func (k *KeyMutex) LockUntilIdleWaited(ctx context.Context, key string) (context.Context, func(), bool, error) {
	release, waited, err := k.lock(ctx, key)
	if err != nil {
		return ctx, nil, waited, err
	}
	tctx, tracker := host.Track(ctx)
	var once sync.Once
	return tctx, func() { once.Do(func() { tracker.WhenIdle(release) }) }, waited, nil
}
