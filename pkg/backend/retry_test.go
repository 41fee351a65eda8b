package backend

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

var errBoom = errors.New("boom")

// The cases decide on attempt counts and on margins of an hour, never on
// how fast the machine runs: a step that sleeps past the Bound, or a
// deadline the first wait cannot fit in, gives up after exactly one
// attempt however loaded the machine is.
func TestPoll(t *testing.T) {
	fast := Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Attempts: 10}
	tests := []struct {
		name      string
		b         Backoff
		succeedAt int // attempt that succeeds; -1 never
		hardAt    int // attempt that fails hard; -1 never
		sleep     time.Duration
		ctx       func() (context.Context, context.CancelFunc)
		wantErr   error
		wantCalls int
	}{
		{name: "first try", b: fast, succeedAt: 0, hardAt: -1, wantCalls: 1},
		{name: "third try", b: fast, succeedAt: 2, hardAt: -1, wantCalls: 3},
		{name: "hard error stops", b: fast, succeedAt: -1, hardAt: 1, wantErr: errBoom, wantCalls: 2},
		{name: "attempts run out", b: fast, succeedAt: -1, hardAt: -1, wantErr: ErrRetry, wantCalls: 10},
		{name: "the deadline leaves no room for a wait", succeedAt: -1, hardAt: -1, wantErr: ErrRetry, wantCalls: 1,
			b: Backoff{Initial: time.Hour, Max: time.Hour},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Minute)
			}},
		{name: "retries while the deadline leaves room", succeedAt: 3, hardAt: -1, wantCalls: 4,
			b: Backoff{Initial: time.Millisecond, Max: time.Millisecond},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Hour)
			}},
		{name: "the bound ends a call without a deadline", succeedAt: -1, hardAt: -1, wantErr: ErrRetry, wantCalls: 1,
			b: Backoff{Initial: time.Millisecond, Max: time.Millisecond, Bound: 20 * time.Millisecond}, sleep: 25 * time.Millisecond},
		{name: "cancelled context stops", b: fast, succeedAt: -1, hardAt: -1, wantErr: ErrRetry, wantCalls: 1,
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, func() {}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.Background(), func() {}
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			calls := 0
			err := Poll(ctx, tt.b, func(_ context.Context, attempt int) error {
				if attempt != calls {
					t.Fatalf("attempt %d, want %d", attempt, calls)
				}
				calls++
				time.Sleep(tt.sleep)
				switch attempt {
				case tt.succeedAt:
					return nil
				case tt.hardAt:
					return errBoom
				}
				return fmt.Errorf("disk not there: %w", ErrRetry)
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Fatalf("calls = %d, want %d", calls, tt.wantCalls)
			}
		})
	}
}
