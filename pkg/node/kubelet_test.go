//go:build linux

// Linux only: these tests run the node service on the simulated host,
// which runs only on Linux (POSIX paths; pkg/sim doc.go).

package node_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// The requests kubelet's CSI volume plugin sends, as kubernetes/kubernetes
// v1.37.2 builds them (pkg/volume/csi). kubeletPV, kubeletPod and kubelet
// below model only what reaches the node service.

// kubeletPV is what kubelet reads from a PersistentVolume.
type kubeletPV struct {
	name   string // the PV's name: a directory of each pod's target path
	handle string // spec.csi.volumeHandle
	// spec.accessModes: kubelet sends the first one, ReadWriteOnce when
	// there is none (csi_attacher.go MountDevice and csi_mounter.go SetUpAt:
	// "accessMode = ...AccessModes[0]").
	accessModes []string
	fsType      string   // spec.csi.fsType, at stage and publish alike
	mountFlags  []string // spec.mountOptions, at stage and publish alike
	vctx        map[string]string
	secrets     map[string]string // spec.csi.nodeStageSecretRef
}

// kubeletPod is a pod using the PV through a claim. readOnly is its
// volume's persistentVolumeClaim.readOnly: the only source of
// NodePublishVolume's readonly for a PV (desired_state_of_world_populator.go
// getPVSpec: NewSpecFromPersistentVolume(pv, pvcReadOnly); csi_plugin.go
// NewMounter: readOnly = spec.ReadOnly). A PV's spec.csi.readOnly never
// reaches the node service, so it has no field here.
type kubeletPod struct {
	uid      string
	readOnly bool
}

// kubelet sends a pod's volume requests to the node service.
type kubelet struct {
	t *testing.T
	e *env
	// snmw selects kubelet's mapping of access modes: kubelet asks the
	// driver for SINGLE_NODE_MULTI_WRITER before every stage, publish and
	// expand (csi_client.go getNodeV1AccessModeMapper) and maps with
	// asSingleNodeMultiWriterCapableCSIAccessModeV1 when it has it,
	// asCSIAccessModeV1 when not.
	snmw bool
}

// accessMode is csi_client.go's mapping of the PV's first access mode.
func (k *kubelet) accessMode(pv kubeletPV) csi.VolumeCapability_AccessMode_Mode {
	m := "ReadWriteOnce"
	if len(pv.accessModes) > 0 {
		m = pv.accessModes[0]
	}
	switch m {
	case "ReadWriteOnce":
		if k.snmw {
			return csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case "ReadWriteOncePod":
		if k.snmw {
			return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case "ReadOnlyMany":
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case "ReadWriteMany":
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return csi.VolumeCapability_AccessMode_UNKNOWN
}

// capability is the volume_capability kubelet sends at stage, publish and
// expand alike (csi_client.go NodeStageVolume, NodePublishVolume,
// NodeExpandVolume); volume_mount_group is sent only to a driver with
// VOLUME_MOUNT_GROUP, which this plugin does not claim.
func (k *kubelet) capability(pv kubeletPV) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: pv.fsType, MountFlags: pv.mountFlags}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: k.accessMode(pv)},
	}
}

// stagingPath is csi_attacher.go makeDeviceMountPath: the plugin
// directory, the driver name, the SHA-256 of the volume handle and
// "globalmount". Kubelet builds every staging_target_path it sends (stage,
// publish, expand, health) with this one function.
func (k *kubelet) stagingPath(pv kubeletPV) string {
	return k.e.path("plugins", "kubernetes.io", "csi", "drv", fmt.Sprintf("%x", sha256.Sum256([]byte(pv.handle))), "globalmount")
}

// mountDevice is NodeStageVolume, once per volume and node; kubelet creates
// the staging directory first (csi_attacher.go MountDevice).
func (k *kubelet) mountDevice(pv kubeletPV) error {
	k.t.Helper()
	staging := k.stagingPath(pv)
	if err := os.MkdirAll(staging, 0o750); err != nil {
		k.t.Fatal(err)
	}
	_, err := k.e.srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: pv.handle, StagingTargetPath: staging,
		VolumeCapability: k.capability(pv), VolumeContext: pv.vctx, Secrets: pv.secrets,
	})
	return err
}

// target is the pod's target path (csi_mounter.go GetPath), whose parent
// kubelet creates before NodePublishVolume.
func (k *kubelet) target(pod kubeletPod, pv kubeletPV) string {
	return k.e.targetPath(pod.uid, pv.name)
}

// setUp is NodePublishVolume for one pod.
func (k *kubelet) setUp(pod kubeletPod, pv kubeletPV) error {
	_, err := k.e.srv.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: pv.handle, StagingTargetPath: k.stagingPath(pv), TargetPath: k.target(pod, pv),
		VolumeCapability: k.capability(pv), Readonly: pod.readOnly, VolumeContext: pv.vctx,
	})
	return err
}

// metrics is NodeGetVolumeStats: the pod's target path, never a staging
// path (csi_metrics.go GetMetrics, csi_client.go NodeGetVolumeStats).
func (k *kubelet) metrics(pod kubeletPod, pv kubeletPV) error {
	_, err := k.e.srv.NodeGetVolumeStats(context.Background(), &csi.NodeGetVolumeStatsRequest{
		VolumeId: pv.handle, VolumePath: k.target(pod, pv),
	})
	return err
}

// nodeExpand is NodeExpandVolume for a pod (expander.go nodeExpandWithClient):
// the pod's target path and the staging path from GetDeviceMountPath.
func (k *kubelet) nodeExpand(pod kubeletPod, pv kubeletPV, size int64) error {
	_, err := k.e.srv.NodeExpandVolume(context.Background(), &csi.NodeExpandVolumeRequest{
		VolumeId: pv.handle, VolumePath: k.target(pod, pv), StagingTargetPath: k.stagingPath(pv),
		CapacityRange: &csi.CapacityRange{RequiredBytes: size}, VolumeCapability: k.capability(pv),
	})
	return err
}

// health is NodeGetVolumeHealth from kubelet's volume health manager
// (pkg/kubelet/volumemanager/volumehealth): the staging and publish paths
// kubelet recorded.
func (k *kubelet) health(pod kubeletPod, pv kubeletPV) error {
	_, err := k.e.srv.NodeGetVolumeHealth(context.Background(), &csi.NodeGetVolumeHealthRequest{
		VolumeId: pv.handle, StagingTargetPath: k.stagingPath(pv), VolumePublishPath: k.target(pod, pv),
	})
	return err
}

func (k *kubelet) tearDown(pod kubeletPod, pv kubeletPV) error {
	return k.e.unpublish(pv.handle, k.target(pod, pv))
}

func (k *kubelet) unmountDevice(pv kubeletPV) error {
	return k.e.unstage(pv.handle, k.stagingPath(pv))
}

// TestKubeletRequestSequences plays what kubelet sends for pods sharing a
// PV on one node: one stage, a publish per pod with the PV's capability
// and the pod's readonly, a publish repeated at the same target (kubelet
// retries an uncertain publish and remounts), stats, expand and health
// with kubelet's paths, then teardown. The plugin must accept all of it.
func TestKubeletRequestSequences(t *testing.T) {
	caps, err := newEnv(t).srv.NodeGetCapabilities(context.Background(), &csi.NodeGetCapabilitiesRequest{})
	mustOK(t, "capabilities", err)
	advertised := false
	for _, c := range caps.GetCapabilities() {
		advertised = advertised || c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER
	}
	smb := func(name string) kubeletPV {
		return kubeletPV{name: name, handle: name, vctx: map[string]string{"source": "//files/data"},
			secrets: map[string]string{"username": "alice", "password": "alice-password"}}
	}
	rw, ro := kubeletPod{uid: "pod-rw"}, kubeletPod{uid: "pod-ro", readOnly: true}
	rw2 := kubeletPod{uid: "pod-rw2"}
	tests := []struct {
		name string
		// snmw is kubelet's mapping: the plugin's own answer, or the
		// mapping kubelet uses for a driver without SINGLE_NODE_MULTI_WRITER.
		snmw      bool
		pv        kubeletPV
		formatted bool // the disk holds NTFS before the stage (a reader-only stage never formats)
		pods      []kubeletPod
		expand    bool // kubelet expands a writable volume only
	}{
		{name: "RWO, a writable and a read-only pod", snmw: advertised,
			pv: kubeletPV{name: "pv-1", handle: "vol-1", accessModes: []string{"ReadWriteOnce"}}, pods: []kubeletPod{rw, ro}, expand: true},
		{name: "RWO, the read-only pod first", snmw: advertised,
			pv: kubeletPV{name: "pv-2", handle: "vol-2", accessModes: []string{"ReadWriteOnce"}}, pods: []kubeletPod{ro, rw, rw2}, expand: true},
		{name: "RWO, SINGLE_NODE_WRITER mapping", snmw: false,
			pv: kubeletPV{name: "pv-3", handle: "vol-3", accessModes: []string{"ReadWriteOnce"}}, pods: []kubeletPod{rw, ro, rw2}, expand: true},
		{name: "RWO, fsType and mountOptions", snmw: advertised,
			pv: kubeletPV{name: "pv-4", handle: "vol-4", accessModes: []string{"ReadWriteOnce", "ReadOnlyMany"}, fsType: "ntfs",
				mountFlags: []string{"noatime", "uid=1000"}}, pods: []kubeletPod{rw, ro}, expand: true},
		{name: "no access modes: ReadWriteOnce", snmw: advertised,
			pv: kubeletPV{name: "pv-5", handle: "vol-5"}, pods: []kubeletPod{rw, ro}},
		{name: "RWOP, one pod", snmw: advertised,
			pv: kubeletPV{name: "pv-6", handle: "vol-6", accessModes: []string{"ReadWriteOncePod"}}, pods: []kubeletPod{rw}, expand: true},
		{name: "RWOP, SINGLE_NODE_WRITER mapping", snmw: false,
			pv: kubeletPV{name: "pv-7", handle: "vol-7", accessModes: []string{"ReadWriteOncePod"}}, pods: []kubeletPod{ro}},
		{name: "ROX, a read-only and a writable pod", snmw: advertised, formatted: true,
			pv: kubeletPV{name: "pv-8", handle: "vol-8", accessModes: []string{"ReadOnlyMany"}}, pods: []kubeletPod{ro, rw}},
		{name: "ROX first, writable pods", snmw: advertised, formatted: true,
			pv: kubeletPV{name: "pv-9", handle: "vol-9", accessModes: []string{"ReadOnlyMany", "ReadWriteOnce"}}, pods: []kubeletPod{rw, rw2, ro}},
		{name: "SMB RWX, a writable and a read-only pod", snmw: advertised,
			pv: func() kubeletPV { pv := smb("pv-10"); pv.accessModes = []string{"ReadWriteMany"}; return pv }(), pods: []kubeletPod{rw, ro, rw2}},
		{name: "SMB ROX, a writable and a read-only pod", snmw: advertised,
			pv: func() kubeletPV { pv := smb("pv-11"); pv.accessModes = []string{"ReadOnlyMany"}; return pv }(), pods: []kubeletPod{rw, ro}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			mustOK(t, "add share", e.sim.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": "alice-password"}}))
			if tt.formatted {
				_, err := e.sim.AttachDisk(sim.DiskSpec{Serial: tt.pv.handle, Adapter: 1, LUN: 1, FileSystem: "NTFS", Offline: true})
				mustOK(t, "attach", err)
			}
			k := &kubelet{t: t, e: e, snmw: tt.snmw}
			mustOK(t, "stage", k.mountDevice(tt.pv))
			for _, pod := range tt.pods {
				mustOK(t, "publish "+pod.uid, k.setUp(pod, tt.pv))
			}
			for _, pod := range tt.pods {
				mustOK(t, "publish again "+pod.uid, k.setUp(pod, tt.pv))
				mustOK(t, "stats "+pod.uid, k.metrics(pod, tt.pv))
				mustOK(t, "health "+pod.uid, k.health(pod, tt.pv))
			}
			if tt.expand {
				mustOK(t, "expand", k.nodeExpand(tt.pods[0], tt.pv, 2<<30))
			}
			mustOK(t, "stage again", k.mountDevice(tt.pv))
			for _, pod := range tt.pods {
				mustOK(t, "unpublish "+pod.uid, k.tearDown(pod, tt.pv))
			}
			mustOK(t, "unstage", k.unmountDevice(tt.pv))
		})
	}
}

// TestKubeletRequestsTheVolumeCannotServe: what kubelet sends for a PV
// whose access mode the volume's kind cannot serve is refused at the stage
// with FAILED_PRECONDITION, before any host call, and kubelet publishes
// nothing after a failed stage.
func TestKubeletRequestsTheVolumeCannotServe(t *testing.T) {
	e := newEnv(t)
	k := &kubelet{t: t, e: e, snmw: true}
	pv := kubeletPV{name: "pv-rwx", handle: "vol-rwx", accessModes: []string{"ReadWriteMany"}}
	e.wantBeforeHost(t, "RWX disk volume", codes.FailedPrecondition, func() error { return k.mountDevice(pv) })
}

// TestKubeletAfterAnEditOfMountOptions: a PV's mountOptions may change
// while pods use it; kubelet then sends the new ones for a new pod on the
// node, and for a pod whose volume it republishes after a restart. The
// plugin ignores mount flags, so neither publish is refused for them; an
// access mode edit still is, at another target.
func TestKubeletAfterAnEditOfMountOptions(t *testing.T) {
	e := newEnv(t)
	k := &kubelet{t: t, e: e, snmw: true}
	pv := kubeletPV{name: "pv-mo", handle: "vol-mo", accessModes: []string{"ReadWriteOnce"}, mountFlags: []string{"noatime"}}
	first, second := kubeletPod{uid: "pod-1"}, kubeletPod{uid: "pod-2"}
	mustOK(t, "stage", k.mountDevice(pv))
	mustOK(t, "publish the first pod", k.setUp(first, pv))
	pv.mountFlags = []string{"noatime", "nodiratime"}
	mustOK(t, "publish a new pod after the edit", k.setUp(second, pv))
	// kubelet republishes the first pod's volume with the edited flags
	// after a restart (its reconstructed mounts are uncertain).
	mustOK(t, "the first pod's target again, with the edited flags", k.setUp(first, pv))
	pv.accessModes = []string{"ReadWriteMany"}
	wantCode(t, "a new pod after an access mode edit", k.setUp(kubeletPod{uid: "pod-3"}, pv), codes.FailedPrecondition)
}
