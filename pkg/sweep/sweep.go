package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
)

// Mode is what a round does (--orphan-sweep).
type Mode string

// Modes.
const (
	// Off: no round runs.
	Off Mode = "off"
	// Report: orphans are logged and counted; nothing is changed.
	Report Mode = "report"
	// Clean: orphans are also removed (those whose Action allows it).
	Clean Mode = "clean"
)

// Bounds of a round. They bound waiting on a host that does not answer;
// a round normally takes a fraction of a second.
const (
	// RoundTimeout bounds a whole round.
	RoundTimeout = 5 * time.Minute
	// ActionTimeout bounds the decision and removal of one resource or
	// journal entry.
	ActionTimeout = 2 * time.Minute
)

// Plugin is what the sweep works through: the plugin's own inventory and
// the release paths of its stages and unstages (pkg/plugin).
type Plugin interface {
	// TakeStock takes stock of the node, the plugin's journal against
	// the host as it is (pkg/inventory).
	TakeStock(ctx context.Context) (*inventory.Report, error)
	// ReleaseUnused decides, under the resource's lock, whether the
	// shared resource of key is unused and with remove removes it; it
	// reports whether it is unused (with remove: gone now).
	ReleaseUnused(ctx context.Context, key string, remove bool) (bool, error)
	// ReleaseGone decides, under the volume's lock, whether the journal
	// entry of volumeID outlived its staging path and with remove
	// finishes the volume as NodeUnstageVolume would; it reports whether
	// the entry is gone (with remove: finished now).
	ReleaseGone(ctx context.Context, volumeID string, remove bool) (bool, error)
}

// Config configures a Sweeper.
type Config struct {
	Mode     Mode
	Interval time.Duration
	Plugin   Plugin
	// Registry receives the sweep's metrics (metrics.go).
	Registry metrics.KubeRegistry
}

// Result is what a round did with one orphan.
type Result string

// Results.
const (
	// ResultFound: an orphan, confirmed under the locks and left (report
	// mode).
	ResultFound Result = "found"
	// ResultReported: an orphan the sweep never removes (ActionReport).
	ResultReported Result = "reported"
	// ResultRemoved: removed (clean mode).
	ResultRemoved Result = "removed"
	// ResultFailed: the decision or the removal failed; Outcome.Err says
	// why. The next round tries again.
	ResultFailed Result = "failed"
	// ResultInUse: decided again under the locks, it is in use or an
	// operation on it is in flight: no orphan (now).
	ResultInUse Result = "in-use"
)

// Outcome is one orphan and what the round did with it.
type Outcome struct {
	Orphan
	Result Result
	Err    error
}

// Round is what one round found and did.
type Round struct {
	Mode     Mode
	Outcomes []Outcome
	// Unattributed counts the resources no record of the plugin names
	// and no recorded volume uses (Classify).
	Unattributed int
	// Incomplete names what the inventory could not read.
	Incomplete []string
	// Credentials are the volumes the inventory found on another
	// credential than their share's mapping or target's sessions
	// (problems CredentialMismatch and CredentialDrift): reported every
	// round, never acted on (the mapping or sessions they use are in use).
	Credentials []inventory.Problem
}

// Left counts the orphans still there after the round, by kind: found,
// reported or failed.
func (r Round) Left() map[inventory.Kind]int {
	out := map[inventory.Kind]int{}
	for _, o := range r.Outcomes {
		if o.Result == ResultFound || o.Result == ResultReported || o.Result == ResultFailed {
			out[o.Kind]++
		}
	}
	return out
}

// Sweeper runs rounds. Rounds never overlap.
type Sweeper struct {
	cfg Config
	m   *sweepMetrics
	mu  sync.Mutex // one round at a time
}

// New returns a sweeper and registers its metrics.
func New(cfg Config) (*Sweeper, error) {
	switch cfg.Mode {
	case Off, Report, Clean:
	default:
		return nil, fmt.Errorf("orphan sweep mode %q: want off, report or clean", cfg.Mode)
	}
	if cfg.Mode != Off && cfg.Interval <= 0 {
		return nil, fmt.Errorf("orphan sweep interval %s: must be positive", cfg.Interval)
	}
	if cfg.Plugin == nil || cfg.Registry == nil {
		return nil, errors.New("orphan sweep: plugin and registry are required")
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Sweeper{cfg: cfg, m: m}, nil
}

// Run runs a round at once and then one every interval until ctx ends; it
// returns when the round in progress, if any, has ended. With mode Off it
// returns at once. A round that fails is logged and counted; the next one
// runs as usual.
func (s *Sweeper) Run(ctx context.Context) {
	if s.cfg.Mode == Off {
		return
	}
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		_, _ = s.Sweep(ctx) // Sweep logs and counts what failed
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep runs one round in the sweeper's mode (none with mode Off), logs
// every orphan and sets the metrics. It fails only when the inventory
// could not be taken at all.
func (s *Sweeper) Sweep(ctx context.Context) (round Round, err error) {
	round.Mode = s.cfg.Mode
	if s.cfg.Mode == Off {
		return round, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	logger := klog.FromContext(ctx).WithName("sweep")
	// The round is background work: on Windows its host calls run on
	// workers of their own, so it never holds a worker an RPC waits for.
	ctx = host.Background(klog.NewContext(ctx, logger))
	ctx, cancel := context.WithTimeout(ctx, RoundTimeout)
	defer cancel()
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			// Never let the sweep take the plugin down.
			err = fmt.Errorf("orphan sweep panicked: %v", r)
			logger.Error(err, "Orphan sweep failed", "stack", string(debug.Stack()))
		}
		s.m.round(round, err)
	}()

	rep, err := s.cfg.Plugin.TakeStock(ctx)
	if err != nil {
		logger.Error(err, "Orphan sweep could not take stock of the node")
		return round, fmt.Errorf("take stock of the node: %w", err)
	}
	round.Incomplete = rep.Incomplete
	if len(rep.Incomplete) > 0 {
		// What could not be read is left out, never taken for an orphan.
		logger.Error(fmt.Errorf("%q", rep.Incomplete), "Orphan sweep could not read part of the node; that part is left for the next round")
	}
	orphans, unattributed := Classify(rep)
	round.Unattributed = unattributed
	decided := map[string]Outcome{} // by key: one decision per resource
	for _, o := range orphans {
		out := Outcome{Orphan: o}
		if prev, ok := decided[o.Key]; ok && o.Key != "" {
			out.Result, out.Err = prev.Result, prev.Err
		} else {
			out.Result, out.Err = s.decide(ctx, o)
			decided[o.Key] = out
		}
		s.log(logger, out)
		round.Outcomes = append(round.Outcomes, out)
	}
	round.Credentials = s.credentials(logger, rep)
	left := round.Left()
	removed, failed := 0, 0
	for _, o := range round.Outcomes {
		switch o.Result {
		case ResultRemoved:
			removed++
		case ResultFailed:
			failed++
		}
	}
	orphansLeft := 0
	for _, n := range left {
		orphansLeft += n
	}
	logger.V(2).Info("Orphan sweep done", "mode", string(s.cfg.Mode), "orphans", orphansLeft, "removed", removed,
		"failed", failed, "unattributed", unattributed, "credentials", len(round.Credentials), "duration", time.Since(start))
	return round, nil
}

// decide decides about one orphan under the locks, and in clean mode
// removes it.
func (s *Sweeper) decide(ctx context.Context, o Orphan) (Result, error) {
	if o.Action == ActionReport {
		return ResultReported, nil
	}
	if err := ctx.Err(); err != nil {
		return ResultFailed, fmt.Errorf("orphan sweep round ended: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, ActionTimeout)
	defer cancel()
	remove := s.cfg.Mode == Clean
	var orphan bool
	var err error
	switch o.Action {
	case ActionRelease:
		orphan, err = s.cfg.Plugin.ReleaseUnused(ctx, o.Key, remove)
	case ActionFinish:
		orphan, err = s.cfg.Plugin.ReleaseGone(ctx, o.Key, remove)
	default:
		return ResultFailed, fmt.Errorf("unknown action %q", o.Action)
	}
	switch {
	case err != nil:
		return ResultFailed, err
	case !orphan:
		return ResultInUse, nil
	case remove:
		return ResultRemoved, nil
	}
	return ResultFound, nil
}

// log writes the line of one outcome: every orphan found at V(0), what
// turned out to be in use at V(4).
// credentials reports the volumes whose credential differs from the one
// of the shared resource they use, the problems the inventory found: a
// volume on another user's credentials (staged before the plugin refused
// it) on every round, a secret that drifted at -v=2. Each problem's
// message says what to do; nothing is removed: the mapping or sessions
// the volume reaches its storage through are in use.
func (s *Sweeper) credentials(logger klog.Logger, rep *inventory.Report) []inventory.Problem {
	var out []inventory.Problem
	for _, v := range rep.Volumes {
		for _, p := range v.Problems {
			switch p.Reason {
			case inventory.ReasonCredentialMismatch:
				logger.Info("Volume on another user's credentials", "volumeID", v.VolumeID, "reason", p.Reason, "message", p.Message)
			case inventory.ReasonCredentialDrift:
				logger.V(2).Info("Volume on another secret of its user", "volumeID", v.VolumeID, "reason", p.Reason, "message", p.Message)
			default:
				continue
			}
			out = append(out, inventory.Problem{Reason: p.Reason, Message: v.VolumeID + ": " + p.Message})
		}
	}
	return out
}

func (s *Sweeper) log(logger klog.Logger, o Outcome) {
	kv := []any{"kind", string(o.Kind), "id", o.ID, "result", string(o.Result), "reason", o.Reason}
	switch o.Result {
	case ResultFailed:
		logger.Error(o.Err, "Orphan", kv...)
	case ResultInUse:
		logger.V(4).Info("Orphan", kv...)
	default:
		logger.Info("Orphan", kv...)
	}
}
