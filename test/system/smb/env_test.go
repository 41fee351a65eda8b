//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package smb_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Passwords of the simulated shares' users. They are long and distinctive
// so that a leak into a log or an error is found by a plain search.
const (
	alicePW  = "Alice-Pw-7f3c9e1d-ONE"
	alicePW2 = "Alice-Pw-2b8d4a6f-TWO"
	bobPW    = "Bob-Pw-5e0a1c9b-THREE"
	corpPW   = "Corp-Pw-9d2f6b3a-FOUR"
)

// allPasswords lists every password the tests use.
var allPasswords = []string{alicePW, alicePW2, bobPW, corpPW}

// env is one node service over a simulated host, with a stage journal and
// a kubelet directory, all under t.TempDir(). restart replaces all three
// in-memory parts as a plugin restart would.
type env struct {
	t            *testing.T
	ctx          context.Context
	log          klog.Logger // given to the sim; zero: klog.Background()
	simDir       string
	kubelet      string
	jdir         string
	keepMappings bool // --smb-keep-mappings

	sim    *sim.Sim
	ns     csi.NodeServer
	plugin *plugin.Plugin
}

// defaultShares are \\srv\data (alice, bob, CORP\alice), \\srv\other (bob),
// \\srv\plain (alice, no SMB encryption) and \\far\x (alice).
func defaultShares() []sim.ShareSpec {
	return []sim.ShareSpec{
		{Server: "srv", Share: "data", Capacity: 10 << 30,
			Users: map[string]string{"alice": alicePW, "bob": bobPW, `CORP\alice`: corpPW, "alice@corp.example": corpPW}},
		{Server: "srv", Share: "other", Users: map[string]string{"bob": bobPW}},
		{Server: "srv", Share: "plain", Users: map[string]string{"alice": alicePW}, NoEncryption: true},
		{Server: "far", Share: "x", Users: map[string]string{"alice": alicePW}},
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvCtx(t, context.Background(), klog.Logger{})
}

func newEnvCtx(t *testing.T, ctx context.Context, log klog.Logger) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{
		t: t, ctx: ctx, log: log,
		simDir:  filepath.Join(base, "sim"),
		kubelet: filepath.Join(base, "kubelet"),
		jdir:    filepath.Join(base, "state"),
	}
	e.start()
	for _, sp := range defaultShares() {
		if err := e.sim.AddShare(sp); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"v1", "v2", "v3", "pvc", `nested\deep`} {
		e.mkShareDir("srv", "data", d)
	}
	e.mkShareDir("srv", "other", "v2")
	e.mkShareDir("srv", "plain", "v1")
	e.mkShareDir("srv", "plain", "v2")
	e.mkShareDir("far", "x", "v1")
	t.Cleanup(func() {
		if err := e.sim.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// start opens the sim and the plugin (plugin.New) over it.
func (e *env) start() {
	e.t.Helper()
	s, err := sim.New(sim.Config{Dir: e.simDir, Logger: e.log})
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := plugin.New(plugin.Options{
		DriverName:      "smb.example.com",
		NodeID:          "node-1",
		KubeletDir:      e.kubelet,
		PathStyle:       winpath.POSIX,
		StateDir:        e.jdir,
		Contract:        contract.Options{RequirePrivacy: true},
		SMBKeepMappings: e.keepMappings,
	}, plugin.Host{Host: s.Host()})
	if err != nil {
		_ = s.Close() // the wiring error is the one to report
		e.t.Fatal(err)
	}
	e.sim, e.ns, e.plugin = s, p.Node(), p
}

// restart simulates a plugin restart: everything in memory is dropped.
func (e *env) restart() {
	e.t.Helper()
	if err := e.sim.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

func (e *env) mkShareDir(server, share, dir string) {
	e.t.Helper()
	p := filepath.Join(append([]string{e.simDir, "smb", server, share}, strings.Split(dir, `\`)...)...)
	if err := os.MkdirAll(p, 0o750); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) shareDir(server, share, dir string) string {
	return filepath.Join(append([]string{e.sim.Dir(), "smb", server, share}, strings.Split(dir, `\`)...)...)
}

func (e *env) stagingPath(id string) string {
	return filepath.Join(e.kubelet, "plugins", "kubernetes.io", "csi", "smb.example.com", id, "globalmount")
}

func (e *env) targetPath(id string) string {
	return filepath.Join(e.kubelet, "pods", "pod-"+id, "volumes", "kubernetes.io~csi", id, "mount")
}

// vol describes a stage request.
type vol struct {
	id      string
	source  string            // default //srv/data
	subDir  string            // default the volume ID
	ctx     map[string]string // extra volume_context keys
	secrets map[string]string // default alice
}

func alice() map[string]string { return map[string]string{"username": "alice", "password": alicePW} }
func bob() map[string]string   { return map[string]string{"username": "bob", "password": bobPW} }
func secret(u, p string) map[string]string {
	return map[string]string{"username": u, "password": p}
}

func capability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
}

func (e *env) stageReq(v vol) *csi.NodeStageVolumeRequest {
	vc := map[string]string{"source": "//srv/data", "subDir": v.id}
	if v.source != "" {
		vc["source"] = v.source
	}
	if v.subDir != "" {
		vc["subDir"] = v.subDir
	}
	if v.subDir == "-" {
		delete(vc, "subDir")
	}
	for k, val := range v.ctx {
		vc[k] = val
	}
	sec := v.secrets
	if sec == nil {
		sec = alice()
	}
	return &csi.NodeStageVolumeRequest{
		VolumeId:          v.id,
		StagingTargetPath: e.stagingPath(v.id),
		VolumeCapability:  capability(),
		VolumeContext:     vc,
		Secrets:           sec,
	}
}

// stage stages v, first creating the staging directory as kubelet does.
func (e *env) stage(v vol) error {
	e.t.Helper()
	if err := os.MkdirAll(e.stagingPath(v.id), 0o750); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.ns.NodeStageVolume(e.ctx, e.stageReq(v))
	return err
}

func (e *env) mustStage(v vol) {
	e.t.Helper()
	if err := e.stage(v); err != nil {
		e.t.Fatalf("stage %s: %v", v.id, err)
	}
}

func (e *env) unstage(id string) error {
	_, err := e.ns.NodeUnstageVolume(e.ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: e.stagingPath(id)})
	return err
}

func (e *env) mustUnstage(id string) {
	e.t.Helper()
	if err := e.unstage(id); err != nil {
		e.t.Fatalf("unstage %s: %v", id, err)
	}
}

func (e *env) publish(id string) error {
	_, err := e.ns.NodePublishVolume(e.ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          id,
		StagingTargetPath: e.stagingPath(id),
		TargetPath:        e.targetPath(id),
		VolumeCapability:  capability(),
	})
	return err
}

func (e *env) unpublish(id string) error {
	_, err := e.ns.NodeUnpublishVolume(e.ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: e.targetPath(id)})
	return err
}

func (e *env) health(id string) (*csi.VolumeHealth, error) {
	resp, err := e.ns.NodeGetVolumeHealth(e.ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id, StagingTargetPath: e.stagingPath(id)})
	if err != nil {
		return nil, err
	}
	return resp.GetVolumeHealth(), nil
}

// mappings returns the global mappings of the simulated host.
func (e *env) mappings() []sim.MappingState { return e.sim.Snapshot().Mappings }

// wantMappings checks the global mappings: remote path (case-insensitive)
// -> user, with status OK.
func (e *env) wantMappings(want map[string]string) {
	e.t.Helper()
	got := e.mappings()
	if len(got) != len(want) {
		e.t.Fatalf("mappings = %+v, want %v", got, want)
	}
	for _, m := range got {
		u, ok := want[strings.ToLower(m.RemotePath)]
		if !ok || !strings.EqualFold(u, m.User) || m.Status != host.MappingOK {
			e.t.Fatalf("mapping %+v, want one of %v with status OK", m, want)
		}
	}
}

// wantLink checks that the staging path of id links to the share directory.
func (e *env) wantLink(id, server, share, dir string) {
	e.t.Helper()
	got, err := filepath.EvalSymlinks(e.stagingPath(id))
	if err != nil {
		e.t.Fatalf("staging path of %s: %v", id, err)
	}
	if want := e.shareDir(server, share, dir); got != want {
		e.t.Fatalf("staging path of %s leads to %s, want %s", id, got, want)
	}
}

// wantEmptyDir checks that the staging path of id is an empty directory.
func (e *env) wantEmptyDir(id string) {
	e.t.Helper()
	fi, err := os.Lstat(e.stagingPath(id))
	if err != nil || !fi.IsDir() {
		e.t.Fatalf("staging path of %s: %v, %v; want an empty directory", id, fi, err)
	}
	ents, err := os.ReadDir(e.stagingPath(id))
	if err != nil || len(ents) != 0 {
		e.t.Fatalf("staging path of %s has %d entries (%v)", id, len(ents), err)
	}
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %s (%v), want %s", what, got, err, want)
	}
}

// journal reads the stage journal as diagnose does (journal.OpenReadOnly):
// a snapshot of what the plugin has written.
func (e *env) journal() *journal.Journal {
	e.t.Helper()
	j, err := journal.OpenReadOnly(e.jdir)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}
