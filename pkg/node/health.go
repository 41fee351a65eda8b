package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
)

// NodeGetVolumeHealth reports abnormal conditions of a staged volume.
func (s *Server) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	volumeID := req.GetVolumeId()
	if err := requireVolumeID(volumeID); err != nil {
		return nil, err
	}
	// Every path is checked before the volume is looked up (InvalidArgument
	// before NotFound).
	reqStaging, err := s.optionalStagingPath(req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	var publishPath string
	if p := req.GetVolumePublishPath(); p != "" {
		if publishPath, err = s.resolveLookupPath("volume_publish_path", p); err != nil {
			return nil, err
		}
	}
	e, err := s.stagedEntry(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	if err := stagedAt(e, reqStaging); err != nil {
		return nil, err
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
