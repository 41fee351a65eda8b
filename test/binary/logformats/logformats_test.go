package logformats

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/doctable"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// metricsDoc lists the log keys and the json format's fields.
const metricsDoc = "../../../docs/metrics.md"

const (
	logShareServer = "srv"
	logShare       = "data"
	logUser        = "alice"
	logPassword    = "LogFmt-Pw-7d21c9e4"
)

// runFormat runs the plugin binary with --logging-format=format at --v=5
// through disk and SMB volumes' lives (a refused stage included, whose
// line carries err) and returns everything it logged.
func runFormat(t *testing.T, bin, format string) string {
	t.Helper()
	base := t.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Sim.AddShare(sim.ShareSpec{Server: logShareServer, Share: logShare, Users: map[string]string{logUser: logPassword}}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(n.SimDir, "smb", logShareServer, logShare, "v"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	p := testbin.Start(t, bin, testbin.Options{Dir: base, Args: []string{"--logging-format=" + format, "--v=5"}})
	node := csi.NewNodeClient(p.Dial(t))
	ctx := testbin.Context(t, time.Minute)
	smbCtx := map[string]string{"source": "//" + logShareServer + "/" + logShare, "subDir": "v"}
	for _, v := range []struct {
		id      string
		vctx    map[string]string
		secrets map[string]string
		want    codes.Code
	}{
		{"vol-disk", nil, nil, codes.OK},
		{"vol-smb-refused", smbCtx, map[string]string{"username": logUser, "password": "wrong-" + logPassword}, codes.Unauthenticated},
		{"vol-smb", smbCtx, map[string]string{"username": logUser, "password": logPassword}, codes.OK},
	} {
		staging := simnode.StagingPath(p.Kubelet, v.id)
		target := simnode.TargetPath(p.Kubelet, "pod-1", v.id)
		for _, d := range []string{staging, filepath.Dir(target)} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				t.Fatal(err)
			}
		}
		_, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.id, StagingTargetPath: staging,
			VolumeCapability: simnode.MountCap, VolumeContext: v.vctx, Secrets: v.secrets})
		if status.Code(err) != v.want {
			t.Fatalf("stage %s: %v, want %v", v.id, err, v.want)
		}
		if err != nil {
			continue
		}
		calls := []func() error{
			func() error {
				_, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: v.id, StagingTargetPath: staging,
					TargetPath: target, VolumeCapability: simnode.MountCap})
				return err
			},
			func() error {
				_, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target})
				return err
			},
			func() error {
				_, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: staging})
				return err
			},
		}
		for _, call := range calls {
			if err := call(); err != nil {
				t.Fatalf("%s: %v", v.id, err)
			}
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("plugin did not stop cleanly: %v\n%s", err, p.Log.String())
	}
	return p.Log.String()
}

// TestLogFormats runs the real binary in both formats through the same
// RPCs: every JSON line is one valid JSON object with the envelope
// fields of docs/metrics.md; every key it carries is documented and is
// also a key of the text format's lines; no secret appears in either.
func TestLogFormats(t *testing.T) {
	bin := testbin.Build(t)
	text := runFormat(t, bin, "text")
	jsonLog := runFormat(t, bin, "json")

	keys := doctable.FirstColumn(t, metricsDoc, "key")
	fields := doctable.FirstColumn(t, metricsDoc, "field")
	keysInJSON := map[string]bool{}
	lines := 0
	for i, line := range strings.Split(strings.TrimSpace(jsonLog), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Errorf("json log line %d is not a JSON object: %v\n%s", i+1, err, line)
			continue
		}
		lines++
		for _, f := range []string{"ts", "caller", "msg", "driver"} {
			if _, ok := obj[f]; !ok {
				t.Errorf("json log line %d lacks %q: %s", i+1, f, line)
			}
		}
		_, info := obj["v"]
		_, isErr := obj["err"]
		if !info && !isErr {
			t.Errorf("json log line %d has neither v (info) nor err (error): %s", i+1, line)
		}
		for k := range obj {
			keysInJSON[k] = true
		}
	}
	if lines < 20 || !keysInJSON["volumeID"] || !keysInJSON["err"] || !keysInJSON["request"] {
		t.Fatalf("only %d json lines, keys %v: the --v=5 run did not log what it should; the check would prove nothing", lines, slices.Sorted(maps.Keys(keysInJSON)))
	}
	for _, k := range slices.Sorted(maps.Keys(keysInJSON)) {
		_, key := keys[k]
		_, field := fields[k]
		switch {
		case !key && !field:
			t.Errorf("json logs carry %q, which %s does not list", k, metricsDoc)
		case key && !strings.Contains(text, " "+k+"="):
			t.Errorf("json logs carry %q, which no line of the text format does", k)
		}
	}
	for _, f := range []string{"ts", "caller", "msg", "v", "err", "logger"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("%s does not list the json field %q", metricsDoc, f)
		}
	}
	for name, log := range map[string]string{"text": text, "json": jsonLog} {
		if strings.Contains(log, logPassword) {
			t.Errorf("the %s log shows the SMB password", name)
		}
	}
}
