// Package foreign runs csi-sanity against the real plugin binary on the
// simulated host with a controller that knows nothing of the simulation:
// dell/gocsi's mock controller (test/tools/gocsimock), as a vendor's
// controller would be. It creates volumes its own way (IDs "4", "5", ...,
// a "name" in the volume context), publishes them with a "device" the node
// does not know, and expands them in its own records only. The node
// finds each volume's disk through the stand-in for the controller side
// that --host=sim puts in front of the node (pkg/sim/controller): it names
// the disk (diskSerial, the volume ID, in publish_context) and attaches it,
// as ControllerPublishVolume would, and grows it first on expansion, as
// ControllerExpandVolume would. Every node spec csi-sanity runs must pass.
//
// Skipped here, as in test/binary/sanity: the controller specs (the
// controller is not ours), and the specs that need the node endpoint to
// advertise CONTROLLER_SERVICE, which a node plugin must not do.
package foreign

import (
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

func TestSanityWithAForeignController(t *testing.T) {
	bin := testbin.Build(t)
	mock := buildMock(t)
	base := t.TempDir()
	// The default auto-attached disk (1 GiB) is smaller than csi-sanity's
	// volumes (10 GiB) and their expansion (11 GiB): the node must grow
	// it, not find it large enough.
	p := testbin.Start(t, bin, testbin.Options{Dir: base, Args: []string{"--v=4"}})

	ctlSock := filepath.Join(base, "controller.sock")
	ctl := exec.Command(mock, ctlSock)
	ctlLog := &testbin.SyncBuffer{}
	ctl.Stdout, ctl.Stderr = ctlLog, ctlLog
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ctl.Process.Kill()
		_ = ctl.Wait()
	})
	waitForSocket(t, ctlSock, ctlLog)

	cfg := sanity.NewTestConfig()
	cfg.Address = p.Endpoint()
	cfg.ControllerAddress = "unix://" + ctlSock
	cfg.TargetPath = filepath.Join(p.Kubelet, "csi-mount")
	cfg.StagingPath = filepath.Join(p.Kubelet, "csi-staging")
	cfg.IdempotentCount = 3
	if err := flag.Set("ginkgo.skip", "Controller Server|GroupController"); err != nil {
		t.Fatal(err)
	}
	sanity.Test(t, cfg)
	log := p.Log.String()
	if t.Failed() {
		t.Logf("plugin log:\n%s\ncontroller log:\n%s", log, ctlLog.String())
	}
	if !regexp.MustCompile(`"Simulating the controller's expansion: growing the volume's disk before the node rescans".* from=1073741824 to=11811160064`).MatchString(log) {
		t.Errorf("the node expansion spec did not grow the simulated disk from 1 GiB to 11 GiB:\n%s", log)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("plugin did not stop cleanly on SIGTERM: %v\n%s", err, log)
	}
}

// buildMock builds test/tools/gocsimock into a temporary directory.
func buildMock(t *testing.T) string {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "gocsimock")
	cmd := exec.Command("go", "build", "-o", out, "./gocsimock")
	cmd.Dir = filepath.Join(root, "test", "tools")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the gocsi mock controller: %v\n%s", err, b)
	}
	return out
}

// waitForSocket waits until the controller answers on its socket or exits;
// the bound is a liveness bound only.
func waitForSocket(t *testing.T, path string, log *testbin.SyncBuffer) {
	t.Helper()
	ctx := testbin.Context(t, time.Minute)
	for {
		if c, err := net.Dial("unix", path); err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the mock controller does not answer on %s\n%s", path, log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
