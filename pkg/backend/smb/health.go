package smb

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Health reports abnormal conditions of the staged volume: a missing link,
// a missing or unusable global mapping, a share that does not answer or
// refuses the mapping's credentials, a directory that is gone.
func (b *Backend) Health(ctx context.Context, r backend.HealthRequest) ([]backend.Condition, error) {
	info, err := b.h.Files.Stat(ctx, r.StagingPath)
	if err != nil {
		return nil, fmt.Errorf("staging path: %w", err)
	}
	if info.Kind != host.PathSymlink {
		return inaccessible("LinkMissing", "staging path %s is a %s, not a link to the share", r.StagingPath, info.Kind), nil
	}
	unc, ok := uncPath(info.Target)
	if !ok {
		return inaccessible("LinkMissing", "staging path %s links to %s, which is not on an SMB share", r.StagingPath, info.Target), nil
	}
	if rec, ok := recordOf(r.Entry); ok && rec.UNC != "" && !backend.SameTarget(unc, rec.UNC) {
		return inaccessible("LinkMissing", "staging path %s links to %s, not to the volume's directory %s", r.StagingPath, unc, rec.UNC), nil
	}
	root, _ := shareRoot(unc)

	m, err := b.h.SMB.Mapping(ctx, root)
	switch {
	case errors.Is(err, host.ErrNotFound):
		return inaccessible("MappingUnavailable", "share %s has no global mapping on this node", root), nil
	case err != nil:
		return nil, err
	case m.Status != host.MappingOK:
		return inaccessible("MappingUnavailable", "the global mapping of %s has status %s", root, m.Status), nil
	}

	err = b.h.SMB.Check(ctx, unc)
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, host.ErrUnreachable):
		return inaccessible("ShareUnreachable", "share %s cannot be reached: %v", root, err), nil
	case errors.Is(err, host.ErrAccessDenied), errors.Is(err, host.ErrLogonFailure):
		return inaccessible("AccessDenied", "share %s refuses the global mapping's credentials (password changed on the server?); "+
			"the next stage of a volume of the share maps it again: %v", root, err), nil
	case errors.Is(err, host.ErrNotFound):
		return inaccessible("DirectoryMissing", "directory %s no longer exists on share %s", unc, root), nil
	}
	return nil, err
}

func inaccessible(reason, format string, args ...any) []backend.Condition {
	return []backend.Condition{{Severity: backend.Inaccessible, Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// Expand does not grow anything: an SMB share's size is the server's
// business. It returns the share's total size as the volume's capacity
// (GetDiskFreeSpaceEx through the staging link).
func (b *Backend) Expand(ctx context.Context, r backend.ExpandRequest) (int64, error) {
	sp, err := backend.Stats(ctx, b.h.Volumes, r.StagingPath)
	if err != nil {
		return 0, err
	}
	if sp.Total > math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return int64(sp.Total), nil
}
