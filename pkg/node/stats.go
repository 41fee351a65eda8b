package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodeGetVolumeStats reports the bytes used and available on the volume.
// Windows has no inode counts, so only BYTES is reported.
func (s *Server) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := requireVolumeID(req.GetVolumeId()); err != nil {
		return nil, err
	}
	path, err := s.resolveLookupPath("volume_path", req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	var reqStaging string
	if p := req.GetStagingTargetPath(); p != "" {
		if reqStaging, err = s.resolveLookupPath("staging_target_path", p); err != nil {
			return nil, err
		}
	}
	e, err := s.stagedEntry(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	// staging_target_path, when given, is "the path where the volume is
	// staged" (CSI spec v1.13.0, NodeGetVolumeStatsRequest), as for
	// expand and health.
	if reqStaging != "" && !samePath(reqStaging, e.StagingPath) {
		return nil, status.Errorf(codes.NotFound, "volume %q is staged at %s, not at %s", e.VolumeID, e.StagingPath, reqStaging)
	}
	if err := s.checkVolumePath(ctx, e, path); err != nil {
		return nil, err
	}
	sp, err := s.cfg.Publisher.Stats(ctx, path)
	if err != nil {
		return nil, toStatus(err)
	}
	used := int64(0)
	if sp.Total > sp.Free {
		used = int64(sp.Total - sp.Free)
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{
		Unit:      csi.VolumeUsage_BYTES,
		Total:     int64(sp.Total),
		Available: int64(sp.AvailableToUse),
		Used:      used,
	}}}, nil
}
