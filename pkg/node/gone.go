package node

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// ReleaseGone decides about a journal entry that may have outlived its
// staging path: kubelet removes a staging path only after NodeUnstageVolume
// succeeded, so an entry whose path is gone is a volume that kubelet will
// never unstage (it never sent the call, or the call failed half-way and
// kubelet's state was cleaned). It is for callers that are not kubelet,
// such as the orphan sweep (pkg/sweep).
//
// It takes the volume's lock as an RPC does, without waiting: while an
// operation on the volume is in flight (a stage may have recorded its
// entry before its staging path exists) the entry is not gone. Under the
// lock it looks again: the entry must still be there and its staging path
// still missing. With remove it then finishes the volume exactly as
// NodeUnstageVolume would (the backend's unstage of the recorded volume:
// the disk taken offline, the share's mapping or the target's sessions
// released when it was their last user; then the entry dropped), and never
// recreates the staging path.
//
// It reports whether the entry is gone (with remove: whether it is
// finished now); errors are gRPC status errors, as the RPC's.
func (s *Server) ReleaseGone(ctx context.Context, volumeID string, remove bool) (bool, error) {
	ctx, unlock, ok := s.tryLockVolume(ctx, volumeID)
	if !ok {
		return false, nil
	}
	defer unlock()
	entry, known := s.cfg.Journal.Get(ctx, volumeID)
	if !known || entry.StagingPath == "" {
		return false, nil
	}
	info, _, err := s.cfg.Publisher.Staged(ctx, entry.StagingPath)
	if err != nil {
		return false, toStatus(err)
	}
	if info.Kind != host.PathMissing {
		return false, nil
	}
	if !remove {
		return true, nil
	}
	klog.FromContext(ctx).V(2).Info("Finishing the unstage of a volume whose staging path is gone",
		"volumeID", volumeID, "stagingTargetPath", entry.StagingPath)
	if err := s.unstage(ctx, contract.Kind(entry.Backend), volumeID, entry.StagingPath, entry); err != nil {
		return false, err
	}
	return true, nil
}
