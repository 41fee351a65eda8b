package secrets

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// TestBinaryAtV10: the real plugin binary with --v=10 and /metrics; no
// secret in its stderr, in the errors and messages it returns, on
// /metrics, or in any file below its kubelet and sim directories (the
// simulated host's state, the journal, its notes).
func TestBinaryAtV10(t *testing.T) {
	bin := testbin.Build(t)
	base := t.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := setupHost(n.Sim); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: true, Args: []string{"--v=10"}})
	files := 0
	msgs := runSteps(t, client{csi.NewNodeClient(p.Dial(t))}, p.Kubelet, func() { files += checkFiles(t, base) })
	metrics := p.Get(t, "/metrics")
	if !strings.Contains(metrics, "csi_windows_node_host_calls_total") {
		t.Fatalf("/metrics lacks the host-call counters: the check would prove nothing:\n%s", metrics)
	}
	checkNoLeak(t, "/metrics", metrics)
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("plugin did not stop cleanly: %v", err)
	}
	log := p.Log.String()
	if !strings.Contains(log, "Mapped share") || !strings.Contains(log, "Logging in to target") {
		t.Fatalf("the plugin's stderr lacks its -v=10 lines: the check would prove nothing:\n%s", log)
	}
	checkNoLeak(t, "plugin stderr at --v=10", log)
	for _, m := range msgs {
		checkNoLeak(t, "message", m)
	}
	files += checkFiles(t, base)
	t.Logf("binary: %d steps, %d bytes of --v=10 log, %d bytes of /metrics, %d messages, %d file reads checked",
		len(steps), len(log), len(metrics), len(msgs), files)
}

// client adapts a csi.NodeClient to nodeAPI.
type client struct{ c csi.NodeClient }

func (c client) NodeStageVolume(ctx context.Context, r *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	return c.c.NodeStageVolume(ctx, r)
}

func (c client) NodeUnstageVolume(ctx context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	return c.c.NodeUnstageVolume(ctx, r)
}

func (c client) NodeGetVolumeHealth(ctx context.Context, r *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	return c.c.NodeGetVolumeHealth(ctx, r)
}

func (c client) NodeGetVolumeStats(ctx context.Context, r *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	return c.c.NodeGetVolumeStats(ctx, r)
}
