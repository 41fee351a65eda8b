//go:build linux

// Linux only: these tests run the node service on the simulated host,
// which runs only on Linux (POSIX paths; pkg/sim doc.go).

package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

func TestDiskLifecycleKeepsData(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-a")
	target := e.targetPath("pod-1", "pv-a")

	mustOK(t, "stage", e.stage("vol-a", staging, nil))
	mustOK(t, "publish", e.publish("vol-a", staging, target, false))
	if err := os.WriteFile(filepath.Join(target, "hello.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatalf("write through the published path: %v", err)
	}
	mustOK(t, "unpublish", e.unpublish("vol-a", target))
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("target path still exists after unpublish: %v", err)
	}
	mustOK(t, "unstage", e.unstage("vol-a", staging))
	if fi, err := os.Lstat(staging); err != nil || !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("staging path after unstage: %v %v, want an empty directory", fi, err)
	}
	snap := e.sim.Snapshot()
	for _, d := range snap.Disks {
		if d.Serial == "vol-a" && !d.Offline {
			t.Fatal("disk not offlined at unstage")
		}
	}

	// Restage after a plugin restart and read the file back.
	e.restart()
	mustOK(t, "restage", e.stage("vol-a", staging, nil))
	target2 := e.targetPath("pod-2", "pv-a")
	mustOK(t, "republish", e.publish("vol-a", staging, target2, false))
	b, err := os.ReadFile(filepath.Join(target2, "hello.txt"))
	if err != nil || string(b) != "kept" {
		t.Fatalf("read back = %q, %v", b, err)
	}
}

func TestStageIdempotentAndCheap(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-b")
	mustOK(t, "stage", e.stage("vol-b", staging, nil))
	mark := e.sim.Mark()
	mustOK(t, "stage again", e.stage("vol-b", staging, nil))
	ops := e.sim.OpsSince(mark)
	// files.Stat + disks.List + volumes.DiskNumber: no preparation repeated.
	if len(ops) > 3 {
		t.Fatalf("repeated stage made %d host calls: %v", len(ops), ops)
	}
	for _, op := range ops {
		if strings.HasPrefix(op, "disks.Set") || op == sim.OpVolumesFormat || op == sim.OpVolumesMount {
			t.Fatalf("repeated stage redid host work: %v", ops)
		}
	}

	// An incompatible repeat gets AlreadyExists (CSI spec, NodeStageVolume).
	_, err := e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: "vol-b", StagingTargetPath: staging,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "refs"),
	})
	wantCode(t, "stage with another fsType", err, codes.AlreadyExists)

	// Staged at another path while the first stage is live: FailedPrecondition.
	other := e.stagingDir("vol-b-other")
	wantCode(t, "stage elsewhere", e.stage("vol-b", other, nil), codes.FailedPrecondition)
}

func TestPublishRules(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-c")
	mustOK(t, "stage", e.stage("vol-c", staging, nil))
	t1 := e.targetPath("p1", "pv-c")
	// kubelet may pre-create the target directory: it is replaced by the link.
	if err := os.Mkdir(t1, 0o750); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "publish", e.publish("vol-c", staging, t1, false))
	mustOK(t, "publish again", e.publish("vol-c", staging, t1, false))
	wantCode(t, "publish read-only at the same target", e.publish("vol-c", staging, t1, true), codes.AlreadyExists)

	// SINGLE_NODE_SINGLE_WRITER allows one target only (csi-sanity spec).
	t2 := e.targetPath("p2", "pv-c")
	_, err := e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: "vol-c", StagingTargetPath: staging, TargetPath: t2,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, ""),
	})
	wantCode(t, "second target with SINGLE_NODE_SINGLE_WRITER", err, codes.FailedPrecondition)

	// A non-empty directory at the target is never removed.
	t3 := e.targetPath("p3", "pv-c")
	if err := os.MkdirAll(filepath.Join(t3, "data"), 0o750); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "publish over a non-empty directory", e.publish("vol-c", staging, t3, false), codes.FailedPrecondition)
	if _, err := os.Stat(filepath.Join(t3, "data")); err != nil {
		t.Fatalf("data at the target was touched: %v", err)
	}
	wantCode(t, "unpublish of a non-empty directory", e.unpublish("vol-c", t3), codes.FailedPrecondition)

	mustOK(t, "unpublish", e.unpublish("vol-c", t1))
	mustOK(t, "unpublish again", e.unpublish("vol-c", t1))

	// Publishing a volume that is not staged fails.
	wantCode(t, "publish unstaged", e.publish("vol-none", e.stagingDir("vol-none"), e.targetPath("p4", "pv-none"), false),
		codes.FailedPrecondition)
}

func TestValidationBeforeHostCalls(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-v")
	outside := t.TempDir()
	escape := e.path("pods", "evil")
	if err := os.MkdirAll(filepath.Dir(escape), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  *csi.NodeStageVolumeRequest
	}{
		{"no volume id", &csi.NodeStageVolumeRequest{StagingTargetPath: staging, VolumeCapability: snw}},
		{"volume id of 4097 bytes", &csi.NodeStageVolumeRequest{VolumeId: strings.Repeat("v", 4097), StagingTargetPath: staging, VolumeCapability: snw}},
		{"no staging path", &csi.NodeStageVolumeRequest{VolumeId: "v", VolumeCapability: snw}},
		{"no capability", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging}},
		{"block", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging, VolumeCapability: blockSNW}},
		{"ext4", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging,
			VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ext4")}},
		{"bad lun", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging, VolumeCapability: snw,
			VolumeContext: map[string]string{"diskLUN": "x"}}},
		{"relative path", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: "rel/path", VolumeCapability: snw}},
		{"traversal", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: e.path("a", "..", "..", "etc"), VolumeCapability: snw}},
		{"backslash traversal", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: e.kubelet + `\..\..\etc`, VolumeCapability: snw}},
		{"outside root", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: outside, VolumeCapability: snw}},
		{"unc", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: `\\server\share\x`, VolumeCapability: snw}},
		{"device path", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: `\\?\GLOBALROOT\Device\X`, VolumeCapability: snw}},
		{"link escaping root", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: filepath.Join(escape, "globalmount"), VolumeCapability: snw}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.wantBeforeHost(t, tt.name, codes.InvalidArgument, func() error {
				_, err := e.srv.NodeStageVolume(context.Background(), tt.req)
				return err
			})
		})
	}
}

// TestPublishRequestCodes checks NodePublishVolume's answers to a request
// missing a field, before any host call: a required field is
// InvalidArgument (CSI spec, Error Scheme), a missing staging_target_path
// of a plugin with STAGE_UNSTAGE_VOLUME is FailedPrecondition (CSI spec,
// NodePublishVolume Errors, "Staging target path not set").
func TestPublishRequestCodes(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-q")
	target := e.targetPath("p1", "pv-q")
	tests := []struct {
		name string
		req  *csi.NodePublishVolumeRequest
		want codes.Code
	}{
		{"no volume id", &csi.NodePublishVolumeRequest{StagingTargetPath: staging, TargetPath: target, VolumeCapability: snw}, codes.InvalidArgument},
		{"no target path", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", StagingTargetPath: staging, VolumeCapability: snw}, codes.InvalidArgument},
		{"no capability", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", StagingTargetPath: staging, TargetPath: target}, codes.InvalidArgument},
		// csi-sanity sends no staging path with no capability and wants InvalidArgument.
		{"no capability, no staging path", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", TargetPath: target}, codes.InvalidArgument},
		{"block", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", StagingTargetPath: staging, TargetPath: target, VolumeCapability: blockSNW}, codes.InvalidArgument},
		{"no staging path", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", TargetPath: target, VolumeCapability: snw}, codes.FailedPrecondition},
		{"no staging path, read-only", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", TargetPath: target, VolumeCapability: snw, Readonly: true}, codes.FailedPrecondition},
		{"ephemeral inline volume", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", StagingTargetPath: staging, TargetPath: target, VolumeCapability: snw,
			VolumeContext: map[string]string{"csi.storage.k8s.io/ephemeral": "true"}}, codes.InvalidArgument},
		{"access mode UNKNOWN", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", StagingTargetPath: staging, TargetPath: target,
			VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_UNKNOWN, "")}, codes.InvalidArgument},
		{"access mode 99", &csi.NodePublishVolumeRequest{VolumeId: "vol-q", StagingTargetPath: staging, TargetPath: target,
			VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_Mode(99), "")}, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.wantBeforeHost(t, tt.name, tt.want, func() error {
				_, err := e.srv.NodePublishVolume(context.Background(), tt.req)
				return err
			})
		})
	}
}

// TestPublishPersistentVolumeContext: kubelet sets
// csi.storage.k8s.io/ephemeral=false on a persistent volume's publish when
// the CSIDriver asks for pod info; that is no refusal. The volume is not
// staged, so the answer is FailedPrecondition, not InvalidArgument.
func TestPublishPersistentVolumeContext(t *testing.T) {
	e := newEnv(t)
	_, err := e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: "vol-p", StagingTargetPath: e.stagingDir("vol-p"),
		TargetPath: e.targetPath("p1", "pv-p"), VolumeCapability: snw, VolumeContext: map[string]string{"csi.storage.k8s.io/ephemeral": "false"}})
	wantCode(t, "publish with ephemeral=false", err, codes.FailedPrecondition)
}

// TestPublishConfinesAnotherStagingPath: the publish of a staged volume
// skips the link check only for the staging path its journal entry
// records; another path through a link out of the kubelet directory is
// refused as such (InvalidArgument), never followed.
func TestPublishConfinesAnotherStagingPath(t *testing.T) {
	e := newEnvAs(t, true)
	e.attach("vol-c")
	staging := e.stagingDir("vol-c")
	mustOK(t, "stage", e.stage("vol-c", staging, nil))
	escape := e.path("plugins", "escape")
	if err := os.MkdirAll(filepath.Dir(escape), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), escape); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "publish through a link out of the kubelet directory",
		e.publish("vol-c", filepath.Join(escape, "globalmount"), e.targetPath("p1", "pv-c"), false), codes.InvalidArgument)
	mustOK(t, "publish at the recorded staging path", e.publish("vol-c", staging, e.targetPath("p1", "pv-c"), false))
}

// TestStageExceedsCapabilities checks that an access mode the plugin
// supports but the volume's kind cannot serve is FAILED_PRECONDITION,
// "Exceeds capabilities" (CSI spec v1.13.0, NodeStageVolume Errors),
// before any host call.
func TestStageExceedsCapabilities(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		mode csi.VolumeCapability_AccessMode_Mode
		vctx map[string]string
	}{
		{"disk, MULTI_NODE_MULTI_WRITER", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, nil},
		{"disk, MULTI_NODE_SINGLE_WRITER", csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, nil},
		{"iscsi, MULTI_NODE_MULTI_WRITER", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
			map[string]string{"backend": "iscsi", "targetPortal": "10.0.0.1:3260", "iqn": "iqn.2026-01.io.example:t", "lun": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.wantBeforeHost(t, tt.name, codes.FailedPrecondition, func() error {
				_, err := e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: e.stagingDir("v"),
					VolumeCapability: mountCap(tt.mode, ""), VolumeContext: tt.vctx})
				return err
			})
		})
	}
}

func TestStatsExpandHealth(t *testing.T) {
	e := newEnvAs(t, true)
	e.attach("vol-s")
	staging := e.stagingDir("vol-s")
	target := e.targetPath("p", "pv-s")
	mustOK(t, "stage", e.stage("vol-s", staging, nil))
	mustOK(t, "publish", e.publish("vol-s", staging, target, false))
	ctx := context.Background()

	st, err := e.srv.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: target})
	mustOK(t, "stats", err)
	u := st.GetUsage()
	if len(u) != 1 || u[0].GetUnit() != csi.VolumeUsage_BYTES || u[0].GetTotal() <= 0 || u[0].GetAvailable() <= 0 {
		t.Fatalf("usage = %v", u)
	}
	for _, tt := range []struct {
		name string
		req  *csi.NodeGetVolumeStatsRequest
		want codes.Code
	}{
		{"unknown volume", &csi.NodeGetVolumeStatsRequest{VolumeId: "nope", VolumePath: target}, codes.NotFound},
		{"relative path", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: "some/path"}, codes.NotFound},
		{"other path", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: e.targetPath("x", "y")}, codes.NotFound},
		{"no id", &csi.NodeGetVolumeStatsRequest{VolumePath: target}, codes.InvalidArgument},
		{"no path", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s"}, codes.InvalidArgument},
		{"traversal", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: e.kubelet + "/pods/../x"}, codes.InvalidArgument},
		{"its staging path", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: target, StagingTargetPath: staging}, codes.OK},
		{"other staging path", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: target, StagingTargetPath: e.stagingDir("vol-x")}, codes.NotFound},
		{"staging path outside", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: target, StagingTargetPath: "/elsewhere"}, codes.NotFound},
		{"staging path traversal", &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-s", VolumePath: target, StagingTargetPath: e.kubelet + "/pods/../x"}, codes.InvalidArgument},
	} {
		_, err := e.srv.NodeGetVolumeStats(ctx, tt.req)
		wantCode(t, "stats "+tt.name, err, tt.want)
	}

	// The disk grows behind the plugin's back; expand reports the real size.
	before := u[0].GetTotal()
	var num uint32
	for _, d := range e.sim.Snapshot().Disks {
		if d.Serial == "vol-s" {
			num = d.Number
		}
	}
	mustOK(t, "resize disk", e.sim.ResizeDisk(num, 4<<30))
	ex, err := e.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: "vol-s", VolumePath: target,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 3 << 30}})
	mustOK(t, "expand", err)
	if ex.GetCapacityBytes() <= before || ex.GetCapacityBytes() < 3<<30 {
		t.Fatalf("expanded capacity %d, was %d", ex.GetCapacityBytes(), before)
	}
	_, err = e.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: "vol-s", VolumePath: target,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 64 << 30}})
	wantCode(t, "expand beyond the disk", err, codes.Unavailable)
	_, err = e.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: "gone", VolumePath: target})
	wantCode(t, "expand unknown", err, codes.NotFound)
	for _, tt := range []struct {
		name string
		cr   *csi.CapacityRange
		want codes.Code
	}{
		{"negative required_bytes", &csi.CapacityRange{RequiredBytes: -1}, codes.InvalidArgument},
		{"negative limit_bytes", &csi.CapacityRange{LimitBytes: -1}, codes.InvalidArgument},
		{"required_bytes above limit_bytes", &csi.CapacityRange{RequiredBytes: 2 << 30, LimitBytes: 1 << 30}, codes.OutOfRange},
		{"limit_bytes below the volume's size", &csi.CapacityRange{LimitBytes: 1 << 30}, codes.OutOfRange},
		{"limit_bytes at the disk's size", &csi.CapacityRange{LimitBytes: 4 << 30}, codes.OK},
	} {
		_, err = e.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: "vol-s", VolumePath: target, CapacityRange: tt.cr})
		wantCode(t, "expand, "+tt.name, err, tt.want)
	}

	h, err := e.srv.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "vol-s"})
	mustOK(t, "health", err)
	if n := len(h.GetVolumeHealth().GetHealthStatuses()); n != 0 {
		t.Fatalf("healthy volume reports %v", h.GetVolumeHealth().GetHealthStatuses())
	}
	off := true
	mustOK(t, "offline disk", e.sim.SetDiskState(num, sim.DiskChange{Offline: &off}))
	h, err = e.srv.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "vol-s", VolumePublishPath: target})
	mustOK(t, "health", err)
	found := false
	for _, s := range h.GetVolumeHealth().GetHealthStatuses() {
		if s.GetStatus() == csi.VolumeHealthErrorType_INACCESSIBLE && s.GetReason() == "DiskOffline" {
			found = true
		}
	}
	if !found {
		t.Fatalf("offline disk not reported: %v", h.GetVolumeHealth().GetHealthStatuses())
	}
	_, err = e.srv.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "unknown"})
	wantCode(t, "health unknown", err, codes.NotFound)
}

// TestExpandBeyondTheDisk: NodeExpandVolume asking for more than the disk
// has is Unavailable (the controller's expansion is not visible yet) when
// the node is wired as on Windows; with the simulated host's stand-in for
// the controller (what --host=sim wires) the disk grows first and the
// volume with it.
func TestExpandBeyondTheDisk(t *testing.T) {
	for _, tt := range []struct {
		name string
		ctl  bool
		want codes.Code
	}{
		{"wired as on Windows", false, codes.Unavailable},
		{"with the simulated host's controller", true, codes.OK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvAs(t, !tt.ctl)
			if !tt.ctl {
				e.attach("vol-x")
			}
			staging := e.stagingDir("vol-x")
			target := e.targetPath("p", "pv-x")
			mustOK(t, "stage", e.stage("vol-x", staging, nil))
			mustOK(t, "publish", e.publish("vol-x", staging, target, false))
			const want = 5 << 30 // the attached disk has 1 GiB
			ex, err := e.srv.NodeExpandVolume(context.Background(), &csi.NodeExpandVolumeRequest{VolumeId: "vol-x", VolumePath: target,
				CapacityRange: &csi.CapacityRange{RequiredBytes: want}})
			wantCode(t, "expand", err, tt.want)
			var size uint64
			for _, d := range e.sim.Snapshot().Disks {
				if d.Serial == "vol-x" {
					size = d.Size
				}
			}
			switch {
			case tt.ctl && (size != want || ex.GetCapacityBytes() < want-32<<20):
				t.Errorf("disk %d bytes, volume %d bytes after expanding to %d", size, ex.GetCapacityBytes(), want)
			case !tt.ctl && size != 1<<30:
				t.Errorf("the disk changed to %d bytes without the simulated controller", size)
			}
		})
	}
}

// TestNoDiskAttachedForAnISCSIVolume: on the simulated host (with its
// stand-in for the controller, as --host=sim wires it) an iSCSI volume's
// disk is its target's LUN; no disk is attached for the volume, neither for
// a LUN the target has nor for one it lacks.
func TestNoDiskAttachedForAnISCSIVolume(t *testing.T) {
	e := newEnv(t)
	portal := host.Portal{Address: "10.0.0.1", Port: 3260}
	iqn := "iqn.2024-01.io.example:node"
	mustOK(t, "target", e.sim.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{portal}, LUNs: []sim.LUNSpec{{LUN: 0}}}))
	vctx := func(lun string) map[string]string {
		return map[string]string{"targetPortal": portal.Address, "iqn": iqn, "lun": lun}
	}
	mustOK(t, "stage LUN 0", e.stage("vol-i0", e.stagingDir("vol-i0"), vctx("0")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := e.srv.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-i7", StagingTargetPath: e.stagingDir("vol-i7"),
		VolumeCapability: snw, VolumeContext: vctx("7")})
	if err == nil {
		t.Fatal("stage of a LUN the target lacks succeeded")
	}
	for _, d := range e.sim.Snapshot().Disks {
		if d.Serial == "vol-i0" || d.Serial == "vol-i7" || !d.Boot && d.Target == "" {
			t.Errorf("disk %d (serial %q) attached for an iSCSI volume", d.Number, d.Serial)
		}
	}
}

func TestHungHostCallHoldsOnlyThatVolume(t *testing.T) {
	e := newEnv(t)
	mustOK(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Hang: true}))
	stA, stB := e.stagingDir("vol-h"), e.stagingDir("vol-ok")

	// Cancel the RPC once the format is really hung, whatever the speed of
	// the machine (no timing assumption).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for e.sim.Faults().Hung(sim.OpVolumesFormat) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := e.srv.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-h", StagingTargetPath: stA, VolumeCapability: snw})
	wantCode(t, "stage with hung format", err, codes.Canceled)

	// While the format hangs, a retry on the same volume is refused…
	wantCode(t, "retry during hang", e.stage("vol-h", stA, nil), codes.Aborted)
	// …and other volumes proceed.
	mustOK(t, "other volume", e.stage("vol-ok", stB, nil))

	if n := e.sim.Faults().Release(sim.OpVolumesFormat); n != 1 {
		t.Fatalf("released %d hung calls, want 1", n)
	}
	// The lock is released once the hung call ends; the retry then
	// completes without formatting again. The loop waits for that event,
	// however long the released call takes on a loaded machine (go test's
	// -timeout bounds it).
	var lastErr error
	for {
		if lastErr = e.stage("vol-h", stA, nil); status.Code(lastErr) != codes.Aborted {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mustOK(t, "retry after the hang cleared", lastErr)
	if n := e.sim.Count(sim.OpVolumesFormat); n != 2 { // vol-ok once, vol-h once
		t.Fatalf("format called %d times, want 2 (no duplicate format of vol-h)", n)
	}
}

func TestUnstageIdempotent(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-u")
	mustOK(t, "unstage never staged", e.unstage("vol-u", staging))
	mustOK(t, "stage", e.stage("vol-u", staging, nil))
	mustOK(t, "unstage", e.unstage("vol-u", staging))
	mustOK(t, "unstage again", e.unstage("vol-u", staging))
	wantCode(t, "unstage without id", e.unstage("", staging), codes.InvalidArgument)
	wantCode(t, "unstage without path", e.unstage("vol-u", ""), codes.InvalidArgument)
}

func TestDiskErrorsMapToCodes(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		vctx  map[string]string
		want  codes.Code
	}{
		{name: "disk never appears", vctx: map[string]string{"diskLUN": "42"}, want: codes.NotFound},
		{name: "ambiguous selector", setup: func(e *env) {
			for _, s := range []string{"dup-1", "dup-2"} {
				if _, err := e.sim.AttachDisk(sim.DiskSpec{Serial: s, Adapter: 1, Target: 1, LUN: 7}); err != nil {
					t.Fatal(err)
				}
			}
		}, vctx: map[string]string{"diskLUN": "7"}, want: codes.FailedPrecondition},
		{name: "boot disk", vctx: map[string]string{"diskNumber": "0"}, want: codes.FailedPrecondition},
		{name: "foreign partition", setup: func(e *env) {
			if _, err := e.sim.AttachDisk(sim.DiskSpec{Serial: "linux-disk", Adapter: 1, LUN: 3, PartitionStyle: host.PartitionStyleGPT,
				Partitions: []sim.PartitionSpec{{GptType: "{0fc63daf-8483-4772-8e79-3d69d8477de4}"}}}); err != nil {
				t.Fatal(err)
			}
		}, vctx: map[string]string{"diskSerial": "linux-disk"}, want: codes.FailedPrecondition},
		{name: "host answers not implemented", setup: func(e *env) {
			if err := e.sim.Faults().Add(sim.Rule{Op: sim.OpDisksInitialize, Err: "notimplemented"}); err != nil {
				t.Fatal(err)
			}
		}, want: codes.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.setup != nil {
				tt.setup(e)
			}
			// No deadline: the backend's lookup gives up after a number of
			// attempts (harness_test.go), so the answer is the same on
			// a loaded machine as on an idle one.
			_, err := e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: "vol-e", StagingTargetPath: e.stagingDir("vol-e"),
				VolumeCapability: snw, VolumeContext: tt.vctx})
			wantCode(t, tt.name, err, tt.want)
		})
	}
}

// TestInfoWithoutTopology: a node without topology reports none, not an
// empty one.
func TestInfoWithoutTopology(t *testing.T) {
	base := t.TempDir()
	s, err := sim.New(sim.Config{Dir: filepath.Join(base, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p, err := plugin.New(plugin.Options{DriverName: "drv", NodeID: "node-2", KubeletDir: base, PathStyle: winpath.POSIX,
		StateDir: filepath.Join(base, "journal")}, plugin.Host{Host: s.Host()})
	if err != nil {
		t.Fatal(err)
	}
	info, err := p.Node().NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	mustOK(t, "info", err)
	if info.GetNodeId() != "node-2" || info.AccessibleTopology != nil {
		t.Fatalf("info = %v, want node-2 without accessible_topology", info)
	}
}

func TestInfoAndCapabilities(t *testing.T) {
	e := newEnv(t)
	info, err := e.srv.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	mustOK(t, "info", err)
	if info.GetNodeId() != "node-1" || info.GetMaxVolumesPerNode() != 16 ||
		info.GetAccessibleTopology().GetSegments()["topology.kubernetes.io/zone"] != "z1" {
		t.Fatalf("info = %v", info)
	}
	caps, err := e.srv.NodeGetCapabilities(context.Background(), &csi.NodeGetCapabilitiesRequest{})
	mustOK(t, "caps", err)
	want := map[csi.NodeServiceCapability_RPC_Type]bool{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:     true,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS:         true,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME:            true,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER: true,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH:        true,
	}
	for _, c := range caps.GetCapabilities() {
		if !want[c.GetRpc().GetType()] {
			t.Fatalf("unexpected capability %v", c)
		}
		delete(want, c.GetRpc().GetType())
	}
	if len(want) != 0 {
		t.Fatalf("missing capabilities %v", want)
	}
	_, err = e.srv.NodeGetStorageHealth(context.Background(), &csi.NodeGetStorageHealthRequest{})
	wantCode(t, "storage health", err, codes.Unimplemented)
}

func TestRestageRepairsDiskThatCameBackOfflineOrReadOnly(t *testing.T) {
	for _, change := range []string{"offline", "read-only"} {
		t.Run(change, func(t *testing.T) {
			e := newEnv(t)
			staging := e.stagingDir("vol-r")
			mustOK(t, "stage", e.stage("vol-r", staging, nil))
			var num uint32
			for _, d := range e.sim.Snapshot().Disks {
				if d.Serial == "vol-r" {
					num = d.Number
				}
			}
			yes := true
			c := sim.DiskChange{Offline: &yes}
			if change == "read-only" {
				c = sim.DiskChange{ReadOnly: &yes}
			}
			mustOK(t, "change disk", e.sim.SetDiskState(num, c))
			mustOK(t, "restage", e.stage("vol-r", staging, nil))
			for _, d := range e.sim.Snapshot().Disks {
				if d.Number == num && (d.Offline || d.ReadOnly) {
					t.Fatalf("disk not repaired by restage: %+v", d)
				}
			}
		})
	}
}

func TestIncompatibleRestageKeepsTheRecord(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-k")
	mustOK(t, "stage", e.stage("vol-k", staging, map[string]string{"diskSerial": "vol-k"}))
	// A repeat naming other storage is incompatible (AlreadyExists)…
	wantCode(t, "restage with another disk", e.stage("vol-k", staging, map[string]string{"diskSerial": "other"}), codes.AlreadyExists)
	// …and leaves the completed stage's record alone: publish and stats work.
	target := e.targetPath("p", "pv-k")
	mustOK(t, "publish", e.publish("vol-k", staging, target, false))
	_, err := e.srv.NodeGetVolumeStats(context.Background(), &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-k", VolumePath: target})
	mustOK(t, "stats", err)

	// A compatible repeat that fails (an injected host error) does not
	// downgrade the record either.
	mustOK(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpDisksList, Nth: 1, Err: "unreachable"}))
	wantCode(t, "failing repeat", e.stage("vol-k", staging, map[string]string{"diskSerial": "vol-k"}), codes.Unavailable)
	target2 := e.targetPath("p2", "pv-k")
	mustOK(t, "publish after a failed repeat", e.publish("vol-k", staging, target2, false))
}

func TestPublishAndUnpublishCheckTheHost(t *testing.T) {
	e := newEnv(t)
	stA, stB := e.stagingDir("vol-a1"), e.stagingDir("vol-b1")
	mustOK(t, "stage a", e.stage("vol-a1", stA, nil))
	mustOK(t, "stage b", e.stage("vol-b1", stB, nil))
	tB := e.targetPath("pb", "pv-b1")
	mustOK(t, "publish b", e.publish("vol-b1", stB, tB, false))
	// Unpublishing volume a at b's target must not remove b's link.
	wantCode(t, "unpublish of another volume's link", e.unpublish("vol-a1", tB), codes.FailedPrecondition)
	if fi, err := os.Lstat(tB); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("b's link was touched: %v %v", fi, err)
	}

	// The journal says a is staged, but its mount point is gone from the
	// host: publishing must refuse rather than link to an empty directory.
	mustOK(t, "unmount behind the plugin's back", e.sim.Host().Volumes.Unmount(context.Background(), stA))
	wantCode(t, "publish over a lost stage", e.publish("vol-a1", stA, e.targetPath("pa", "pv-a1"), false), codes.FailedPrecondition)
}

func TestLookupRPCsValidatePathsBeforeVolumes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := e.kubelet + "/pods/../../etc"
	_, err := e.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: "unknown", VolumePath: e.path("x"), StagingTargetPath: bad})
	wantCode(t, "expand: bad staging path, unknown volume", err, codes.InvalidArgument)
	_, err = e.srv.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "unknown", VolumePublishPath: `\\server\share`})
	wantCode(t, "health: UNC publish path, unknown volume", err, codes.InvalidArgument)
	_, err = e.srv.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "unknown", StagingTargetPath: bad})
	wantCode(t, "health: bad staging path, unknown volume", err, codes.InvalidArgument)
}

func TestReadOnlyAccessModesNeverWrite(t *testing.T) {
	roCap := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, "")
	stage := func(e *env, vol string) error {
		_, err := e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
			VolumeId: vol, StagingTargetPath: e.stagingDir(vol), VolumeCapability: roCap})
		return err
	}
	t.Run("formatted disk stays read-only", func(t *testing.T) {
		e := newEnv(t)
		n, err := e.sim.AttachDisk(sim.DiskSpec{Serial: "ro-1", Adapter: 1, LUN: 1, FileSystem: "NTFS", Offline: true})
		mustOK(t, "attach", err)
		mark := e.sim.Mark()
		mustOK(t, "stage read-only", stage(e, "ro-1"))
		for _, op := range e.sim.OpsSince(mark) {
			switch op {
			case sim.OpDisksInitialize, sim.OpDisksCreatePartition, sim.OpVolumesFormat, sim.OpDisksResizePartition:
				t.Fatalf("read-only stage wrote to the disk: %v", e.sim.OpsSince(mark))
			}
		}
		for _, d := range e.sim.Snapshot().Disks {
			if d.Number == n && (!d.ReadOnly || d.Offline) {
				t.Fatalf("disk after a read-only stage: read-only %v, offline %v", d.ReadOnly, d.Offline)
			}
		}
	})
	t.Run("blank disk is refused", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.sim.AttachDisk(sim.DiskSpec{Serial: "ro-2", Adapter: 1, LUN: 2})
		mustOK(t, "attach", err)
		wantCode(t, "read-only stage of a blank disk", stage(e, "ro-2"), codes.FailedPrecondition)
	})
}

func TestUnrecognisedVolumeIsNeverFormatted(t *testing.T) {
	e := newEnv(t)
	// A Basic Data partition whose volume Windows cannot read (ext4 made
	// with a Basic Data type, a locked BitLocker volume): RAW to Windows.
	_, err := e.sim.AttachDisk(sim.DiskSpec{Serial: "foreign", Adapter: 1, LUN: 4, PartitionStyle: host.PartitionStyleGPT,
		Partitions: []sim.PartitionSpec{{}}})
	mustOK(t, "attach", err)
	wantCode(t, "stage", e.stage("vol-f", e.stagingDir("vol-f"), map[string]string{"diskSerial": "foreign"}), codes.FailedPrecondition)
	if n := e.sim.Count(sim.OpVolumesFormat); n != 0 {
		t.Fatalf("formatted %d times", n)
	}
}

func TestStageCrashBetweenPartitionAndFormatConverges(t *testing.T) {
	e := newEnv(t)
	// The first attempt creates the partition and fails at Format; the
	// retry must format the partition the plugin itself made.
	mustOK(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Err: "internal"}))
	staging := e.stagingDir("vol-c2")
	wantCode(t, "first attempt", e.stage("vol-c2", staging, nil), codes.Internal)
	e.restart()
	mustOK(t, "retry", e.stage("vol-c2", staging, nil))
	if n := e.sim.Count(sim.OpVolumesFormat); n != 1 {
		t.Fatalf("format calls after the restart = %d, want 1", n)
	}
}

// TestRepeatedPublishCodes checks the answers to a second NodePublishVolume
// of a volume (CSI spec v1.13.0, NodePublishVolume): at the same target
// with other arguments ALREADY_EXISTS, at another target with another
// volume_capability FAILED_PRECONDITION, and a use the staged volume cannot
// serve refused as the stage would refuse it.
func TestRepeatedPublishCodes(t *testing.T) {
	const (
		snwMode  = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
		snmwMode = csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		snswMode = csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		mnmwMode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		mnroMode = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	)
	withFlags := mountCap(snwMode, "")
	withFlags.GetMount().MountFlags = []string{"noatime"}
	e := newEnv(t)
	staging := e.stagingDir("vol-r")
	mustOK(t, "stage", e.stage("vol-r", staging, nil))
	t1 := e.targetPath("p1", "pv-r")
	mustOK(t, "publish", e.publish("vol-r", staging, t1, false))
	publish := func(target string, c *csi.VolumeCapability, ro bool) error {
		_, err := e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: "vol-r", StagingTargetPath: staging, TargetPath: target, VolumeCapability: c, Readonly: ro,
		})
		return err
	}
	tests := []struct {
		name    string
		another bool // at another target than t1
		cap     *csi.VolumeCapability
		ro      bool
		want    codes.Code
	}{
		{"same target, same arguments", false, snw, false, codes.OK},
		{"same target, read-only", false, snw, true, codes.AlreadyExists},
		{"same target, other access mode", false, mountCap(snmwMode, ""), false, codes.AlreadyExists},
		{"same target, other fsType", false, mountCap(snwMode, "refs"), false, codes.AlreadyExists},
		{"same target, other mount flags only (ignored)", false, withFlags, false, codes.OK},
		{"another target, same arguments", true, snw, false, codes.OK},
		{"another target, read-only", true, snw, true, codes.OK},
		{"another target, other access mode", true, mountCap(snmwMode, ""), false, codes.FailedPrecondition},
		{"another target, other fsType", true, mountCap(snwMode, "refs"), false, codes.FailedPrecondition},
		{"another target, other mount flags only (ignored)", true, withFlags, false, codes.OK},
		{"another target, SINGLE_NODE_SINGLE_WRITER", true, mountCap(snswMode, ""), false, codes.FailedPrecondition},
		{"another target, multi-node writer on a disk", true, mountCap(mnmwMode, ""), false, codes.FailedPrecondition},
		{"another target, reader-only", true, mountCap(mnroMode, ""), true, codes.FailedPrecondition},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := t1
			if tt.another {
				target = e.targetPath(fmt.Sprintf("q%d", i), "pv-r")
			}
			wantCode(t, tt.name, publish(target, tt.cap, tt.ro), tt.want)
			if tt.another && tt.want == codes.OK {
				mustOK(t, "unpublish", e.unpublish("vol-r", target))
			}
		})
	}

	// With two publications, a repeat at one of them with another
	// capability is ALREADY_EXISTS (its own target's rule), never the
	// other target's FAILED_PRECONDITION. The node keeps publications in
	// a map: repeat, so that either order of visiting them is met.
	t2 := e.targetPath("p2", "pv-r")
	mustOK(t, "publish at a second target", publish(t2, snw, false))
	for range 20 {
		wantCode(t, "second target again, other access mode", publish(t2, mountCap(snmwMode, ""), false), codes.AlreadyExists)
	}
	mustOK(t, "unpublish the second target", e.unpublish("vol-r", t2))

	// A volume staged with a reader-only mode is staged read-only: a
	// writable publish is more than it can serve.
	n, err := e.sim.AttachDisk(sim.DiskSpec{Serial: "ro-p", Adapter: 1, LUN: 3, FileSystem: "NTFS", Offline: true})
	mustOK(t, fmt.Sprint("attach ", n), err)
	roStaging := e.stagingDir("ro-p")
	_, err = e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: "ro-p", StagingTargetPath: roStaging, VolumeCapability: mountCap(mnroMode, "")})
	mustOK(t, "stage read-only", err)
	roPublish := func(pod string, c *csi.VolumeCapability, ro bool) error {
		_, err := e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: "ro-p", StagingTargetPath: roStaging, TargetPath: e.targetPath(pod, "pv-ro"), VolumeCapability: c, Readonly: ro,
		})
		return err
	}
	wantCode(t, "writable publish of a read-only stage", roPublish("ro", snw, false), codes.FailedPrecondition)
	mustOK(t, "reader-only publish of a read-only stage", roPublish("ro", mountCap(mnroMode, ""), false))
	mustOK(t, "MULTI_NODE_READER_ONLY at a second target", roPublish("ro2", mountCap(mnroMode, ""), false))

	// SINGLE_NODE_READER_ONLY, like SINGLE_NODE_SINGLE_WRITER, is published
	// at one target path per node: a second one is FAILED_PRECONDITION
	// even with the same arguments.
	n, err = e.sim.AttachDisk(sim.DiskSpec{Serial: "sro-p", Adapter: 1, LUN: 4, FileSystem: "NTFS", Offline: true})
	mustOK(t, fmt.Sprint("attach ", n), err)
	sroStaging, sro := e.stagingDir("sro-p"), mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, "")
	_, err = e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: "sro-p", StagingTargetPath: sroStaging, VolumeCapability: sro})
	mustOK(t, "stage SINGLE_NODE_READER_ONLY", err)
	sroPublish := func(pod string) error {
		_, err := e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: "sro-p", StagingTargetPath: sroStaging, TargetPath: e.targetPath(pod, "pv-sro"), VolumeCapability: sro, Readonly: true,
		})
		return err
	}
	mustOK(t, "SINGLE_NODE_READER_ONLY publish", sroPublish("sro"))
	mustOK(t, "SINGLE_NODE_READER_ONLY publish again", sroPublish("sro"))
	wantCode(t, "SINGLE_NODE_READER_ONLY at a second target", sroPublish("sro2"), codes.FailedPrecondition)
}
