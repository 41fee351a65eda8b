package node

import (
	"context"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// NodePublishVolume links the target path to the staging path.
//
// Read-only: a directory link carries no read-only flag on Windows. The
// plugin records readonly and refuses a repeat that differs; enforcement is
// the container runtime's, which mounts the directory read-only into the
// container when the pod's volume is read-only (docs/parameters.md,
// "Read-only publish").
func (s *Server) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	volumeID := req.GetVolumeId()
	if err := requireVolumeID(volumeID); err != nil {
		return nil, err
	}
	target, err := s.resolvePath("target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	if _, err := validateCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if req.GetStagingTargetPath() == "" {
		// CSI spec, NodePublishVolume Errors: "Staging target path not
		// set" is FAILED_PRECONDITION when STAGE_UNSTAGE_VOLUME is set.
		// Checked after the required fields, which are InvalidArgument.
		return nil, status.Error(codes.FailedPrecondition,
			"staging_target_path is not set: this plugin stages volumes (STAGE_UNSTAGE_VOLUME), so NodeStageVolume must succeed first and its path be passed; CSI ephemeral inline volumes, which kubelet publishes without a stage, are not supported")
	}
	staging, err := s.resolveStagingForPublish(ctx, req.GetVolumeId(), req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	if samePath(target, staging) {
		return nil, invalid("target_path and staging_target_path are the same path")
	}
	if eph, err := strconv.ParseBool(req.GetVolumeContext()["csi.storage.k8s.io/ephemeral"]); err == nil && eph {
		return nil, invalid("volume_context: ephemeral inline volumes are not supported")
	}

	ctx, unlock, err := s.lockVolume(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	defer unlock()

	pub := newPublication(req.GetVolumeCapability(), req.GetReadonly())
	if err := s.checkStaged(ctx, volumeID, staging, pub); err != nil {
		return nil, err
	}
	if err := s.checkPublication(volumeID, target, pub); err != nil {
		return nil, err
	}
	created, err := s.cfg.Publisher.Publish(ctx, staging, target)
	if err != nil {
		return nil, toStatus(err)
	}
	if !created {
		klog.FromContext(ctx).V(4).Info("Target path already links to the staging path", "targetPath", target)
	}
	s.mu.Lock()
	if s.published[volumeID] == nil {
		s.published[volumeID] = make(map[string]publication)
	}
	s.published[volumeID][target] = pub
	s.mu.Unlock()
	return &csi.NodePublishVolumeResponse{}, nil
}

// checkStaged fails with FailedPrecondition unless the volume is staged at
// staging: the journal must know it there, or, when the journal has no
// record, the host must show a stage at the path. When the journal knows
// the stage, pub must be a use the staged volume can serve.
func (s *Server) checkStaged(ctx context.Context, volumeID, staging string, pub publication) error {
	if e, ok := s.cfg.Journal.Get(ctx, volumeID); ok {
		if !samePath(e.StagingPath, staging) {
			return status.Errorf(codes.FailedPrecondition, "volume %q is staged at %s, not at %s", volumeID, e.StagingPath, staging)
		}
		if !e.Staged {
			return status.Errorf(codes.FailedPrecondition, "volume %q is not staged at %s: its stage did not complete", volumeID, staging)
		}
		if err := stageServes(e, pub); err != nil {
			return err
		}
		// The journal is an index, the host is the truth: a link to an
		// empty staging directory would put the pod's writes on the node's
		// system disk.
		if _, live, err := s.cfg.Publisher.Staged(ctx, staging); err != nil {
			return toStatus(err)
		} else if !live {
			return status.Errorf(codes.FailedPrecondition, "volume %q is recorded as staged at %s, but nothing is staged there", volumeID, staging)
		}
		return nil
	}
	if _, live, err := s.cfg.Publisher.Staged(ctx, staging); err != nil {
		return toStatus(err)
	} else if !live {
		return status.Errorf(codes.FailedPrecondition, "volume %q is not staged at %s", volumeID, staging)
	}
	return nil
}

// stageServes fails unless the volume staged as e can be used as pub
// describes (CSI spec v1.13.0, NodePublishVolumeRequest.volume_capability:
// "SP MUST ensure the CO can use the published volume as described"): a
// mode its kind cannot serve is refused as the stage refuses it, and a
// writable publish of a volume staged with a reader-only mode (staged
// read-only) is FailedPrecondition, "Exceeds capabilities". An entry that
// records no access mode (written before it was recorded) is not checked
// for the latter.
func stageServes(e journal.Entry, pub publication) error {
	if err := kindServes(contract.Kind(e.Backend), pub.mode); err != nil {
		return err
	}
	if backend.StagedReadOnly(e) && !readerOnly(pub.mode) && !pub.readOnly {
		return status.Errorf(codes.FailedPrecondition, "volume %q is staged read-only (access mode %s) and cannot be published writable with access mode %s",
			e.VolumeID, e.AccessMode, modeName(pub.mode))
	}
	return nil
}

// checkPublication applies the spec's rules on repeated and concurrent
// publications (CSI spec v1.13.0, NodePublishVolume).
func (s *Server) checkPublication(volumeID, target string, pub publication) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The publication at the target itself first: when it differs, the
	// answer is ALREADY_EXISTS whatever the others are.
	for t, p := range s.published[volumeID] {
		if samePath(t, target) && (p.readOnly != pub.readOnly || !p.sameUse(pub)) {
			return status.Errorf(codes.AlreadyExists, "volume %q is already published at %s with readonly=%t and %s",
				volumeID, target, p.readOnly, p.describe())
		}
	}
	for t, p := range s.published[volumeID] {
		if samePath(t, target) {
			continue
		}
		for _, m := range []csi.VolumeCapability_AccessMode_Mode{pub.mode, p.mode} {
			if publishedOnce(m) {
				return status.Errorf(codes.FailedPrecondition, "volume %q has access mode %s, published at one target path per node, and is already published at %s",
					volumeID, modeName(m), t)
			}
		}
		// "COs SHOULD NOT call NodePublishVolume a second time with a
		// different volume_capability. If this happens, the Plugin SHOULD
		// return FAILED_PRECONDITION." Mount flags alone do not count
		// (sameUse).
		if !p.sameUse(pub) {
			return status.Errorf(codes.FailedPrecondition, "volume %q is already published at %s with %s, not %s",
				volumeID, t, p.describe(), pub.describe())
		}
	}
	return nil
}

// NodeUnpublishVolume removes the link at the target path; it never removes data.
func (s *Server) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	volumeID := req.GetVolumeId()
	if err := requireVolumeID(volumeID); err != nil {
		return nil, err
	}
	target, err := s.resolvePath("target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	ctx, unlock, err := s.lockVolume(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	defer unlock()

	// When the volume is known, only a link to its own staging path is
	// removed: a link belonging to another volume stays (FailedPrecondition).
	var staging string
	if e, ok := s.cfg.Journal.Get(ctx, volumeID); ok {
		staging = e.StagingPath
	}
	if err := s.cfg.Publisher.Unpublish(ctx, target, staging); err != nil {
		return nil, toStatus(err)
	}
	s.mu.Lock()
	for t := range s.published[volumeID] {
		if samePath(t, target) {
			delete(s.published[volumeID], t)
		}
	}
	if len(s.published[volumeID]) == 0 {
		delete(s.published, volumeID)
	}
	s.mu.Unlock()
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// resolveStagingForPublish resolves the staging path of a publish. When it
// is the path the journal records for the volume, its ancestors were
// checked for escaping links when the volume was staged, and the check is
// not repeated on this hot path (kubelet publishes every pod's volumes);
// any other path gets the full check.
func (s *Server) resolveStagingForPublish(ctx context.Context, volumeID, p string) (string, error) {
	if p == "" {
		return "", invalid("staging_target_path is required")
	}
	r, err := s.cfg.Root.Resolve(p)
	if err != nil {
		return "", invalid("staging_target_path: %v", err)
	}
	if e, ok := s.cfg.Journal.Get(ctx, volumeID); ok && e.Staged && e.StagingPath == r {
		return r, nil
	}
	if err := s.cfg.Root.CheckLinks(r, s.cfg.FS); err != nil {
		return "", invalid("staging_target_path: %v", err)
	}
	return r, nil
}
