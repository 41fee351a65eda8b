package secrets

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/test/harness/leakcheck"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// TestBinaryAtV10: the real plugin binary with --v=10 and /metrics, in
// both log formats; no secret in its stderr, in the errors and messages it
// returns, on /metrics, in any file below its kubelet and sim directories
// (the simulated host's state, the journal, its notes), or in what
// csi-windows-node diagnose prints (both outputs, and its own --v=10 log)
// while the SMB and the iSCSI volume are staged.
func TestBinaryAtV10(t *testing.T) {
	bin := testbin.Build(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) { binaryAtV10(t, bin, format) })
	}
}

func binaryAtV10(t *testing.T, bin, format string) {
	base := t.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := leakcheck.SetupHost(n.Sim); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: true, Args: []string{"--v=10", "--logging-format=" + format}})
	files, reports := 0, 0
	msgs := leakcheck.RunSteps(t, client{csi.NewNodeClient(p.Dial(t))}, p.Kubelet, func(step string) {
		files += leakcheck.CheckFiles(t, base)
		if step == "smb health" || step == "iscsi health" {
			for _, out := range []string{"table", "json"} {
				leakcheck.CheckNoLeak(t, "diagnose -o "+out+" after "+step, diagnose(t, bin, base, "-o", out, "--v=10", "--logging-format="+format))
				reports++
			}
		}
	})
	metrics := p.Get(t, "/metrics")
	if !strings.Contains(metrics, "csi_windows_node_host_calls_total") {
		t.Fatalf("/metrics lacks the host-call counters: the check would prove nothing:\n%s", metrics)
	}
	leakcheck.CheckNoLeak(t, "/metrics", metrics)
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("plugin did not stop cleanly: %v", err)
	}
	log := p.Log.String()
	if !strings.Contains(log, "Mapped share") || !strings.Contains(log, "Logging in to target") {
		t.Fatalf("the plugin's stderr lacks its -v=10 lines: the check would prove nothing:\n%s", log)
	}
	leakcheck.CheckNoLeak(t, "plugin stderr at --v=10", log)
	for _, m := range msgs {
		leakcheck.CheckNoLeak(t, "message", m)
	}
	files += leakcheck.CheckFiles(t, base)
	t.Logf("binary, %s logs: %d steps, %d bytes of --v=10 log, %d bytes of /metrics, %d messages, %d file reads, %d diagnose reports checked",
		format, len(leakcheck.Steps), len(log), len(metrics), len(msgs), files, reports)
}

// diagnose runs csi-windows-node diagnose on the node under base and
// returns its stdout and stderr together.
func diagnose(t *testing.T, bin, base string, args ...string) string {
	t.Helper()
	kubelet, simDir, _ := simnode.Dirs(base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"diagnose", "--host=sim", "--sim-dir=" + simDir,
		"--kubelet-dir=" + kubelet, "--driver-name=" + simnode.DriverName}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("diagnose %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// client adapts a csi.NodeClient to leakcheck.NodeAPI.
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
