package simnode

import (
	"context"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// StageRequest is the NodeStageVolume request kubelet sends for volume vol
// of this harness's driver: its staging path under kubelet, MountCap.
func StageRequest(kubelet, vol string, vctx, secrets map[string]string) *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: StagingPath(kubelet, vol),
		VolumeCapability: MountCap, VolumeContext: vctx, Secrets: secrets}
}

// UnstageRequest is the NodeUnstageVolume request for volume vol.
func UnstageRequest(kubelet, vol string) *csi.NodeUnstageVolumeRequest {
	return &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: StagingPath(kubelet, vol)}
}

// Stage creates the staging directory of vol, as kubelet does, and stages
// the volume (StageRequest).
func (n *Node) Stage(ctx context.Context, vol string, vctx, secrets map[string]string) error {
	if err := os.MkdirAll(StagingPath(n.Kubelet, vol), 0o750); err != nil {
		return err
	}
	_, err := n.Server.NodeStageVolume(ctx, StageRequest(n.Kubelet, vol, vctx, secrets))
	return err
}

// Unstage unstages volume vol (UnstageRequest).
func (n *Node) Unstage(ctx context.Context, vol string) error {
	_, err := n.Server.NodeUnstageVolume(ctx, UnstageRequest(n.Kubelet, vol))
	return err
}
