package backend

import (
	"context"
	"errors"
	"time"
)

// Backoff is the schedule of Poll.
type Backoff struct {
	Initial time.Duration // first wait
	Max     time.Duration // longest wait
	// Bound caps the total time when ctx has no deadline, so a call
	// without a deadline still ends.
	Bound time.Duration
	// Attempts, when positive, caps the number of attempts, whatever the
	// time: tests set it (and no Bound or deadline) so that how often a
	// lookup looks before giving up does not depend on the machine's speed.
	Attempts int
}

// DefaultBackoff is used by lookups that wait for a device to appear.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Bound: 2 * time.Minute}

// ErrRetry is returned by a Poll step to ask for another attempt; wrap it
// with the reason (the last reason is returned when Poll gives up).
var ErrRetry = errors.New("not yet")

// Poll runs step until it returns nil or an error other than ErrRetry, or
// until waiting once more would run past ctx's deadline (or the Bound), or
// b.Attempts attempts were made. When
// it gives up, it returns step's last error with ErrRetry unwrapped away by
// the caller's choice: the returned error still wraps ErrRetry, so callers
// that need a specific sentinel should wrap it in the step's error too.
// attempt counts from 0.
func Poll(ctx context.Context, b Backoff, step func(ctx context.Context, attempt int) error) error {
	start := time.Now()
	wait := b.Initial
	for attempt := 0; ; attempt++ {
		stepStart := time.Now()
		err := step(ctx, attempt)
		if err == nil || !errors.Is(err, ErrRetry) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return err
		}
		if b.Attempts > 0 && attempt+1 >= b.Attempts {
			return err
		}
		// Another attempt needs the wait plus the time a step takes; keep
		// twice the last step's duration in reserve so that giving up
		// returns the step's own error before the deadline, rather than
		// the next step failing with DeadlineExceeded half-way.
		reserve := 2 * time.Since(stepStart)
		if deadline, ok := ctx.Deadline(); ok {
			if time.Until(deadline) <= wait+reserve {
				return err
			}
		} else if b.Bound > 0 && time.Since(start)+wait+reserve > b.Bound {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
		if wait > b.Max {
			wait = b.Max
		}
	}
}
