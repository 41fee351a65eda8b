//go:build windows && integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wmiexec"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// rpcTimeout bounds each CSI call, like kubelet's operation timeouts; a
// format of a small VHDX takes seconds.
const rpcTimeout = 5 * time.Minute

// timingsEnv names the file that receives one JSON line per RPC, so that
// users can report real figures from their machines.
const timingsEnv = "CSI_WINDOWS_NODE_TIMINGS"

// requireHost skips the test unless the process is elevated: the tests
// attach VHDX disks (the virtual disk API, as selftest does: no Hyper-V
// role or module needed), mount volumes and take disks offline.
func requireHost(t *testing.T) {
	t.Helper()
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Skip("integration tests need an elevated (administrator) process: they attach VHDX disks, mount volumes and take disks offline")
	}
}

// powershell runs a constant script in test setup. Values reach the script
// only through environment variables (each name gets the CSI_IT_ prefix
// and is read as $Env:CSI_IT_NAME), never by formatting them into the
// script text.
func powershell(ctx context.Context, script string, env map[string]string) (string, error) {
	cmd := exec.CommandContext(ctx, "powershell.exe", "-NoProfile", "-NonInteractive", "-Command",
		"$ErrorActionPreference = 'Stop'; $ProgressPreference = 'SilentlyContinue'; "+script)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, "CSI_IT_"+k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), err
}

// runScript runs a constant setup, inspection or cleanup script with a
// deadline and returns its trimmed output; a failure is logged and
// returned, for the caller to decide whether it is fatal.
func runScript(t *testing.T, env map[string]string, text string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := powershell(ctx, text, env)
	if err != nil {
		t.Logf("PowerShell failed: %v", err)
	}
	return strings.TrimSpace(out), err
}

// randomHex returns n random bytes in hex, for names and passwords that no
// earlier run left behind.
func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func mustPowershell(t *testing.T, script string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := powershell(ctx, script, env)
	if err != nil {
		t.Fatalf("PowerShell setup failed: %v\nscript: %s\noutput: %s", err, script, out)
	}
	return strings.TrimSpace(out)
}

// vhd is a VHDX attached to this machine as a disk.
type vhd struct {
	path  string
	disk  uint32
	disks host.VirtualDisks
}

func (v *vhd) env() map[string]string {
	return map[string]string{"VHD": v.path, "DISK": strconv.FormatUint(uint64(v.disk), 10)}
}

// newVHD creates a dynamic VHDX of size bytes and attaches it (a blank,
// RAW disk) with the same code as csi-windows-node selftest
// (host.VirtualDisks over the executor: CreateVirtualDisk,
// AttachVirtualDisk). Cleanup detaches it; the file goes with the
// temporary directory.
func newVHD(t *testing.T, size int64) *vhd {
	t.Helper()
	exec, err := wmiexec.New(wmiexec.Options{})
	if err != nil {
		t.Fatalf("start the executor: %v", err)
	}
	v := &vhd{path: filepath.Join(t.TempDir(), "disk.vhdx"), disks: winhost.NewAdmin(exec).VirtualDisks}
	t.Cleanup(func() {
		if err := exec.Close(context.Background()); err != nil {
			t.Errorf("close the executor: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := v.disks.Create(ctx, v.path, uint64(size)); err != nil {
		t.Fatalf("create %s: %v", v.path, err)
	}
	if v.disk, err = v.disks.Attach(ctx, v.path); err != nil {
		t.Fatalf("attach %s: %v", v.path, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := v.disks.Detach(ctx, v.path); err != nil {
			t.Errorf("detach %s: %v", v.path, err)
		}
	})
	t.Logf("attached %s as disk %d", v.path, v.disk)
	return v
}

// resize grows the VHDX, attached, behind the plugin's back.
func (v *vhd) resize(t *testing.T, size int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := v.disks.Resize(ctx, v.path, uint64(size)); err != nil {
		t.Fatalf("resize %s to %d bytes: %v", v.path, size, err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// diskState reads IsOffline and IsReadOnly through PowerShell, independently
// of the plugin.
func diskState(t *testing.T, v *vhd) (offline, readOnly bool) {
	t.Helper()
	out := mustPowershell(t, `$d = Get-Disk -Number ([uint32]$Env:CSI_IT_DISK); "$($d.IsOffline) $($d.IsReadOnly)"`, v.env())
	f := strings.Fields(lastLine(out))
	if len(f) != 2 {
		t.Fatalf("Get-Disk said %q", out)
	}
	return f[0] == "True", f[1] == "True"
}

// winNode is the real Windows host as the plugin uses it: winhost over
// the WMI/Win32 executor, a journal in a temporary directory and a kubelet
// directory under C:\. Cleanup closes the executor and removes the
// directory, which a failed test keeps for inspection.
type winNode struct {
	exec     *wmiexec.Executor
	host     host.Host
	stateDir string
	kubelet  string
}

func newWinNode(t *testing.T) *winNode {
	t.Helper()
	exec, err := wmiexec.New(wmiexec.Options{})
	if err != nil {
		t.Fatalf("start the executor: %v", err)
	}
	base, err := os.MkdirTemp(`C:\`, "csi-windows-node-it-")
	if err != nil {
		t.Fatal(err)
	}
	kubelet := filepath.Join(base, "kubelet")
	if err := os.Mkdir(kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exec.Close(context.Background()); err != nil {
			t.Errorf("close the executor: %v", err)
		}
		if t.Failed() {
			t.Logf("kept %s for inspection", base)
			return
		}
		if err := os.RemoveAll(base); err != nil {
			t.Errorf("remove %s: %v", base, err)
		}
	})
	return &winNode{exec: exec, host: winhost.New(exec), stateDir: t.TempDir(), kubelet: kubelet}
}

// server is the node service of the plugin over w, built by plugin.New as
// the binary builds it (every backend, disks taken offline at unstage), with
// the given contract options.
func (w *winNode) server(t *testing.T, nodeID string, copts contract.Options) csi.NodeServer {
	t.Helper()
	p, err := plugin.New(plugin.Options{
		DriverName:           "integration.csi.wincsi.io",
		NodeID:               nodeID,
		KubeletDir:           w.kubelet,
		PathStyle:            winpath.Windows,
		StateDir:             w.stateDir,
		Contract:             copts,
		OfflineDiskOnUnstage: true,
	}, plugin.Host{Host: w.host, Healthy: w.exec.Healthy})
	if err != nil {
		t.Fatalf("build the plugin: %v", err)
	}
	return p.Node()
}

// harness is the node service with the disk backend over a winNode, whose
// RPCs record their timings.
type harness struct {
	t       *testing.T
	exec    *wmiexec.Executor
	node    csi.NodeServer
	kubelet string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	requireHost(t)
	w := newWinNode(t)
	ns := w.server(t, "integration", contract.Options{})
	return &harness{t: t, exec: w.exec, node: ns, kubelet: w.kubelet}
}

// volume is one CSI volume of a test: its ID, context and the paths
// kubelet would use.
type volume struct {
	id      string
	context map[string]string
	staging string
	target  string
}

// newVolume makes the paths kubelet would pass, creating their parents as
// kubelet does.
func (h *harness) newVolume(name string, v *vhd) *volume {
	h.t.Helper()
	vol := &volume{
		id:      "it-" + name,
		context: map[string]string{"diskNumber": strconv.FormatUint(uint64(v.disk), 10)},
		staging: filepath.Join(h.kubelet, `plugins\kubernetes.io\csi\disk.csi.wincsi.io`, name, "globalmount"),
		target:  filepath.Join(h.kubelet, `pods\11111111-2222-3333-4444-555555555555\volumes\kubernetes.io~csi`, name, "mount"),
	}
	for _, p := range []string{vol.staging, vol.target} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
	return vol
}

func capability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ntfs"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// call runs one RPC with a deadline and records its timing.
func (h *harness) call(rpc string, fn func(ctx context.Context) error) error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	before := h.exec.Stats()
	start := time.Now()
	err := fn(ctx)
	elapsed := time.Since(start)
	after := h.exec.Stats()
	rec := timing{
		Test:          h.t.Name(),
		RPC:           rpc,
		DurationMs:    float64(elapsed.Microseconds()) / 1000,
		WMIRoundTrips: after.WMI.ByKind["wmi"] - before.WMI.ByKind["wmi"],
		Win32Calls:    after.Win32.ByKind["win32"] - before.Win32.ByKind["win32"],
		OK:            err == nil,
	}
	h.t.Logf("%s: %.1f ms, %d WMI round trips, %d Win32 calls, err=%v", rpc, rec.DurationMs, rec.WMIRoundTrips, rec.Win32Calls, err)
	recordTiming(h.t, rec)
	return err
}

func (h *harness) stage(v *volume) error {
	return h.call("NodeStageVolume", func(ctx context.Context) error {
		_, err := h.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
			VolumeId: v.id, StagingTargetPath: v.staging, VolumeCapability: capability(), VolumeContext: v.context,
		})
		return err
	})
}

func (h *harness) unstage(v *volume) error {
	return h.call("NodeUnstageVolume", func(ctx context.Context) error {
		_, err := h.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging})
		return err
	})
}

func (h *harness) publish(v *volume) error {
	return h.call("NodePublishVolume", func(ctx context.Context) error {
		_, err := h.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
			VolumeId: v.id, StagingTargetPath: v.staging, TargetPath: v.target,
			VolumeCapability: capability(), VolumeContext: v.context,
		})
		return err
	})
}

func (h *harness) unpublish(v *volume) error {
	return h.call("NodeUnpublishVolume", func(ctx context.Context) error {
		_, err := h.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target})
		return err
	})
}

func (h *harness) stats(v *volume, path string) (*csi.NodeGetVolumeStatsResponse, error) {
	var resp *csi.NodeGetVolumeStatsResponse
	err := h.call("NodeGetVolumeStats", func(ctx context.Context) error {
		var err error
		resp, err = h.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: path})
		return err
	})
	return resp, err
}

func (h *harness) expand(v *volume, required int64) (int64, error) {
	var capacity int64
	err := h.call("NodeExpandVolume", func(ctx context.Context) error {
		resp, err := h.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
			VolumeId: v.id, VolumePath: v.staging, StagingTargetPath: v.staging,
			CapacityRange: &csi.CapacityRange{RequiredBytes: required},
		})
		if err == nil {
			capacity = resp.GetCapacityBytes()
		}
		return err
	})
	return capacity, err
}

func (h *harness) health(v *volume) (*csi.VolumeHealth, error) {
	var out *csi.VolumeHealth
	err := h.call("NodeGetVolumeHealth", func(ctx context.Context) error {
		resp, err := h.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.id, StagingTargetPath: v.staging})
		if err == nil {
			out = resp.GetVolumeHealth()
		}
		return err
	})
	return out, err
}

// mustOK fails the test now on an RPC error.
func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// timing is one line of the timings file.
type timing struct {
	Test          string  `json:"test"`
	RPC           string  `json:"rpc"`
	DurationMs    float64 `json:"durationMs"`
	WMIRoundTrips uint64  `json:"wmiRoundTrips"`
	Win32Calls    uint64  `json:"win32Calls"`
	OK            bool    `json:"ok"`
}

var timingsMu sync.Mutex

// recordTiming appends rec to the file named by CSI_WINDOWS_NODE_TIMINGS,
// when it is set.
func recordTiming(t *testing.T, rec timing) {
	path := os.Getenv(timingsEnv)
	if path == "" {
		return
	}
	line, err := json.Marshal(rec)
	if err != nil {
		t.Errorf("encode timing: %v", err)
		return
	}
	timingsMu.Lock()
	defer timingsMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("%s: %v", timingsEnv, err)
		return
	}
	if _, err := fmt.Fprintf(f, "%s\n", line); err != nil {
		t.Errorf("%s: %v", timingsEnv, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("%s: %v", timingsEnv, err)
	}
}
