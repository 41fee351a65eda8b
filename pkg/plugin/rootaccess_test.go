//go:build linux

package plugin_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

const rootAccessIQN = "iqn.2026-01.io.wincsi:rootaccess"

// rootAccessNode is the plugin on a simulated host with an iSCSI target
// and auto-attached disks, restartable on the same directories.
type rootAccessNode struct {
	t                         *testing.T
	kubelet, simDir, stateDir string
	sim                       *sim.Sim
	p                         *plugin.Plugin
}

func (n *rootAccessNode) start() {
	n.t.Helper()
	s, err := sim.New(sim.Config{Dir: n.simDir, AutoAttach: true, Setup: &sim.Setup{Targets: []sim.TargetSpec{{
		IQN: rootAccessIQN, Portals: []host.Portal{{Address: "10.0.0.1", Port: 3260}}, LUNs: []sim.LUNSpec{{LUN: 1}},
	}}}})
	if err != nil {
		n.t.Fatal(err)
	}
	p, err := plugin.New(plugin.Options{
		DriverName: "sim.csi.wincsi.io", NodeID: "node-1",
		KubeletDir: n.kubelet, PathStyle: winpath.POSIX, StateDir: n.stateDir,
		Contract: contract.Options{VolumeIDDisk: contract.VolumeIDDiskSerial},
		Backoff:  backend.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 20},
	}, plugin.Host{Host: s.Host(), ForVolume: sim.WithVolume})
	if err != nil {
		_ = s.Close()
		n.t.Fatal(err)
	}
	n.sim, n.p = s, p
}

func (n *rootAccessNode) stop() {
	n.t.Helper()
	if err := n.sim.Close(); err != nil {
		n.t.Fatal(err)
	}
}

// root returns the DACL of the root of the volume mounted at staging.
func (n *rootAccessNode) root(staging string) sim.DACLState {
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
	n := &rootAccessNode{t: t, kubelet: filepath.Join(base, "kubelet"), simDir: filepath.Join(base, "sim"), stateDir: filepath.Join(base, "state")}
	n.start()
	defer func() { n.stop() }()
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
			if _, err := n.p.Node.NodeStageVolume(ctx, r); err != nil {
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
			e, ok := n.p.Journal.Get(ctx, r.VolumeId)
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
