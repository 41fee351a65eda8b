package backend

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

var errBoom = errors.New("boom")

func TestPoll(t *testing.T) {
	fast := Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Bound: time.Second}
	tests := []struct {
		name      string
		succeedAt int // attempt that succeeds; -1 never
		hardAt    int // attempt that fails hard; -1 never
		ctx       func() (context.Context, context.CancelFunc)
		wantErr   error
		wantCalls int // exact, or -1 for "at least 2"
	}{
		{name: "first try", succeedAt: 0, hardAt: -1, wantCalls: 1},
		{name: "third try", succeedAt: 2, hardAt: -1, wantCalls: 3},
		{name: "hard error stops", succeedAt: -1, hardAt: 1, wantErr: errBoom, wantCalls: 2},
		{name: "gives up at deadline", succeedAt: -1, hardAt: -1, wantErr: ErrRetry, wantCalls: -1,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 20*time.Millisecond)
			}},
		{name: "cancelled context stops", succeedAt: -1, hardAt: -1, wantErr: ErrRetry, wantCalls: 1,
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
			err := Poll(ctx, fast, func(_ context.Context, attempt int) error {
				if attempt != calls {
					t.Fatalf("attempt %d, want %d", attempt, calls)
				}
				calls++
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
			if tt.wantCalls >= 0 && calls != tt.wantCalls {
				t.Fatalf("calls = %d, want %d", calls, tt.wantCalls)
			}
			if tt.wantCalls < 0 && calls < 2 {
				t.Fatalf("calls = %d, want at least 2", calls)
			}
		})
	}
}

func TestPollBoundWithoutDeadline(t *testing.T) {
	b := Backoff{Initial: time.Millisecond, Max: time.Millisecond, Bound: 10 * time.Millisecond}
	calls := 0
	err := Poll(context.Background(), b, func(context.Context, int) error {
		calls++
		return ErrRetry
	})
	if !errors.Is(err, ErrRetry) {
		t.Fatalf("err = %v", err)
	}
	if calls < 2 {
		t.Fatalf("calls = %d, want several before the bound", calls)
	}
}
