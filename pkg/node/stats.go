package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
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
	reqStaging, err := s.optionalStagingPath(req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	e, err := s.stagedEntry(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := stagedAt(e, reqStaging); err != nil {
		return nil, err
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
