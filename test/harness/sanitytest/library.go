package sanitytest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"sigs.k8s.io/yaml"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// Library is the plugin on a fresh simulated host, built as
// cmd/csi-windows-node builds it (test/harness/simnode, plugin.New), for
// csi-sanity in library mode. Auto-attach is off: the controller double
// attaches disks.
type Library struct {
	Sim     *sim.Sim
	Kubelet string
	Base    string
	Plugin  *plugin.Plugin
	Node    csi.NodeServer
}

// NewLibrary builds the plugin with the contract options.
func NewLibrary(t *testing.T, copts contract.Options) *Library {
	t.Helper()
	base := t.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base, NoAutoAttach: true, Contract: &copts,
		Backoff: backend.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Attempts: 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return &Library{Sim: n.Sim, Kubelet: n.Kubelet, Base: base, Plugin: n.Plugin, Node: n.Server}
}

// Run serves the node service with ctl as the controller and runs
// csi-sanity's identity and node specs (the controller specs are skipped:
// the controller is a test double). stageSecrets become the node-stage
// secrets of every request.
func (l *Library) Run(t *testing.T, ctl *Controller, params, stageSecrets map[string]string) {
	t.Helper()
	l.Plugin.Identity.SetReady(true)
	endpoint := Serve(t, filepath.Join(l.Base, "csi.sock"), WithController{IdentityServer: l.Plugin.Identity}, ctl, l.Node)

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
