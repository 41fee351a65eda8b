// Package disk runs csi-sanity in library mode against the real node
// service on the simulated host, with a minimal controller that attaches
// a disk per volume on ControllerPublishVolume and publishes its LUN under
// Azure Disk's "LUN" key; the node finds the disk with --disk-preset
// azure-disk. Every identity and node spec runs; the controller specs are
// skipped ("Controller Server"): this plugin is a node plugin and the
// controller here is only a test double.
package disk

import (
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/sanitytest"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// attacher plays a cloud attaching a disk at a LUN.
type attacher struct {
	sim  *sim.Sim
	luns sanitytest.LUNs
}

func (a *attacher) Attach(volumeID string) (map[string]string, error) {
	lun := a.luns.For(volumeID)
	for _, d := range a.sim.Snapshot().Disks {
		if d.Serial == volumeID {
			return map[string]string{"LUN": sanitytest.Itoa(lun)}, nil // already attached
		}
	}
	if _, err := a.sim.AttachDisk(sim.DiskSpec{Serial: volumeID, Adapter: 3, Target: 0, LUN: lun,
		Size: 2 << 30, Offline: true}); err != nil {
		return nil, err
	}
	return map[string]string{"LUN": sanitytest.Itoa(lun)}, nil
}

func (a *attacher) Detach(volumeID string) error {
	for _, d := range a.sim.Snapshot().Disks {
		if d.Serial == volumeID {
			return a.sim.DetachDisk(d.Number)
		}
	}
	return nil
}

func TestSanity(t *testing.T) {
	l := sanitytest.NewLibrary(t, contract.Options{Presets: []string{"azure-disk"}, RequirePrivacy: true})
	l.Run(t, &sanitytest.Controller{Attacher: &attacher{sim: l.Sim}}, nil, nil)

	// Everything sanity staged was unstaged: every data disk is offline.
	for _, left := range simnode.OnlineDisks(l.Sim.Snapshot()) {
		t.Errorf("%s after sanity", left)
	}
}
