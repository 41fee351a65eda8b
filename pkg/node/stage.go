package node

import (
	"context"
	"maps"
	"reflect"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// NodeStageVolume makes the volume available at the staging path.
func (s *Server) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if err := requireVolumeID(req.GetVolumeId()); err != nil {
		return nil, err
	}
	staging, err := s.resolvePath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	mode, err := validateCapability(req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	vol, err := contract.Parse(contract.Request{
		VolumeID:       req.GetVolumeId(),
		VolumeContext:  req.GetVolumeContext(),
		PublishContext: req.GetPublishContext(),
		Secrets:        req.GetSecrets(),
		FsType:         req.GetVolumeCapability().GetMount().GetFsType(),
	}, s.cfg.Contract)
	if err != nil {
		return nil, toStatus(err)
	}
	s.logIgnored(ctx, req.GetVolumeId(), vol.Ignored)
	if err := kindServes(vol.Kind, mode); err != nil {
		return nil, err
	}
	b, err := s.backendFor(vol.Kind)
	if err != nil {
		return nil, err
	}

	ctx, unlock, err := s.lockVolume(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	defer unlock()

	rec, err := b.Record(vol)
	if err != nil {
		return nil, toStatus(err)
	}
	entry := journal.Entry{
		VolumeID:    req.GetVolumeId(),
		StagingPath: staging,
		Backend:     string(vol.Kind),
		ResourceKey: rec.Resource(),
		FsType:      vol.FS.Type,
		AccessMode:  modeName(mode),
		Attrs:       rec.Attrs(),
	}
	prev, hadPrev := s.cfg.Journal.Get(ctx, entry.VolumeID)
	// restage is a compatible repeat of a completed stage at the same path:
	// its record is already right, and a failure of the repeat must not
	// downgrade it.
	restage := false
	if hadPrev {
		if err := s.checkRestage(ctx, prev, entry, rec); err != nil {
			return nil, err
		}
		restage = prev.Staged && samePath(prev.StagingPath, staging)
	}
	if !restage {
		// Record the intent before touching the host, so a crash can never
		// hide this volume from the count of a shared resource's users.
		if err := s.cfg.Journal.Put(ctx, entry); err != nil {
			return nil, status.Errorf(codes.Internal, "record stage of volume %q: %v", entry.VolumeID, err)
		}
	}

	learned := map[string]string{}
	sr := backend.StageRequest{VolumeID: entry.VolumeID, StagingPath: staging, Volume: vol, ReadOnly: readerOnly(mode), Learned: learned}
	if hadPrev {
		sr.Recorded = prev.Attrs
	}
	err = b.Stage(ctx, sr)
	if err != nil {
		if !restage {
			s.forgetFailedStage(ctx, entry)
		}
		return nil, toStatus(err)
	}
	if len(learned) > 0 {
		if entry.Attrs == nil {
			entry.Attrs = map[string]string{}
		}
		maps.Copy(entry.Attrs, learned)
	}
	entry.Staged = true
	if !restage || !reflect.DeepEqual(prev, entry) {
		// A repeat may carry new facts (the user name after a credential
		// rotation): keep the record current.
		if err := s.cfg.Journal.Put(ctx, entry); err != nil {
			return nil, status.Errorf(codes.Internal, "record stage of volume %q: %v", entry.VolumeID, err)
		}
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// checkRestage answers a NodeStageVolume for a volume the journal already
// knows; next is the new entry and rec the backend's record of it.
func (s *Server) checkRestage(ctx context.Context, prev, next journal.Entry, rec backend.Record) error {
	if !samePath(prev.StagingPath, next.StagingPath) {
		// Staged elsewhere: refuse while that stage is live on the host;
		// a stale record (unstaged by hand, crashed) is replaced.
		if _, live, err := s.cfg.Publisher.Staged(ctx, prev.StagingPath); err == nil && live {
			return status.Errorf(codes.FailedPrecondition, "volume %q is already staged at %s", prev.VolumeID, prev.StagingPath)
		}
		return nil
	}
	if !prev.Staged {
		return nil // an earlier attempt did not finish: redo it
	}
	// From the spec: if the volume is already staged at the path with an
	// incompatible capability, the plugin MUST reply ALREADY_EXISTS.
	switch {
	case prev.Backend != next.Backend:
		return status.Errorf(codes.AlreadyExists, "volume %q is staged as a %s volume, not %s", prev.VolumeID, prev.Backend, next.Backend)
	case prev.ResourceKey != next.ResourceKey:
		return status.Errorf(codes.AlreadyExists, "volume %q is staged from %s, not %s", prev.VolumeID, prev.ResourceKey, next.ResourceKey)
	case !strings.EqualFold(prev.FsType, next.FsType):
		return status.Errorf(codes.AlreadyExists, "volume %q is staged with fsType %s, not %s", prev.VolumeID, prev.FsType, next.FsType)
	case prev.AccessMode != next.AccessMode:
		return status.Errorf(codes.AlreadyExists, "volume %q is staged with access mode %s, not %s", prev.VolumeID, prev.AccessMode, next.AccessMode)
	}
	// The same storage: the records name it (a disk selector, a directory
	// of a share, a LUN). Other facts, such as the SMB user name, may change
	// between stages. A record that cannot be read back names nothing to
	// compare with.
	if b, err := s.backendFor(contract.Kind(prev.Backend)); err == nil {
		if old, err := b.DecodeRecord(prev); err == nil && old.Storage() != rec.Storage() {
			return status.Errorf(codes.AlreadyExists, "volume %q is staged on %s, not %s", prev.VolumeID, old.Storage(), rec.Storage())
		}
	}
	return nil
}

// forgetFailedStage drops the intent record of a stage that failed and left
// nothing at the staging path; backends roll back their own partial work.
// It runs on a context of its own (backend.CleanupContext): a stage
// cancelled by its caller or by the shutdown must not leave its intent
// behind, which diagnose would show as an incomplete stage until someone
// unstages the volume by hand.
func (s *Server) forgetFailedStage(ctx context.Context, e journal.Entry) {
	if host.Running(ctx) {
		// A call hung past the stage's end may still make what the record
		// must count (a mapping, a session): the retry or the unstage,
		// which the volume's lock holds back until the call ends, needs
		// the record.
		klog.FromContext(ctx).V(2).Info("A host call of the failed stage is still running; keeping its record for the retry or the unstage",
			"volumeID", e.VolumeID)
		return
	}
	ctx, cancel := backend.CleanupContext(ctx)
	defer cancel()
	if _, live, err := s.cfg.Publisher.Staged(ctx, e.StagingPath); err != nil || live {
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot tell whether the failed stage left anything at the staging path; keeping its record for the retry or the unstage",
				"volumeID", e.VolumeID, "stagingTargetPath", e.StagingPath)
		}
		return // keep the record: unstage or a retry will need it
	}
	if err := s.cfg.Journal.Delete(ctx, e.VolumeID); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot drop the record of a failed stage", "volumeID", e.VolumeID)
	}
}

// NodeUnstageVolume undoes NodeStageVolume.
func (s *Server) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := requireVolumeID(req.GetVolumeId()); err != nil {
		return nil, err
	}
	staging, err := s.resolvePath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	ctx, unlock, err := s.lockVolume(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	defer unlock()

	entry, known := s.cfg.Journal.Get(ctx, req.GetVolumeId())
	if known && !samePath(entry.StagingPath, staging) {
		// The journal knows the volume at another path: unstage what the
		// host has at the requested path and keep the record.
		known = false
		entry = journal.Entry{}
	}
	kind := contract.Kind(entry.Backend)
	if !known {
		k, err := s.cfg.Publisher.StagedKind(ctx, staging)
		if err != nil {
			return nil, toStatus(err)
		}
		if k == "" {
			// From the spec: not staged at the path → 0 OK.
			return &csi.NodeUnstageVolumeResponse{}, nil
		}
		kind = k
	}
	if err := s.unstage(ctx, kind, req.GetVolumeId(), staging, entry); err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// unstage is the end of NodeUnstageVolume, under the volume's lock: the
// backend of kind undoes the stage at staging, then the journal entry
// (when known: a zero entry is none) is dropped. It returns a gRPC status
// error.
func (s *Server) unstage(ctx context.Context, kind contract.Kind, volumeID, staging string, entry journal.Entry) error {
	b, err := s.backendFor(kind)
	if err != nil {
		return err
	}
	if err := b.Unstage(ctx, backend.UnstageRequest{VolumeID: volumeID, StagingPath: staging, Entry: entry}); err != nil {
		return toStatus(err)
	}
	if entry.VolumeID != "" {
		if err := s.cfg.Journal.Delete(ctx, entry.VolumeID); err != nil {
			return status.Errorf(codes.Internal, "drop the stage record of volume %q: %v", entry.VolumeID, err)
		}
	}
	s.mu.Lock()
	delete(s.published, volumeID)
	s.mu.Unlock()
	s.ignored.Delete(volumeID)
	return nil
}

// samePath compares resolved paths the way the host would.
func samePath(a, b string) bool {
	return backend.SameTarget(a, b)
}

// logIgnored logs, once per volume, the volume parameters the contract
// does not use (names only, never values): a vendor's own keys, or a
// misspelt key too far from any contract key to be caught as a typo.
func (s *Server) logIgnored(ctx context.Context, volumeID string, keys []string) {
	if len(keys) == 0 {
		return
	}
	names := strings.Join(keys, "\x00")
	if prev, seen := s.ignored.Swap(volumeID, names); seen && prev == names {
		return
	}
	klog.FromContext(ctx).V(2).Info("Ignoring volume parameters the contract does not know", "keys", keys)
}
