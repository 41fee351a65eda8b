//go:build linux

// Linux only: the simulated host runs only on Linux.

package inventory_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// TestRootAccess: diagnose shows the grant a stage recorded and whether the
// volume's root still has it; a root whose ACL lost it is RootAccessMissing.
func TestRootAccess(t *testing.T) {
	base := t.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vctx := map[string]string{"volumeRootAccess": "ContainerUser:modify"}
	for _, vol := range []string{"vol-kept", "vol-lost", "vol-none"} {
		c := vctx
		if vol == "vol-none" {
			c = nil
		}
		if err := n.Stage(ctx, vol, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	// vol-ro is staged read-only once it has a file system (without the
	// grant, as another node or a restore may leave it): its root is left
	// as it is, on purpose.
	if err := n.Stage(ctx, "vol-ro", vctx, nil); err != nil {
		t.Fatal(err)
	}
	resetRoot(t, n, "vol-ro")
	if err := n.Unstage(ctx, "vol-ro"); err != nil {
		t.Fatal(err)
	}
	req := simnode.StageRequest(n.Kubelet, "vol-ro", vctx, nil)
	req.VolumeCapability = proto.Clone(req.VolumeCapability).(*csi.VolumeCapability)
	req.VolumeCapability.AccessMode = &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY}
	if _, err := n.Server.NodeStageVolume(ctx, req); err != nil {
		t.Fatal(err)
	}
	// Someone puts the root of vol-lost back as it was formatted.
	resetRoot(t, n, "vol-lost")
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	rep := take(t, base)
	got := map[string]inventory.Volume{}
	for _, v := range rep.Volumes {
		got[v.VolumeID] = v
	}
	kept, lost, none, ro := got["vol-kept"], got["vol-lost"], got["vol-none"], got["vol-ro"]
	if kept.State != inventory.StateHealthy || len(kept.Disk.RootAccess) != 1 ||
		kept.Disk.RootAccess[0] != (inventory.RootGrant{Entry: "ContainerUser:modify", SID: "S-1-5-93-2-2", Applied: true, OnRoot: true}) ||
		!strings.HasSuffix(kept.Disk.RootACL, "(A;OICI;0x1301bf;;;S-1-5-93-2-2)") {
		t.Errorf("vol-kept: %s, %+v, root %s", kept.State, kept.Disk.RootAccess, kept.Disk.RootACL)
	}
	if lost.State != inventory.StateDegraded || len(lost.Problems) != 1 || lost.Problems[0].Reason != "RootAccessMissing" ||
		lost.Disk.RootAccess[0].OnRoot || lost.Disk.RootACL != "(A;OICI;0x1f01ff;;;S-1-5-32-544)" {
		t.Errorf("vol-lost: %s, %+v, %+v, root %s", lost.State, lost.Problems, lost.Disk.RootAccess, lost.Disk.RootACL)
	}
	// Read-only: the grant is shown as not applied, which is no problem.
	if ro.State != inventory.StateHealthy || len(ro.Problems) != 0 || len(ro.Disk.RootAccess) != 1 ||
		ro.Disk.RootAccess[0] != (inventory.RootGrant{Entry: "ContainerUser:modify", SID: "S-1-5-93-2-2", Reason: "read-only stage: not applied"}) ||
		ro.Disk.RootACL != "(A;OICI;0x1f01ff;;;S-1-5-32-544)" {
		t.Errorf("vol-ro: %s, %+v, %+v, root %s", ro.State, ro.Problems, ro.Disk.RootAccess, ro.Disk.RootACL)
	}
	if none.State != inventory.StateHealthy || none.Disk.RootAccess != nil || !strings.Contains(none.Disk.RootACL, ";;;S-1-5-32-545)") {
		t.Errorf("vol-none: %s, %+v, root %s", none.State, none.Disk.RootAccess, none.Disk.RootACL)
	}
	if rep.StateDir == nil || rep.StateDir.Path == "" || rep.StateDir.ACL != "" || len(rep.StateDir.Refused) != 0 {
		t.Errorf("state directory: %+v", rep.StateDir)
	}
}

// resetRoot gives the root of the volume staged for vol a DACL of one
// entry, Administrators:(OI)(CI)(F).
func resetRoot(t *testing.T, n *simnode.Node, vol string) {
	t.Helper()
	for _, m := range n.Sim.Snapshot().Mounts {
		if m.Dir == simnode.StagingPath(n.Kubelet, vol) {
			if err := n.Sim.SetRootDACL(`\\?\Volume{`+m.Volume+`}\`, sim.DACLState{Entries: []sim.ACEState{
				{Type: 0, Flags: 3, Mask: 0x1f01ff, SID: "S-1-5-32-544"},
			}}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%s is not mounted", vol)
}

// noLookups is a host's Security that fails the test on any account lookup:
// a stock-take reads the SIDs its stages recorded.
type noLookups struct {
	host.Security
	t *testing.T
}

func (s noLookups) LookupAccountName(_ context.Context, name string) (string, error) {
	s.t.Errorf("the stock-take looked up account %q", name)
	return "", host.ErrUnreachable
}

// TestRootAccessRecordedSIDs: the stock-take judges a grant to an account
// name by the SID its stage resolved and recorded, without asking the host
// (it called LookupAccountName, a domain controller round trip, for every
// named grant of every volume in every round); an entry that records none
// (an earlier version's) is shown as not judged, never as missing.
func TestRootAccessRecordedSIDs(t *testing.T) {
	base := t.TempDir()
	const sid = "S-1-5-21-1004336348-1177238915-682003330-1107"
	cfg := filepath.Join(t.TempDir(), "sim-config.yaml")
	if err := os.WriteFile(cfg, []byte("accounts:\n  - name: CONTOSO\\app-writers\n    sid: "+sid+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := simnode.Open(simnode.Options{Base: base, Args: []string{"--sim-config=" + cfg}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vctx := map[string]string{"volumeRootAccess": `CONTOSO\app-writers:modify;ContainerUser:read`}
	for _, vol := range []string{"vol-named", "vol-old"} {
		if err := n.Stage(ctx, vol, vctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	e, ok := n.Journal(t).Get(ctx, "vol-named")
	if !ok || e.Attrs[backend.AttrRootAccessSIDs] != `{"CONTOSO\\app-writers":"`+sid+`"}` {
		t.Fatalf("journal entry %+v does not record the SID the name resolved to", e)
	}
	// A restage while the domain controller is down uses the recorded SID.
	if err := n.Sim.Faults().Add(sim.Rule{Op: sim.OpSecurityLookupAccountName, Err: "unreachable"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Stage(ctx, "vol-named", vctx, nil); err != nil {
		t.Fatalf("restage with the domain controller down: %v", err)
	}
	n.Sim.Faults().Clear()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// vol-old's entry as an earlier version wrote it: no SIDs.
	jr, err := journal.Open(n.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := jr.Get(ctx, "vol-old")
	delete(old.Attrs, backend.AttrRootAccessSIDs)
	if err := jr.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	rep := takeWith(t, base, func(h host.Host) host.Host {
		h.Security = noLookups{h.Security, t}
		return h
	})
	got := map[string]inventory.Volume{}
	for _, v := range rep.Volumes {
		got[v.VolumeID] = v
	}
	named, oldv := got["vol-named"], got["vol-old"]
	if named.State != inventory.StateHealthy || len(named.Disk.RootAccess) != 2 ||
		named.Disk.RootAccess[0] != (inventory.RootGrant{Entry: `CONTOSO\app-writers:modify`, SID: sid, Applied: true, OnRoot: true}) {
		t.Errorf("vol-named: %s, %+v", named.State, named.Disk.RootAccess)
	}
	if oldv.State != inventory.StateHealthy || len(oldv.Problems) != 0 || len(oldv.Disk.RootAccess) != 2 ||
		oldv.Disk.RootAccess[0] != (inventory.RootGrant{Entry: `CONTOSO\app-writers:modify`, Applied: true, Reason: inventory.ReasonSIDNotRecorded}) ||
		!oldv.Disk.RootAccess[1].OnRoot {
		t.Errorf("vol-old: %s, %+v, %+v", oldv.State, oldv.Problems, oldv.Disk.RootAccess)
	}
	for _, s := range rep.Incomplete {
		t.Errorf("incomplete: %s", s)
	}
}
