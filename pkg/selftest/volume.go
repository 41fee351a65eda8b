package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// volume is one volume a backend's steps stage and publish, with the paths
// kubelet would give it.
type volume struct {
	id       string
	staging  string
	target   string
	cap      *csi.VolumeCapability
	context  map[string]string
	secrets  map[string]string
	testFile string
	data     []byte
}

// newVolume lays out a volume of the run: kubelet's staging path
// (plugins\kubernetes.io\csi\<driver>\<id>\globalmount) and a pod's
// publish path (pods\<pod>\volumes\kubernetes.io~csi\<id>\mount).
func (r *runner) newVolume(suffix, fsType string, mode csi.VolumeCapability_AccessMode_Mode, vctx, secrets map[string]string) *volume {
	id := r.name(suffix)
	target := r.kub.Join("pods", r.name(""), "volumes", "kubernetes.io~csi", id, "mount")
	return &volume{
		id:      id,
		staging: r.kub.Join("plugins", "kubernetes.io", "csi", DriverName, id, "globalmount"),
		target:  target,
		cap: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		},
		context:  vctx,
		secrets:  secrets,
		testFile: r.kub.Join("pods", r.name(""), "volumes", "kubernetes.io~csi", id, "mount", r.name(".txt")),
		data:     []byte("csi-windows-node selftest " + r.cfg.Run + " " + id + "\n"),
	}
}

// stage makes the staging directory, as kubelet does, and stages the
// volume; the undo unstages it.
func (r *runner) stage(ctx context.Context, v *volume) (string, error) {
	if err := r.n.Host.Files.MakeDir(ctx, v.staging); err != nil {
		return "", fmt.Errorf("make the staging directory: %w", err)
	}
	r.push("stage "+v.id, "staged volume "+v.id, func(ctx context.Context) error { return r.unstageOnly(ctx, v) })
	_, err := r.p.Node().NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: v.staging, VolumeCapability: v.cap,
		VolumeContext: v.context, Secrets: v.secrets,
	})
	if err != nil {
		return "", err
	}
	return "staged at " + v.staging, nil
}

// publish makes the publish path's parent, as kubelet does, and publishes.
func (r *runner) publish(ctx context.Context, v *volume) (string, error) {
	parent := r.kub.Join("pods", r.name(""), "volumes", "kubernetes.io~csi", v.id)
	if err := r.n.Host.Files.MakeDir(ctx, parent); err != nil {
		return "", fmt.Errorf("make the publish path's parent: %w", err)
	}
	r.push("publish "+v.id, "publication "+v.target, func(ctx context.Context) error { return r.unpublishOnly(ctx, v) })
	_, err := r.p.Node().NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: v.id, StagingTargetPath: v.staging, TargetPath: v.target, VolumeCapability: v.cap,
		VolumeContext: v.context,
	})
	if err != nil {
		return "", err
	}
	return "published at " + v.target, nil
}

func (r *runner) unpublish(ctx context.Context, v *volume) (string, error) {
	if err := r.unpublishOnly(ctx, v); err != nil {
		return "", err
	}
	r.done("publish " + v.id)
	return "", nil
}

// unpublishOnly unpublishes; a publication that is not there is not an
// error (NodeUnpublishVolume is idempotent).
func (r *runner) unpublishOnly(ctx context.Context, v *volume) error {
	_, err := r.p.Node().NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target})
	return err
}

func (r *runner) unstage(ctx context.Context, v *volume) (string, error) {
	if err := r.unstageOnly(ctx, v); err != nil {
		return "", err
	}
	r.done("stage " + v.id)
	return "", nil
}

func (r *runner) unstageOnly(ctx context.Context, v *volume) error {
	_, err := r.p.Node().NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging})
	return err
}

// writeRead writes the test file through the publish path and reads it
// back.
func (r *runner) writeRead(ctx context.Context, v *volume) (string, error) {
	if err := r.n.Admin.FileData.WriteFile(ctx, v.testFile, v.data); err != nil {
		return "", err
	}
	return r.readBack(ctx, v)
}

// readBack reads the test file through the publish path.
func (r *runner) readBack(ctx context.Context, v *volume) (string, error) {
	got, err := r.n.Admin.FileData.ReadFile(ctx, v.testFile)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(got, v.data) {
		return "", fmt.Errorf("%s holds %q, want %q", v.testFile, got, v.data)
	}
	return fmt.Sprintf("%d bytes through %s", len(v.data), v.testFile), nil
}

// removeTestFile removes the test file, so that nothing is left on a share
// or LUN that selftest does not own.
func (r *runner) removeTestFile(ctx context.Context, v *volume) error {
	return r.n.Admin.FileData.RemoveFile(ctx, v.testFile)
}

// stats returns the volume's total bytes, through NodeGetVolumeStats on
// the publish path.
func (r *runner) stats(ctx context.Context, v *volume) (int64, string, error) {
	resp, err := r.p.Node().NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: v.target})
	if err != nil {
		return 0, "", err
	}
	for _, u := range resp.GetUsage() {
		if u.GetUnit() == csi.VolumeUsage_BYTES {
			if u.GetTotal() <= 0 || u.GetAvailable() < 0 || u.GetAvailable() > u.GetTotal() {
				return 0, "", fmt.Errorf("implausible usage: total %d, available %d, used %d", u.GetTotal(), u.GetAvailable(), u.GetUsed())
			}
			return u.GetTotal(), fmt.Sprintf("total %d bytes, available %d, used %d", u.GetTotal(), u.GetAvailable(), u.GetUsed()), nil
		}
	}
	return 0, "", errors.New("NodeGetVolumeStats reported no byte usage")
}

// health asks NodeGetVolumeHealth about the staged and published volume.
func (r *runner) health(ctx context.Context, v *volume) (string, error) {
	resp, err := r.p.Node().NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{
		VolumeId: v.id, StagingTargetPath: v.staging, VolumePublishPath: v.target})
	if err != nil {
		return "", err
	}
	if st := resp.GetVolumeHealth().GetHealthStatuses(); len(st) > 0 {
		return "", fmt.Errorf("the volume reports %d problem(s), the first %s: %s", len(st), st[0].GetReason(), st[0].GetMessage())
	}
	return "healthy", nil
}

// rpcCode is the gRPC code of err (codes.OK for nil).
func rpcCode(err error) codes.Code { return status.Code(err) }

// isNotFound reports an error that means the thing is gone.
func isNotFound(err error) bool {
	return errors.Is(err, host.ErrNotFound) || rpcCode(err) == codes.NotFound
}
