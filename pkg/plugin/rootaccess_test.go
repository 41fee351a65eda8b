//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package plugin_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

const rootAccessIQN = "iqn.2026-01.io.wincsi:rootaccess"

// root returns the DACL of the root of the volume mounted at staging.
func (n *upgradeNode) root(staging string) sim.DACLState {
	n.t.Helper()
	st := n.sim.Snapshot()
	for _, m := range st.Mounts {
		if m.Dir != staging {
			continue
		}
		for _, d := range st.Disks {
			for _, p := range d.Partitions {
				if p.Volume != nil && p.Volume.GUID == m.Volume && p.Volume.Root != nil {
					return *p.Volume.Root
				}
			}
		}
	}
	n.t.Fatalf("no root DACL for the volume at %s", staging)
	return sim.DACLState{}
}

// TestRootAccessContainerUser is issue 22's done-when on the simulated
// host: a disk volume and an iSCSI volume staged with
// volumeRootAccess "ContainerUser:modify" carry exactly one entry for
// S-1-5-93-2-2 on their root, an allow entry inherited by files and
// directories below, with modify rights, after the stage, a restage and
// a restart of the plugin; the journal records the grant.
func TestRootAccessContainerUser(t *testing.T) {
	base := t.TempDir()
	n := &upgradeNode{t: t, kubelet: filepath.Join(base, "kubelet"), simDir: filepath.Join(base, "sim"), stateDir: filepath.Join(base, "state"),
		simConfig: sim.Config{Setup: &sim.Setup{Targets: []sim.TargetSpec{{
			IQN: rootAccessIQN, Portals: []host.Portal{{Address: "10.0.0.1", Port: 3260}}, LUNs: []sim.LUNSpec{{LUN: 1}},
		}}}}}
	n.start()
	defer func() { n.stop() }()
	// The disk the controller would attach, found by the volume ID as
	// serial (contract.VolumeIDDiskSerial).
	if _, err := n.sim.AttachDisk(sim.DiskSpec{Serial: "vol-disk", Adapter: 1, LUN: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	staging := func(id string) string {
		return filepath.Join(n.kubelet, "plugins", "kubernetes.io", "csi", "sim.csi.wincsi.io", id, "globalmount")
	}
	reqs := []*csi.NodeStageVolumeRequest{
		{VolumeId: "vol-disk", VolumeContext: map[string]string{"volumeRootAccess": "ContainerUser:modify"}},
		{VolumeId: "vol-iscsi", VolumeContext: map[string]string{"targetPortal": "10.0.0.1", "iqn": rootAccessIQN, "lun": "1",
			"volumeRootAccess": "ContainerUser:modify"}},
	}
	for _, r := range reqs {
		r.StagingTargetPath, r.VolumeCapability = staging(r.VolumeId), snw
	}
	want := sim.ACEState{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: 0x1301bf, SID: "S-1-5-93-2-2"}
	var first map[string][]sim.ACEState
	check := func(when string) {
		t.Helper()
		got := map[string][]sim.ACEState{}
		for _, r := range reqs {
			if _, err := n.p.Node().NodeStageVolume(ctx, r); err != nil {
				t.Fatalf("%s: stage %s: %v", when, r.VolumeId, err)
			}
			root := n.root(r.StagingTargetPath)
			var grants []sim.ACEState
			for _, e := range root.Entries {
				if e.SID == want.SID {
					grants = append(grants, e)
				}
			}
			if len(grants) != 1 || grants[0] != want {
				t.Fatalf("%s: %s: entries for ContainerUser %+v, want exactly %+v", when, r.VolumeId, grants, want)
			}
			got[r.VolumeId] = root.Entries
			e, ok := n.journal().Get(ctx, r.VolumeId)
			if !ok || e.Attrs[backend.AttrRootAccess] != "ContainerUser:modify" {
				t.Fatalf("%s: %s: journal entry %+v does not record the grant", when, r.VolumeId, e)
			}
		}
		if first == nil {
			first = got
			return
		}
		for id, entries := range got {
			if !slices.Equal(entries, first[id]) {
				t.Fatalf("%s: %s: root DACL changed from %+v to %+v", when, id, first[id], entries)
			}
		}
	}
	check("stage")
	check("restage")
	n.stop()
	n.start()
	check("restage after a restart")
}
