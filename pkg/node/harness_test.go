//go:build linux

// Linux only: these tests run the node service on the simulated host,
// which runs only on Linux (POSIX paths; pkg/sim doc.go).

package node_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/sim/controller"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// env is the plugin on a simulated host, with a kubelet directory, built
// by plugin.New as the binary builds it, with the disk backend's waits
// shortened.
type env struct {
	t       *testing.T
	p       *plugin.Plugin
	srv     csi.NodeServer
	sim     *sim.Sim
	kubelet string
	simDir  string
	jdir    string
	// asOnWindows wires the node without the simulated host's stand-in
	// for the controller (pkg/sim/controller), which --host=sim wires:
	// no disk is attached or grown for a volume.
	asOnWindows bool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvAs(t, false)
}

// newEnvAs is newEnv, with the node wired as on Windows when asOnWindows:
// the test attaches the disks (attach) a controller would.
func newEnvAs(t *testing.T, asOnWindows bool) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{t: t, kubelet: filepath.Join(base, "kubelet"), simDir: filepath.Join(base, "sim"), jdir: filepath.Join(base, "journal"),
		asOnWindows: asOnWindows}
	if err := os.MkdirAll(e.kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	e.start()
	return e
}

// attach attaches the disk of a volume, whose serial is the volume ID, as
// a controller would.
func (e *env) attach(vol string) {
	e.t.Helper()
	if _, _, err := e.sim.AttachVolumeDisk(vol, 0); err != nil {
		e.t.Fatal(err)
	}
}

// start (re)creates the sim, journal and node service on the same
// directories: a plugin restart.
func (e *env) start() {
	t := e.t
	t.Helper()
	s, err := sim.New(sim.Config{Dir: e.simDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p, err := plugin.New(plugin.Options{
		DriverName:           "drv",
		NodeID:               "node-1",
		MaxVolumesPerNode:    16,
		Topology:             map[string]string{"topology.kubernetes.io/zone": "z1"},
		KubeletDir:           e.kubelet,
		PathStyle:            winpath.POSIX,
		StateDir:             e.jdir,
		Contract:             contract.Options{VolumeIDDisk: contract.VolumeIDDiskSerial, RequirePrivacy: true},
		OfflineDiskOnUnstage: true,
		Backoff:              backend.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 20},
	}, e.host(s))
	if err != nil {
		t.Fatal(err)
	}
	e.sim, e.p, e.srv = s, p, p.Node()
}

// host is the simulated host as the plugin takes it.
func (e *env) host(s *sim.Sim) plugin.Host {
	h := plugin.Host{Host: s.Host()}
	if !e.asOnWindows {
		h.Controller = controller.Wrap(s, controller.Options{Attach: true})
	}
	return h
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

// restart closes the sim and starts everything again on the same directories.
func (e *env) restart() {
	e.t.Helper()
	if err := e.sim.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

func (e *env) path(parts ...string) string {
	return filepath.Join(append([]string{e.kubelet}, parts...)...)
}

// stagingDir makes the staging directory kubelet would create.
func (e *env) stagingDir(vol string) string {
	p := e.path("plugins", "kubernetes.io", "csi", "drv", vol, "globalmount")
	if err := os.MkdirAll(p, 0o750); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// targetPath returns a publish target whose parent exists, as kubelet makes it.
func (e *env) targetPath(pod, vol string) string {
	p := e.path("pods", pod, "volumes", "kubernetes.io~csi", vol, "mount")
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode, fsType string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var snw = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "")

// blockSNW is a raw block capability, which no volume of the plugin takes.
var blockSNW = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

// wantBeforeHost checks that call fails with want and made no host call:
// requests are checked before anything is done on the host.
func (e *env) wantBeforeHost(t *testing.T, what string, want codes.Code, call func() error) {
	t.Helper()
	mark := e.sim.Mark()
	wantCode(t, what, call(), want)
	if ops := e.sim.OpsSince(mark); len(ops) != 0 {
		t.Fatalf("%s: host calls before the request was refused: %v", what, ops)
	}
}

func (e *env) stage(vol, staging string, vctx map[string]string) error {
	_, err := e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: vol, StagingTargetPath: staging, VolumeCapability: snw, VolumeContext: vctx,
	})
	return err
}

func (e *env) publish(vol, staging, target string, ro bool) error {
	_, err := e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: vol, StagingTargetPath: staging, TargetPath: target, VolumeCapability: snw, Readonly: ro,
	})
	return err
}

func (e *env) unpublish(vol, target string) error {
	_, err := e.srv.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target})
	return err
}

func (e *env) unstage(vol, staging string) error {
	_, err := e.srv.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging})
	return err
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
}
