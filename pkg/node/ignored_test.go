//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package node_test

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// lines keeps what a logger at -v=2 writes.
type lines struct{ buf testbin.SyncBuffer }

func (l *lines) ctx() context.Context {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&l.buf)))
	return klog.NewContext(context.Background(), logger)
}

// with returns the lines logged so far that contain s.
func (l *lines) with(s string) []string {
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// TestUnknownKeysLoggedOncePerVolume: the keys the contract does not know
// are logged at -v=2, by name only, once per volume (a retried stage does
// not repeat them; another volume, or the same volume after its unstage,
// does).
func TestUnknownKeysLoggedOncePerVolume(t *testing.T) {
	e := newEnv(t)
	var l lines
	ctx := l.ctx()
	stage := func(vol string) {
		t.Helper()
		_, err := e.srv.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
			VolumeId: vol, StagingTargetPath: e.stagingDir(vol), VolumeCapability: snw,
			VolumeContext: map[string]string{"vendorZone": "value-never-logged", "storagePolicyX": "value-never-logged"},
		})
		mustOK(t, "stage "+vol, err)
	}
	const msg = "Ignoring volume parameters"
	stage("vol-1")
	stage("vol-1")
	if got := l.with(msg); len(got) != 1 || !strings.Contains(got[0], "storagePolicyX") || !strings.Contains(got[0], "vendorZone") {
		t.Fatalf("after two stages of one volume, lines %q; want one naming both keys", got)
	}
	stage("vol-2")
	if got := l.with(msg); len(got) != 2 {
		t.Fatalf("after a second volume, lines %q; want two", got)
	}
	_, err := e.srv.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: e.stagingDir("vol-1")})
	mustOK(t, "unstage", err)
	stage("vol-1")
	if got := l.with(msg); len(got) != 3 {
		t.Fatalf("after vol-1 staged again, lines %q; want three", got)
	}
	if leaked := l.with("value-never-logged"); len(leaked) > 0 {
		t.Errorf("values logged: %q", leaked)
	}
}
