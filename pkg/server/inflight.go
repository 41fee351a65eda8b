package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// RPC is one RPC the server is running.
type RPC struct {
	Method   string // short name: NodeStageVolume
	VolumeID string // "" for an RPC without one
	Started  time.Time
}

// String names the RPC and how long it has run, for the shutdown's log
// lines: "NodeStageVolume vol-1 (12s)".
func (r RPC) String() string {
	s := r.Method
	if r.VolumeID != "" {
		s += " " + r.VolumeID
	}
	return fmt.Sprintf("%s (%s)", s, time.Since(r.Started).Round(time.Millisecond))
}

// running is the set of RPCs whose handlers have not returned, including
// those the gRPC server has stopped waiting for: a handler cancelled by
// Stop still undoes its work (a failed stage's rollback) before it
// returns.
type running struct {
	mu    sync.Mutex
	next  uint64
	m     map[uint64]RPC
	empty chan struct{} // closed while m is empty; replaced when it fills
}

func newRunning() *running {
	e := make(chan struct{})
	close(e)
	return &running{m: make(map[uint64]RPC), empty: e}
}

// track is the interceptor that records each RPC while its handler runs.
func (r *running) track(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	rpc := RPC{Method: shortMethod(info.FullMethod), Started: time.Now()}
	if v, ok := req.(volumeRequest); ok {
		rpc.VolumeID = v.GetVolumeId()
	}
	r.mu.Lock()
	id := r.next
	r.next++
	if len(r.m) == 0 {
		r.empty = make(chan struct{})
	}
	r.m[id] = rpc
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.m, id)
		if len(r.m) == 0 {
			close(r.empty)
		}
		r.mu.Unlock()
	}()
	return handler(ctx, req)
}

// list returns the running RPCs, oldest first.
func (r *running) list() []RPC {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RPC, 0, len(r.m))
	for _, rpc := range r.m {
		out = append(out, rpc)
	}
	slices.SortFunc(out, func(a, b RPC) int { return a.Started.Compare(b.Started) })
	return out
}

// drained returns a channel closed once no RPC runs.
func (r *running) drained() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.empty
}
