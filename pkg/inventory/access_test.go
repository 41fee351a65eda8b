//go:build linux

// Linux only: the simulated host runs only on Linux.

package inventory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
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
	// Someone puts the root of vol-lost back as it was formatted.
	for _, m := range n.Sim.Snapshot().Mounts {
		if m.Dir == simnode.StagingPath(n.Kubelet, "vol-lost") {
			if err := n.Sim.SetRootDACL(`\\?\Volume{`+m.Volume+`}\`, sim.DACLState{Entries: []sim.ACEState{
				{Type: 0, Flags: 3, Mask: 0x1f01ff, SID: "S-1-5-32-544"},
			}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	rep := take(t, base)
	got := map[string]inventory.Volume{}
	for _, v := range rep.Volumes {
		got[v.VolumeID] = v
	}
	kept, lost, none := got["vol-kept"], got["vol-lost"], got["vol-none"]
	if kept.State != inventory.StateHealthy || len(kept.Disk.RootAccess) != 1 ||
		kept.Disk.RootAccess[0] != (inventory.RootGrant{Entry: "ContainerUser:modify", SID: "S-1-5-93-2-2", OnRoot: true}) ||
		!strings.HasSuffix(kept.Disk.RootACL, "(A;OICI;0x1301bf;;;S-1-5-93-2-2)") {
		t.Errorf("vol-kept: %s, %+v, root %s", kept.State, kept.Disk.RootAccess, kept.Disk.RootACL)
	}
	if lost.State != inventory.StateDegraded || len(lost.Problems) != 1 || lost.Problems[0].Reason != "RootAccessMissing" ||
		lost.Disk.RootAccess[0].OnRoot || lost.Disk.RootACL != "(A;OICI;0x1f01ff;;;S-1-5-32-544)" {
		t.Errorf("vol-lost: %s, %+v, %+v, root %s", lost.State, lost.Problems, lost.Disk.RootAccess, lost.Disk.RootACL)
	}
	if none.State != inventory.StateHealthy || none.Disk.RootAccess != nil || !strings.Contains(none.Disk.RootACL, ";;;S-1-5-32-545)") {
		t.Errorf("vol-none: %s, %+v, root %s", none.State, none.Disk.RootAccess, none.Disk.RootACL)
	}
	if rep.StateDir == nil || rep.StateDir.Path == "" || rep.StateDir.ACL != "" || len(rep.StateDir.Refused) != 0 {
		t.Errorf("state directory: %+v", rep.StateDir)
	}
}
