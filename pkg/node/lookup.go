package node

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// What the RPCs on a staged volume (stats, expand, health) share: finding
// its journal entry, and checking that a path is the volume's.

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
	published, err := s.cfg.Publisher.IsPublication(ctx, path, e.StagingPath)
	if err != nil {
		return toStatus(err)
	}
	if published {
		return nil
	}
	return status.Errorf(codes.NotFound, "volume %q is not published at %s", e.VolumeID, path)
}

// optionalStagingPath resolves the staging_target_path a stats, expand or
// health request may carry, as resolveLookupPath does; "" when it carries
// none.
func (s *Server) optionalStagingPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return s.resolveLookupPath("staging_target_path", p)
}

// stagedAt fails with NotFound unless the volume staged as e is staged at
// reqStaging, when the request named one: staging_target_path is "the path
// where the volume is staged" (CSI spec v1.13.0, NodeGetVolumeStats,
// NodeExpandVolume and NodeGetVolumeHealth requests).
func stagedAt(e journal.Entry, reqStaging string) error {
	if reqStaging != "" && !samePath(reqStaging, e.StagingPath) {
		return status.Errorf(codes.NotFound, "volume %q is staged at %s, not at %s", e.VolumeID, e.StagingPath, reqStaging)
	}
	return nil
}
