package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// dist summarises a set of durations, in milliseconds.
type dist struct {
	N      int     `json:"n"`
	P50Ms  float64 `json:"p50Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MeanMs float64 `json:"meanMs"`
	MaxMs  float64 `json:"maxMs"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func summarise(samples []time.Duration) dist {
	if len(samples) == 0 {
		return dist{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return dist{N: len(s), P50Ms: ms(percentile(s, 50)), P99Ms: ms(percentile(s, 99)),
		MeanMs: ms(sum / time.Duration(len(s))), MaxMs: ms(s[len(s)-1])}
}

// run calls fn for i in [0, n) with conc workers and returns each call's
// duration (indexed by i) and the wall time of the whole run. It stops at
// the first error.
func run(ctx context.Context, n, conc int, fn func(ctx context.Context, i int) error) ([]time.Duration, time.Duration, error) {
	samples := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range min(max(conc, 1), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				err := fn(ctx, i)
				samples[i] = time.Since(t)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("call %d: %w", i, err); cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return samples, time.Since(start), firstErr
}

// together starts n calls at the same moment (each in its own goroutine,
// released by one barrier) and returns the wall time until the last one
// returned: what kubelet does when a node receives many pods at once.
func together(ctx context.Context, n int, fn func(ctx context.Context, i int) error) (time.Duration, error) {
	gate := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			errs[i] = fn(ctx, i)
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(start)
	for i, err := range errs {
		if err != nil {
			return wall, fmt.Errorf("call %d: %w", i, err)
		}
	}
	return wall, nil
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
