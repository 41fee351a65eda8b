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
	k.mu.Lock()
	e := k.m[key]
	if e == nil {
		e = &entry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()

	select {
	case e.ch <- struct{}{}:
	case <-ctx.Done():
		k.drop(key, e)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.ch
			k.drop(key, e)
		})
	}, nil
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
	release, err := k.Lock(ctx, key)
	if err != nil {
		return ctx, nil, err
	}
	tctx, tracker := host.Track(ctx)
	var once sync.Once
	return tctx, func() { once.Do(func() { tracker.WhenIdle(release) }) }, nil
}
