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
