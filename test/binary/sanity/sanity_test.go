// Package sanity runs csi-sanity against the real plugin binary on the
// simulated host, as an outsider sees it: the binary's own identity
// service, flags and socket handling, with a separate controller endpoint
// (the minimal in-test controller) because the plugin serves no controller.
// The controller only creates volumes, so the node finds each volume's disk
// through the stand-in for the controller side that --host=sim puts in
// front of the node (pkg/sim/controller): it names the disk by the volume
// ID and attaches it (1 GiB disks). This controller cannot grow disks
// either: NodeExpandVolume to csi-sanity's expansion size (the 10 GiB test
// size plus 1 GiB) works because the stand-in grows the disk first, as
// ControllerExpandVolume would. test/binary/foreign runs the same with a
// controller that is not ours.
//
// Skipped here and why: "should work" and "should be idempotent" need the
// node endpoint to advertise CONTROLLER_SERVICE, which a node plugin must
// not do; they run in library mode (test/system/sanity/disk). NodeGetStorageHealth
// is not offered (GET_STORAGE_HEALTH is not advertised).
package sanity

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"

	"github.com/wincsi/csi-windows-node/pkg/identity"
	"github.com/wincsi/csi-windows-node/test/harness/sanitytest"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

func TestSanityAgainstBinary(t *testing.T) {
	bin := testbin.Build(t)
	base := t.TempDir()
	p := testbin.Start(t, bin, testbin.Options{Dir: base, Args: []string{"--v=4"}})

	ids := identity.New("sim.csi.wincsi.io", "test", false)
	ids.SetReady(true)
	ctlEndpoint := sanitytest.Serve(t, filepath.Join(base, "controller.sock"), ids, &sanitytest.Controller{}, nil)

	cfg := sanity.NewTestConfig()
	cfg.Address = p.Endpoint()
	cfg.ControllerAddress = ctlEndpoint
	cfg.TargetPath = filepath.Join(p.Kubelet, "csi-mount")
	cfg.StagingPath = filepath.Join(p.Kubelet, "csi-staging")
	cfg.IdempotentCount = 3
	if err := flag.Set("ginkgo.skip", "Controller Server|GroupController"); err != nil {
		t.Fatal(err)
	}
	sanity.Test(t, cfg)
	if t.Failed() {
		t.Logf("plugin log:\n%s", p.Log.String())
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("plugin did not stop cleanly on SIGTERM: %v\n%s", err, p.Log.String())
	}
}
