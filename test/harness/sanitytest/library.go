package sanitytest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"sigs.k8s.io/yaml"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
	"github.com/wincsi/csi-windows-node/pkg/identity"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Library is a node service with every backend on a fresh simulated host,
// the way cmd/csi-windows-node wires it, for csi-sanity in library mode.
type Library struct {
	Sim     *sim.Sim
	Kubelet string
	Base    string
	Node    *node.Server
}

// NewLibrary builds the node service with the contract options.
func NewLibrary(t *testing.T, copts contract.Options) *Library {
	t.Helper()
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
	fast := backend.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Bound: time.Second}
	disks := disk.New(h, disk.Options{OfflineOnUnstage: true, Backoff: fast, Notes: jr})
	ns := node.New(node.Config{
		NodeID: "sanity-node", Root: root, Host: h, Journal: jr, Contract: copts,
		Backends: map[contract.Kind]node.Backend{
			contract.KindDisk:  disks,
			contract.KindSMB:   smb.New(h, jr, smb.Options{Notes: jr}),
			contract.KindISCSI: iscsi.New(h, disks, jr, iscsi.Options{Backoff: fast}),
		},
	})
	return &Library{Sim: s, Kubelet: kubelet, Base: base, Node: ns}
}

// Run serves the node service with ctl as the controller and runs
// csi-sanity's identity and node specs (the controller specs are skipped:
// the controller is a test double). stageSecrets become the node-stage
// secrets of every request.
func (l *Library) Run(t *testing.T, ctl *Controller, params, stageSecrets map[string]string) {
	t.Helper()
	ids := identity.New("sim.csi.wincsi.io", "test", false)
	ids.SetReady(true)
	endpoint := Serve(t, filepath.Join(l.Base, "csi.sock"), WithController{IdentityServer: ids}, ctl, l.Node)

	cfg := sanity.NewTestConfig()
	cfg.Address = endpoint
	cfg.TargetPath = filepath.Join(l.Kubelet, "csi-mount")
	cfg.StagingPath = filepath.Join(l.Kubelet, "csi-staging")
	cfg.IdempotentCount = 3
	cfg.TestVolumeSize = 1 << 30
	cfg.TestVolumeParameters = params
	if len(stageSecrets) > 0 {
		b, err := yaml.Marshal(map[string]any{"NodeStageVolumeSecret": stageSecrets})
		if err != nil {
			t.Fatal(err)
		}
		cfg.SecretsFile = filepath.Join(l.Base, "secrets.yaml")
		if err := os.WriteFile(cfg.SecretsFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := flag.Set("ginkgo.skip", "Controller Server|GroupController"); err != nil {
		t.Fatal(err)
	}
	sanity.Test(t, cfg)
}
