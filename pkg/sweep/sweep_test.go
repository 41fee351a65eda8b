package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"

	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
)

const (
	share     = `\\srv\data`
	iqn       = "iqn.2024-01.io.example:half"
	sessionID = "ffff-1"
	portal    = "10.0.0.1:3260"
)

// report is a node with one orphan of every kind, a foreign mapping no
// volume uses, a foreign session a volume uses, and a mapping of the
// plugin a volume uses.
func report() *inventory.Report {
	return &inventory.Report{
		Resources: []inventory.Resource{
			{Kind: inventory.KindSMBMapping, ID: share, Owner: inventory.OwnerPlugin, UsedBy: []string{}},
			{Kind: inventory.KindSMBMapping, ID: `\\srv\used`, Owner: inventory.OwnerPlugin, UsedBy: []string{"v1"}},
			{Kind: inventory.KindSMBMapping, ID: `\\admin\share`, Owner: inventory.OwnerForeign, UsedBy: []string{}},
			{Kind: inventory.KindISCSISession, ID: sessionID, Target: iqn, Portal: portal, Owner: inventory.OwnerPlugin, UsedBy: []string{}},
			{Kind: inventory.KindISCSISession, ID: "ffff-2", Target: "iqn.x:other", Portal: portal, Owner: inventory.OwnerForeign, UsedBy: []string{"v2"}},
			{Kind: inventory.KindISCSIPortal, ID: "10.0.0.2:3260", Owner: inventory.OwnerPlugin, UsedBy: []string{}},
		},
		Unexplained: []inventory.Item{
			{Kind: inventory.KindLink, ID: "/k/plugins/x/link", Reason: "r"},
			{Kind: inventory.KindISCSIPortal, ID: "10.0.0.2:3260", Reason: "r"},
			{Kind: inventory.KindSMBMapping, ID: share, Reason: "r"},
			{Kind: inventory.KindISCSIPersistentLogin, ID: iqn + "@" + portal, Reason: "r"},
			{Kind: inventory.KindISCSISession, ID: sessionID, Reason: "r"},
			{Kind: inventory.KindMountPoint, ID: "/k/plugins/x/mnt", Reason: "r"},
			{Kind: inventory.KindJournalEntry, ID: "vol-gone", Reason: "r"},
		},
	}
}

func TestClassify(t *testing.T) {
	shareKey, _ := smb.ShareKey(share)
	portalKey := iscsi.PortalKey(host.Portal{Address: "10.0.0.2", Port: 3260})
	orphans, unattributed := Classify(report())
	var got []string
	for _, o := range orphans {
		got = append(got, fmt.Sprintf("%s %s %s %s", o.Kind, o.ID, o.Action, o.Key))
	}
	want := []string{
		"journal-entry vol-gone finish vol-gone",
		"iscsi-session " + sessionID + " release " + iscsi.TargetKey(iqn),
		"iscsi-persistent-login " + iqn + "@" + portal + " release " + iscsi.TargetKey(iqn),
		"smb-mapping " + share + " release " + shareKey,
		"iscsi-portal 10.0.0.2:3260 release " + portalKey,
		"mount-point /k/plugins/x/mnt report ",
		"link /k/plugins/x/link report ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("orphans:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
	if unattributed != 1 {
		t.Errorf("unattributed %d, want 1 (the foreign mapping no volume uses)", unattributed)
	}
}

// An item whose resource cannot be keyed (a session the resources do not
// list, a portal that does not parse) is reported, never released.
func TestClassifyUnkeyable(t *testing.T) {
	orphans, _ := Classify(&inventory.Report{Unexplained: []inventory.Item{
		{Kind: inventory.KindISCSISession, ID: "unknown-session"},
		{Kind: inventory.KindISCSIPortal, ID: "not a portal::"},
		{Kind: inventory.KindSMBMapping, ID: "not-a-share"},
		// A refused journal file is reported every round, never removed.
		{Kind: inventory.KindRefusedFile, ID: `C:\state\a.json`},
	}})
	if len(orphans) != 4 || orphans[3].Kind != inventory.KindRefusedFile {
		t.Fatalf("orphans %+v; want the refused file last", orphans)
	}
	for _, o := range orphans {
		if o.Action != ActionReport || o.Key != "" {
			t.Errorf("%s %s: action %s key %q, want report only", o.Kind, o.ID, o.Action, o.Key)
		}
	}
}

// fakePlugin answers the sweep from tables, by key.
type fakePlugin struct {
	rep      *inventory.Report
	stockErr error
	panicOn  string
	// unused and gone say whether a key is an orphan; errs fail it.
	unused map[string]bool
	errs   map[string]error

	mu    sync.Mutex
	calls []string // "release <key> <remove>", "gone <id> <remove>"
	// foreground counts the calls whose ctx was not background work
	// (host.Background).
	foreground int
}

func (f *fakePlugin) background(ctx context.Context) {
	if !host.IsBackground(ctx) {
		f.mu.Lock()
		f.foreground++
		f.mu.Unlock()
	}
}

func (f *fakePlugin) TakeStock(ctx context.Context) (*inventory.Report, error) {
	f.background(ctx)
	if f.stockErr != nil {
		return nil, f.stockErr
	}
	return f.rep, nil
}

func (f *fakePlugin) answer(what, key string, remove bool) (bool, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("%s %s %t", what, key, remove))
	f.mu.Unlock()
	if key == f.panicOn {
		panic("boom")
	}
	return f.unused[key], f.errs[key]
}

func (f *fakePlugin) ReleaseUnused(ctx context.Context, key string, remove bool) (bool, error) {
	f.background(ctx)
	return f.answer("release", key, remove)
}

func (f *fakePlugin) ReleaseGone(ctx context.Context, id string, remove bool) (bool, error) {
	f.background(ctx)
	return f.answer("gone", id, remove)
}

func newSweeper(t *testing.T, mode Mode, p Plugin) (*Sweeper, metrics.KubeRegistry) {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	s, err := New(Config{Mode: mode, Interval: time.Hour, Plugin: p, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func results(r Round) map[string]Result {
	out := map[string]Result{}
	for _, o := range r.Outcomes {
		out[string(o.Kind)+" "+o.ID] = o.Result
	}
	return out
}

func TestSweep(t *testing.T) {
	shareKey, _ := smb.ShareKey(share)
	targetKey := iscsi.TargetKey(iqn)
	portalKey := iscsi.PortalKey(host.Portal{Address: "10.0.0.2", Port: 3260})
	tests := []struct {
		name   string
		mode   Mode
		unused map[string]bool
		errs   map[string]error
		want   map[string]Result
		calls  []string
		// left is the orphans gauge by kind after the round.
		left map[inventory.Kind]int
		// removals is the removals counter, "kind/result".
		removals map[string]float64
	}{
		{
			name:   "report: confirmed orphans are found, nothing is removed",
			mode:   Report,
			unused: map[string]bool{"vol-gone": true, targetKey: true, shareKey: true, portalKey: true},
			want: map[string]Result{
				"journal-entry vol-gone": ResultFound, "iscsi-session " + sessionID: ResultFound,
				"iscsi-persistent-login " + iqn + "@" + portal: ResultFound, "smb-mapping " + share: ResultFound,
				"iscsi-portal 10.0.0.2:3260": ResultFound, "mount-point /k/plugins/x/mnt": ResultReported,
				"link /k/plugins/x/link": ResultReported,
			},
			calls: []string{"gone vol-gone false", "release " + targetKey + " false", "release " + shareKey + " false", "release " + portalKey + " false"},
			left: map[inventory.Kind]int{inventory.KindJournalEntry: 1, inventory.KindISCSISession: 1, inventory.KindISCSIPersistentLogin: 1,
				inventory.KindSMBMapping: 1, inventory.KindISCSIPortal: 1, inventory.KindMountPoint: 1, inventory.KindLink: 1},
			removals: map[string]float64{},
		},
		{
			name:   "report: what is in use under the lock is no orphan",
			mode:   Report,
			unused: map[string]bool{shareKey: true},
			want: map[string]Result{
				"journal-entry vol-gone": ResultInUse, "iscsi-session " + sessionID: ResultInUse,
				"iscsi-persistent-login " + iqn + "@" + portal: ResultInUse, "smb-mapping " + share: ResultFound,
				"iscsi-portal 10.0.0.2:3260": ResultInUse, "mount-point /k/plugins/x/mnt": ResultReported,
				"link /k/plugins/x/link": ResultReported,
			},
			calls:    []string{"gone vol-gone false", "release " + targetKey + " false", "release " + shareKey + " false", "release " + portalKey + " false"},
			left:     map[inventory.Kind]int{inventory.KindSMBMapping: 1, inventory.KindMountPoint: 1, inventory.KindLink: 1},
			removals: map[string]float64{},
		},
		{
			name:   "clean: removed, in use, failed",
			mode:   Clean,
			unused: map[string]bool{"vol-gone": true, targetKey: true, portalKey: false},
			errs:   map[string]error{shareKey: fmt.Errorf("unmap: %w", host.ErrAccessDenied)},
			want: map[string]Result{
				"journal-entry vol-gone": ResultRemoved, "iscsi-session " + sessionID: ResultRemoved,
				"iscsi-persistent-login " + iqn + "@" + portal: ResultRemoved, "smb-mapping " + share: ResultFailed,
				"iscsi-portal 10.0.0.2:3260": ResultInUse, "mount-point /k/plugins/x/mnt": ResultReported,
				"link /k/plugins/x/link": ResultReported,
			},
			calls: []string{"gone vol-gone true", "release " + targetKey + " true", "release " + shareKey + " true", "release " + portalKey + " true"},
			left:  map[inventory.Kind]int{inventory.KindSMBMapping: 1, inventory.KindMountPoint: 1, inventory.KindLink: 1},
			removals: map[string]float64{"journal-entry/removed": 1, "iscsi-session/removed": 1, "iscsi-persistent-login/removed": 1,
				"smb-mapping/failed": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePlugin{rep: report(), unused: tc.unused, errs: tc.errs}
			s, reg := newSweeper(t, tc.mode, f)
			r, err := s.Sweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := results(r); !equalMaps(got, tc.want) {
				t.Errorf("results %v, want %v", got, tc.want)
			}
			// One decision per key, in the order of Kinds.
			if !slices.Equal(f.calls, tc.calls) {
				t.Errorf("calls %q, want %q", f.calls, tc.calls)
			}
			// The whole round is background work: on Windows its host
			// calls run on workers of their own, never on one an RPC
			// waits for.
			if f.foreground != 0 {
				t.Errorf("%d calls of the round were not background work (host.Background)", f.foreground)
			}
			if r.Unattributed != 1 {
				t.Errorf("unattributed %d, want 1", r.Unattributed)
			}
			g := gauge(t, reg)
			for _, k := range Kinds {
				if g[string(k)] != float64(tc.left[k]) {
					t.Errorf("orphans{kind=%s} = %v, want %d", k, g[string(k)], tc.left[k])
				}
			}
			if got := counter(t, reg, "csi_windows_node_orphan_removals_total", "kind", "result"); !equalMaps(got, tc.removals) {
				t.Errorf("removals %v, want %v", got, tc.removals)
			}
			if got := counter(t, reg, "csi_windows_node_orphan_sweeps_total", "result"); !equalMaps(got, map[string]float64{"ok": 1}) {
				t.Errorf("rounds %v, want one ok", got)
			}
		})
	}
}

// With mode off no round runs: nothing is asked of the plugin.
func TestOff(t *testing.T) {
	f := &fakePlugin{stockErr: errors.New("must not be called")}
	s, _ := newSweeper(t, Off, f)
	if r, err := s.Sweep(context.Background()); err != nil || len(r.Outcomes) != 0 {
		t.Errorf("Sweep = %+v, %v; want nothing", r, err)
	}
	done := make(chan struct{})
	go func() { s.Run(context.Background()); close(done) }()
	<-done // Run returns at once with mode off
}

// A round that cannot take stock fails, is counted, and the sweeper goes
// on; one whose plugin panics fails too, without taking the process down;
// an incomplete inventory is counted as such.
func TestFailingRounds(t *testing.T) {
	f := &fakePlugin{stockErr: fmt.Errorf("list: %w", host.ErrAccessDenied)}
	s, reg := newSweeper(t, Clean, f)
	if _, err := s.Sweep(context.Background()); !errors.Is(err, host.ErrAccessDenied) {
		t.Errorf("Sweep error %v, want the inventory's", err)
	}
	f.stockErr, f.rep, f.panicOn = nil, report(), "vol-gone"
	if _, err := s.Sweep(context.Background()); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Sweep error %v, want the panic reported", err)
	}
	f.panicOn = ""
	f.rep.Incomplete = []string{"list SMB global mappings: access denied"}
	if r, err := s.Sweep(context.Background()); err != nil || len(r.Incomplete) != 1 {
		t.Errorf("Sweep = %v, %v; want the incomplete part named", r.Incomplete, err)
	}
	want := map[string]float64{"failed": 2, "incomplete": 1}
	if got := counter(t, reg, "csi_windows_node_orphan_sweeps_total", "result"); !equalMaps(got, want) {
		t.Errorf("rounds %v, want %v", got, want)
	}
}

func TestNewRejects(t *testing.T) {
	for _, c := range []Config{
		{Mode: "delete", Interval: time.Minute, Plugin: &fakePlugin{}, Registry: metrics.NewKubeRegistry()},
		{Mode: Report, Interval: 0, Plugin: &fakePlugin{}, Registry: metrics.NewKubeRegistry()},
		{Mode: Report, Interval: time.Minute, Registry: metrics.NewKubeRegistry()},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// blockingPlugin signals each TakeStock and then waits for ctx to end.
type blockingPlugin struct {
	fakePlugin
	started chan struct{}
}

func (b *blockingPlugin) TakeStock(ctx context.Context) (*inventory.Report, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// Run starts a round at once and returns once ctx ends, the round in
// progress having ended.
func TestRunStops(t *testing.T) {
	b := &blockingPlugin{started: make(chan struct{}, 1)}
	s, reg := newSweeper(t, Report, b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	<-b.started // the first round runs without waiting for the interval
	cancel()
	<-done
	if got := counter(t, reg, "csi_windows_node_orphan_sweeps_total", "result"); !equalMaps(got, map[string]float64{"failed": 1}) {
		t.Errorf("rounds %v, want the cancelled one failed", got)
	}
}

func equalMaps[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// gauge returns the orphans gauge by kind.
func gauge(t *testing.T, reg metrics.KubeRegistry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range family(t, reg, "csi_windows_node_orphans") {
		out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	return out
}

// counter returns a counter's series, by the values of labels joined
// with "/".
func counter(t *testing.T, reg metrics.KubeRegistry, name string, labels ...string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range family(t, reg, name) {
		vals := map[string]string{}
		for _, l := range m.GetLabel() {
			vals[l.GetName()] = l.GetValue()
		}
		var key []string
		for _, l := range labels {
			key = append(key, vals[l])
		}
		out[strings.Join(key, "/")] = m.GetCounter().GetValue()
	}
	return out
}

// family returns the series of one metric.
func family(t *testing.T, reg metrics.KubeRegistry, name string) []*dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}
