//go:build linux

// Linux only: the simulated host runs only on Linux.

package sweep

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/sweep"
	"github.com/wincsi/csi-windows-node/test/harness/nodestates"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// open builds the plugin over the node under base with the flags.
func open(t *testing.T, base string, args ...string) *simnode.Node {
	t.Helper()
	n, err := simnode.Open(simnode.Options{Base: base, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// sweepRound runs one round and returns its outcomes as "kind id" ->
// result, and the host calls it made that change something.
func sweepRound(t *testing.T, n *simnode.Node) (map[string]sweep.Result, []string) {
	t.Helper()
	mark := n.Sim.Mark()
	r, err := n.Plugin.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mutating []string
	for _, op := range n.Sim.OpsSince(mark) {
		if !sim.ReadsOnly(op) {
			mutating = append(mutating, op)
		}
	}
	out := map[string]sweep.Result{}
	for _, o := range r.Outcomes {
		out[string(o.Kind)+" "+o.ID] = o.Result
		if o.Err != nil {
			t.Errorf("%s %s: %v", o.Kind, o.ID, o.Err)
		}
	}
	if len(r.Incomplete) > 0 {
		t.Errorf("incomplete round: %q", r.Incomplete)
	}
	return out, mutating
}

// expect fails the test unless the outcomes are exactly want.
func expect(t *testing.T, got map[string]sweep.Result, want map[string]sweep.Result) {
	t.Helper()
	var g, w []string
	for k, v := range got {
		g = append(g, k+" "+string(v))
	}
	for k, v := range want {
		w = append(w, k+" "+string(v))
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("outcomes:\n  got  %s\n  want %s", strings.Join(g, "\n       "), strings.Join(w, "\n       "))
	}
}

// state is what the node holds, as "kind id" strings: mappings, sessions
// (by target and portal), persistent logins, portals, journal entries and
// online data disks (by serial).
func state(t *testing.T, n *simnode.Node) map[string]bool {
	t.Helper()
	st := n.Sim.Snapshot()
	out := map[string]bool{}
	for _, m := range st.Mappings {
		out["mapping "+strings.ToLower(m.RemotePath)] = true
	}
	for _, s := range st.Sessions {
		out["session "+s.Target+"@"+s.Portal] = true
	}
	for _, l := range st.PersistentLogins {
		out["login "+l.Target+"@"+l.Portal] = true
	}
	for _, p := range st.Portals {
		out["portal "+p.Portal] = true
	}
	for _, d := range st.Disks {
		if !d.Boot && !d.System && !d.Offline {
			out["online "+d.Serial] = true
		}
	}
	for _, e := range n.Journal(t).List(context.Background()) {
		out["entry "+e.VolumeID] = true
	}
	return out
}

// diff returns what is in a and not in b.
func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// The node in every state nodestates builds: its orphans are journal
// entries whose staging path is gone (never unstaged), and what failed
// unstages left (a mapping, a target's session and persistent login, a
// portal). Report mode finds them and changes nothing; clean mode removes
// exactly them, leaving the foreign mapping, session and portal and every
// staged volume's resources; the next round finds only what it reports.
func TestNodeStates(t *testing.T) {
	base := t.TempDir()
	want := nodestates.Build(t, base)
	found := map[string]sweep.Result{}
	removed := map[string]sweep.Result{}
	for _, k := range want.Unexplained {
		kind := inventory.Kind(strings.SplitN(k, " ", 2)[0])
		switch kind {
		case inventory.KindMountPoint, inventory.KindLink:
			found[k], removed[k] = sweep.ResultReported, sweep.ResultReported
		default:
			found[k], removed[k] = sweep.ResultFound, sweep.ResultRemoved
		}
	}

	n := open(t, base, "--orphan-sweep=report")
	before := state(t, n)
	got, mutating := sweepRound(t, n)
	expect(t, got, found)
	if len(mutating) > 0 {
		t.Errorf("a report round changed the host: %q", mutating)
	}
	if after := state(t, n); len(diff(before, after))+len(diff(after, before)) > 0 {
		t.Errorf("a report round changed the node: gone %q, new %q", diff(before, after), diff(after, before))
	}
	_ = n.Close()

	n = open(t, base, "--orphan-sweep=clean")
	got, _ = sweepRound(t, n)
	expect(t, got, removed)
	after := state(t, n)
	wantGone := []string{
		"entry " + nodestates.DiskGone, "entry " + nodestates.ISCSIHalf,
		"mapping " + `\\srv3\half`,
		"session iqn.2024-01.io.wincsi.sim:half@10.0.3.1:3260", "login iqn.2024-01.io.wincsi.sim:half@10.0.3.1:3260",
		"portal 10.0.3.1:3260", "portal 10.0.4.1:3260",
		"online " + nodestates.DiskGone,
	}
	slices.Sort(wantGone)
	if gone := diff(before, after); !slices.Equal(gone, wantGone) {
		t.Errorf("clean round removed\n  %q\nwant\n  %q", gone, wantGone)
	}
	if added := diff(after, before); len(added) > 0 {
		t.Errorf("clean round added %q", added)
	}
	for _, f := range []string{"mapping " + `\\srv4\foreign`, "session iqn.2024-01.io.wincsi.sim:foreign@10.0.5.1:3260",
		"portal 10.0.5.1:3260", "mapping " + `\\srv1\data`, "session iqn.2024-01.io.wincsi.sim:ok@10.0.1.1:3260"} {
		if !after[f] {
			t.Errorf("%s was removed: it is foreign, or a staged volume uses it", f)
		}
	}

	// The next round: only what is never removed.
	got, mutating = sweepRound(t, n)
	next := map[string]sweep.Result{}
	for k, v := range removed {
		if v == sweep.ResultReported {
			next[k] = v
		}
	}
	expect(t, got, next)
	if len(mutating) > 0 {
		t.Errorf("a round with nothing to remove changed the host: %q", mutating)
	}
}

// The plugin reinstalled with an empty state directory: the mappings,
// sessions and portals left carry no record, so none is the plugin's;
// even in clean mode nothing is removed, and the staging mount points and
// links are reported.
func TestStateDirectoryLost(t *testing.T) {
	base := t.TempDir()
	nodestates.Build(t, base)
	n := open(t, base, "--orphan-sweep=clean", "--state-dir="+filepath.Join(base, "new-state"))
	before := state(t, n)
	mark := n.Sim.Mark()
	r, err := n.Plugin.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range n.Sim.OpsSince(mark) {
		if !sim.ReadsOnly(op) {
			t.Errorf("the round made host call %s", op)
		}
	}
	for _, o := range r.Outcomes {
		if o.Action != sweep.ActionReport || o.Result != sweep.ResultReported {
			t.Errorf("%s %s: action %s result %s, want reported only", o.Kind, o.ID, o.Action, o.Result)
		}
	}
	if len(r.Outcomes) == 0 {
		t.Error("the staging mount points and links are not reported")
	}
	// Mappings, sessions and portals: 3 mappings, 4 sessions, 5 portals
	// in nodestates, of which the staged volumes (unknown now) use none
	// by the records.
	if r.Unattributed == 0 {
		t.Error("no resource is counted as unattributed")
	}
	if after := state(t, n); len(diff(before, after)) > 0 {
		t.Errorf("removed %q", diff(before, after))
	}
}

// Scenario: kubelet never sends NodeUnstageVolume (the pods were deleted
// while the node was down, then kubelet's state was cleaned and the
// staging paths removed). Two volumes share an SMB share and two LUNs an
// iSCSI target; one of each is gone, the other still staged. Clean mode
// finishes the gone ones as NodeUnstageVolume would: the disk is taken
// offline, and the share's mapping and the target's session stay, as the
// staged volumes use them; an administrator's mapping of another share
// stays too.
func TestNeverUnstaged(t *testing.T) {
	base := t.TempDir()
	n := open(t, base, "--orphan-sweep=report")
	ctx := context.Background()
	check(t, n.Sim.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": "pw-alice-1"}}))
	check(t, n.Sim.AddShare(sim.ShareSpec{Server: "admin", Share: "tools", Users: map[string]string{"bob": "pw-bob-12"}}))
	for _, d := range []string{"a", "b"} {
		check(t, os.MkdirAll(filepath.Join(n.SimDir, "smb", "files", "data", d), 0o750))
	}
	portal := host.Portal{Address: "10.1.0.1", Port: 3260}
	iqn := "iqn.2024-01.io.wincsi.sim:pair"
	check(t, n.Sim.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{portal}, LUNs: []sim.LUNSpec{{LUN: 1}, {LUN: 2}}}))
	check(t, n.Sim.Host().SMB.Map(ctx, `\\admin\tools`, host.Credential{User: "bob", Password: host.NewSecret("pw-bob-12")}, false))

	smbCtx := func(dir string) map[string]string { return map[string]string{"source": "//files/data", "subDir": dir} }
	smbSecrets := map[string]string{"username": "alice", "password": "pw-alice-1"}
	iscsiCtx := func(lun string) map[string]string {
		return map[string]string{"targetPortal": portal.String(), "iqn": iqn, "lun": lun}
	}
	stage(t, n, "disk-gone", nil, nil)
	stage(t, n, "smb-gone", smbCtx("a"), smbSecrets)
	stage(t, n, "smb-kept", smbCtx("b"), smbSecrets)
	stage(t, n, "iscsi-gone", iscsiCtx("1"), nil)
	stage(t, n, "iscsi-kept", iscsiCtx("2"), nil)
	// kubelet's state cleaned: the staging paths of the gone volumes are
	// removed under the plugin (a mount point, a link).
	h := n.Sim.Host()
	for _, v := range []string{"disk-gone", "iscsi-gone"} {
		check(t, h.Volumes.Unmount(ctx, simnode.StagingPath(n.Kubelet, v)))
		check(t, os.Remove(simnode.StagingPath(n.Kubelet, v)))
	}
	check(t, os.Remove(simnode.StagingPath(n.Kubelet, "smb-gone")))

	before := state(t, n)
	got, mutating := sweepRound(t, n)
	gone := map[string]sweep.Result{"journal-entry disk-gone": sweep.ResultFound, "journal-entry smb-gone": sweep.ResultFound,
		"journal-entry iscsi-gone": sweep.ResultFound}
	expect(t, got, gone)
	if len(mutating) > 0 {
		t.Errorf("a report round changed the host: %q", mutating)
	}
	_ = n.Close()

	n = open(t, base, "--orphan-sweep=clean")
	got, _ = sweepRound(t, n)
	for k := range gone {
		gone[k] = sweep.ResultRemoved
	}
	expect(t, got, gone)
	after := state(t, n)
	wantGone := []string{"entry disk-gone", "entry iscsi-gone", "entry smb-gone", "online disk-gone", "online " + lunSerial(t, n, iqn, 1)}
	slices.Sort(wantGone)
	if g := diff(before, after); !slices.Equal(g, wantGone) {
		t.Errorf("clean round removed\n  %q\nwant\n  %q", g, wantGone)
	}
	for _, k := range []string{"mapping " + `\\files\data`, "mapping " + `\\admin\tools`, "session " + iqn + "@10.1.0.1:3260"} {
		if !after[k] {
			t.Errorf("%s was removed", k)
		}
	}
	// The staged volumes are still healthy, and their staging paths were
	// not touched; the gone ones were not recreated.
	rep, err := n.Plugin.TakeStock(ctx)
	check(t, err)
	for _, v := range rep.Volumes {
		if v.State != inventory.StateHealthy {
			t.Errorf("volume %s: %s %+v", v.VolumeID, v.State, v.Problems)
		}
	}
	for _, v := range []string{"disk-gone", "smb-gone", "iscsi-gone"} {
		if _, err := os.Lstat(simnode.StagingPath(n.Kubelet, v)); !os.IsNotExist(err) {
			t.Errorf("staging path of %s: %v, want it still gone", v, err)
		}
	}
	// The last users unstage as usual: nothing leaks but the
	// administrator's mapping.
	unstage(t, n, "smb-kept")
	unstage(t, n, "iscsi-kept")
	if left := simnode.Leftovers(n.Sim.Snapshot()); len(left) != 1 || !strings.Contains(left[0], "1 SMB mappings") {
		t.Errorf("left over: %q, want only the administrator's mapping", left)
	}
}

// lunSerial returns the serial of the disk of a LUN.
func lunSerial(t *testing.T, n *simnode.Node, iqn string, lun uint32) string {
	t.Helper()
	for _, d := range n.Sim.Snapshot().Disks {
		if d.Target == iqn && d.LUN == lun {
			return d.Serial
		}
	}
	t.Fatalf("no disk of LUN %d of %s", lun, iqn)
	return ""
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func stage(t *testing.T, n *simnode.Node, vol string, vctx, secrets map[string]string) {
	t.Helper()
	if err := n.Stage(context.Background(), vol, vctx, secrets); err != nil {
		t.Fatalf("stage %s: %v", vol, err)
	}
}

func unstage(t *testing.T, n *simnode.Node, vol string) {
	t.Helper()
	if err := n.Unstage(context.Background(), vol); err != nil {
		t.Fatalf("unstage %s: %v", vol, err)
	}
}

// A stage records its journal entry before its staging path holds
// anything, and kubelet may create the path late: while the stage runs,
// the entry looks gone. The sweep takes the volume's lock without waiting,
// finds the volume in flight and leaves it; the stage then completes.
func TestStageInFlightIsNotGone(t *testing.T) {
	base := t.TempDir()
	n := open(t, base, "--orphan-sweep=clean")
	ctx := context.Background()
	check(t, n.Sim.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": "pw-alice-1"}}))
	check(t, os.MkdirAll(filepath.Join(n.SimDir, "smb", "files", "data", "a"), 0o750))
	check(t, n.Sim.Faults().Add(sim.Rule{Op: sim.OpSMBMap, Hang: true}))
	p := simnode.StagingPath(n.Kubelet, "smb-a")
	check(t, os.MkdirAll(p, 0o750))
	staged := make(chan error, 1)
	go func() {
		_, err := n.Server.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "smb-a", StagingTargetPath: p,
			VolumeCapability: simnode.MountCap, VolumeContext: map[string]string{"source": "//files/data", "subDir": "a"},
			Secrets: map[string]string{"username": "alice", "password": "pw-alice-1"}})
		staged <- err
	}()
	for n.Sim.Faults().Hung(sim.OpSMBMap) == 0 {
		select {
		case err := <-staged:
			t.Fatalf("stage ended before mapping: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	// The staging path is not there yet, as if kubelet made it late.
	check(t, os.Remove(p))
	got, mutating := sweepRound(t, n)
	expect(t, got, map[string]sweep.Result{"journal-entry smb-a": sweep.ResultInUse})
	if len(mutating) > 0 {
		t.Errorf("the round changed the host: %q", mutating)
	}
	check(t, os.MkdirAll(p, 0o750))
	n.Sim.Faults().Clear()
	if err := <-staged; err != nil {
		t.Fatalf("stage: %v", err)
	}
	got, _ = sweepRound(t, n)
	expect(t, got, map[string]sweep.Result{})
	if _, ok := n.Journal(t).Get(ctx, "smb-a"); !ok {
		t.Error("the staged volume's journal entry is gone")
	}
}
