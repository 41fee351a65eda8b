package comworker

import (
	"maps"
	"time"
)

// Stats is a snapshot of a pool's counters, for metrics. Counters only
// grow; Workers, Stuck and Queued are the current values.
type Stats struct {
	// Workers is the number of workers taking calls of RPCs and
	// BackgroundWorkers of background work, Stuck the number of retired
	// workers that have not exited yet (still inside their call or
	// tearing down their thread state), Queued the calls waiting (of
	// both).
	Workers, BackgroundWorkers, Stuck, Queued int

	// Calls counts the calls started, by Op.String() ("wmi
	// MSFT_Disk.Online", "win32 SetVolumeMountPoint"), including those
	// recorded with Note; ByKind sums them by Op.Kind. For the WMI pool,
	// ByKind["wmi"] is the number of WMI round trips.
	Calls  map[string]uint64
	ByKind map[string]uint64

	// QueueWaits is the number of calls that went through the queue and
	// QueueWait their total time in it.
	QueueWaits uint64
	QueueWait  time.Duration

	// Busy counts calls refused because the queue was full, too many
	// workers were stuck or none was running.
	Busy uint64
	// Timeouts counts callers that gave up on a running call; Cancelled
	// those that gave up while it was still queued.
	Timeouts, Cancelled uint64
	// Retired counts workers retired because a caller gave up on their
	// call; Replaced the workers started in their place.
	Retired, Replaced uint64
	// InitFailures counts workers whose Init failed; Panics the calls that
	// panicked.
	InitFailures, Panics uint64
}

// Stats returns a snapshot of the counters.
func (p *Pool[T]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Calls = maps.Clone(p.st.Calls)
	s.ByKind = maps.Clone(p.st.ByKind)
	s.Workers = p.live
	s.BackgroundWorkers = p.bgLive
	s.Stuck = p.stuck
	s.Queued = len(p.queue) + len(p.bgQueue)
	return s
}
