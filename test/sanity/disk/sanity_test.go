// Package disk runs csi-sanity in library mode against the real node
// service on the simulated host, with a minimal controller that attaches
// a disk per volume on ControllerPublishVolume and publishes its LUN under
// Azure Disk's "LUN" key; the node finds the disk with --disk-preset
// azure-disk. Every identity and node spec runs; the controller specs are
// skipped ("Controller Server"): this plugin is a node plugin and the
// controller here is only a test double.
package disk

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
	"github.com/wincsi/csi-windows-node/pkg/identity"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
	"github.com/wincsi/csi-windows-node/test/sanity/sanitytest"
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
	base := t.TempDir()
	kubelet := filepath.Join(base, "kubelet")
	if err := os.MkdirAll(kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Dir: filepath.Join(base, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	jr, err := journal.Open(filepath.Join(base, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := winpath.NewRoot(kubelet, winpath.POSIX)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Host()
	ns := node.New(node.Config{
		NodeID: "sanity-node", Root: root, Host: h, Journal: jr,
		Contract: contract.Options{Presets: []string{"azure-disk"}, RequirePrivacy: true},
		Backends: map[contract.Kind]node.Backend{contract.KindDisk: disk.New(h, disk.Options{
			OfflineOnUnstage: true,
			Backoff:          backend.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Bound: time.Second},
		})},
	})
	ids := identity.New("sim.csi.wincsi.io", "test", false)
	ids.SetReady(true)
	ctl := &sanitytest.Controller{Attacher: &attacher{sim: s}}
	endpoint := sanitytest.Serve(t, filepath.Join(base, "csi.sock"), sanitytest.WithController{IdentityServer: ids}, ctl, ns)

	cfg := sanity.NewTestConfig()
	cfg.Address = endpoint
	cfg.TargetPath = filepath.Join(kubelet, "csi-mount")
	cfg.StagingPath = filepath.Join(kubelet, "csi-staging")
	cfg.IdempotentCount = 3
	cfg.TestVolumeSize = 1 << 30
	if err := flag.Set("ginkgo.skip", "Controller Server|GroupController"); err != nil {
		t.Fatal(err)
	}
	sanity.Test(t, cfg)

	// Everything sanity staged was unstaged: no mount point is left.
	for _, d := range s.Snapshot().Disks {
		if !d.Boot && !d.Offline {
			t.Errorf("disk %d (%s) left online after sanity", d.Number, d.Serial)
		}
	}
}
