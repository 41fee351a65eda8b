package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// stagedEntry returns the journal's record of a staged volume, or NotFound.
func (s *Server) stagedEntry(ctx context.Context, volumeID string) (journal.Entry, error) {
	e, ok := s.cfg.Journal.Get(ctx, volumeID)
	if !ok || !e.Staged {
		return journal.Entry{}, status.Errorf(codes.NotFound, "volume %q is not staged on this node", volumeID)
	}
	return e, nil
}

// checkVolumePath fails with NotFound unless path is where the volume is
// staged or a publication of it (a link to the staging path).
func (s *Server) checkVolumePath(ctx context.Context, e journal.Entry, path string) error {
	if samePath(path, e.StagingPath) {
		return nil
	}
	published, err := s.publisher.IsPublication(ctx, path, e.StagingPath)
	if err != nil {
		return toStatus(err)
	}
	if published {
		return nil
	}
	return status.Errorf(codes.NotFound, "volume %q is not published at %s", e.VolumeID, path)
}

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
	e, err := s.stagedEntry(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := s.checkVolumePath(ctx, e, path); err != nil {
		return nil, err
	}
	sp, err := s.publisher.Stats(ctx, path)
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

// NodeExpandVolume grows a staged volume.
func (s *Server) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	volumeID := req.GetVolumeId()
	if err := requireVolumeID(volumeID); err != nil {
		return nil, err
	}
	path, err := s.resolveLookupPath("volume_path", req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	if c := req.GetVolumeCapability(); c != nil {
		if _, err := validateCapability(c); err != nil {
			return nil, err
		}
	}
	required, limit := req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes()
	if required < 0 || limit < 0 || (limit > 0 && required > limit) {
		return nil, invalid("capacity_range: required_bytes %d and limit_bytes %d are inconsistent", required, limit)
	}
	var reqStaging string
	if p := req.GetStagingTargetPath(); p != "" {
		if reqStaging, err = s.resolveLookupPath("staging_target_path", p); err != nil {
			return nil, err
		}
	}
	ctx, unlock, err := s.lockVolume(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Read the record under the lock: a concurrent unstage cannot remove
	// it between the lookup and the host work.
	e, err := s.stagedEntry(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	staging := e.StagingPath
	if reqStaging != "" && !samePath(reqStaging, staging) {
		return nil, status.Errorf(codes.NotFound, "volume %q is staged at %s, not at %s", volumeID, staging, reqStaging)
	}
	b, err := s.backendFor(contract.Kind(e.Backend))
	if err != nil {
		return nil, err
	}
	if err := s.checkVolumePath(ctx, e, path); err != nil {
		return nil, err
	}
	capacity, err := b.Expand(ctx, backend.ExpandRequest{
		VolumeID: volumeID, StagingPath: staging, RequiredBytes: required, LimitBytes: limit,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: capacity}, nil
}

// NodeGetVolumeHealth reports abnormal conditions of a staged volume.
func (s *Server) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	volumeID := req.GetVolumeId()
	if err := requireVolumeID(volumeID); err != nil {
		return nil, err
	}
	// Every path is checked before the volume is looked up (InvalidArgument
	// before NotFound).
	var reqStaging, publishPath string
	var err error
	if p := req.GetStagingTargetPath(); p != "" {
		if reqStaging, err = s.resolveLookupPath("staging_target_path", p); err != nil {
			return nil, err
		}
	}
	if p := req.GetVolumePublishPath(); p != "" {
		if publishPath, err = s.resolveLookupPath("volume_publish_path", p); err != nil {
			return nil, err
		}
	}
	e, err := s.stagedEntry(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	if reqStaging != "" && !samePath(reqStaging, e.StagingPath) {
		return nil, status.Errorf(codes.NotFound, "volume %q is staged at %s, not at %s", volumeID, e.StagingPath, reqStaging)
	}
	health := &csi.VolumeHealth{VolumeId: volumeID}
	if publishPath != "" {
		if err := s.checkVolumePath(ctx, e, publishPath); err != nil {
			if status.Code(err) != codes.NotFound {
				return nil, err
			}
			health.HealthStatuses = append(health.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
				Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: "PublishLinkMissing",
				Message: "the publish path " + publishPath + " does not link to the staged volume",
			})
		}
	}
	b, err := s.backendFor(contract.Kind(e.Backend))
	if err != nil {
		return nil, err
	}
	conds, err := b.Health(ctx, backend.HealthRequest{VolumeID: volumeID, StagingPath: e.StagingPath, Entry: e})
	if err != nil {
		return nil, toStatus(err)
	}
	for _, c := range conds {
		health.HealthStatuses = append(health.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: healthType(c.Severity), Reason: c.Reason, Message: c.Message,
		})
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: health}, nil
}

func healthType(sev backend.Severity) csi.VolumeHealthErrorType {
	switch sev {
	case backend.Degraded:
		return csi.VolumeHealthErrorType_DEGRADED
	case backend.Inaccessible:
		return csi.VolumeHealthErrorType_INACCESSIBLE
	case backend.DataLoss:
		return csi.VolumeHealthErrorType_DATA_LOSS
	}
	return csi.VolumeHealthErrorType_UNKNOWN_VOLUME_HEALTH_TYPE
}
