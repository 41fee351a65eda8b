package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
)

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
	if required < 0 || limit < 0 {
		return nil, invalid("capacity_range: required_bytes %d and limit_bytes %d must not be negative", required, limit)
	}
	if limit > 0 && required > limit {
		// CSI spec v1.13.0, NodeExpandVolume Errors: "Unsupported
		// capacity_range" is OUT_OF_RANGE, "Caller MUST fix the capacity
		// range before retrying".
		return nil, status.Errorf(codes.OutOfRange, "capacity_range: required_bytes %d is more than limit_bytes %d", required, limit)
	}
	reqStaging, err := s.optionalStagingPath(req.GetStagingTargetPath())
	if err != nil {
		return nil, err
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
	if err := stagedAt(e, reqStaging); err != nil {
		return nil, err
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
