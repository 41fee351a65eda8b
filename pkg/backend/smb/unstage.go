package smb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Unstage removes the staging link, puts back the empty directory kubelet
// expects, and removes the share's global mapping when no other staged
// volume uses it. An already unstaged path still runs the release step, so
// that a crash between removing the link and removing the mapping converges
// on the retry (the node keeps the journal entry until Unstage succeeds).
// A volume the journal does not know keeps its share's mapping: without
// the journal the other users cannot be counted.
//
// While it runs, the volume is registered with its share (b.shares), so
// that no other volume's unstage removes the mapping under its link; the
// last volume out removes it, once.
func (b *Backend) Unstage(ctx context.Context, r backend.UnstageRequest) error {
	log := klog.FromContext(ctx).WithValues("stagingTargetPath", r.StagingPath)
	rec, known := recordOf(r.Entry)
	journalRoot := rec.Share
	var use *shared.Use[mapped]
	if known {
		var err error
		ctx, use, err = b.shares.Unstage(ctx, resourceKey(journalRoot), r.VolumeID)
		if err != nil {
			return err
		}
		defer use.Done()
	}
	info, err := b.h.Files.Stat(ctx, r.StagingPath)
	if err != nil {
		return fmt.Errorf("staging path: %w", err)
	}

	var roots []string
	switch info.Kind {
	case host.PathSymlink:
		root, ok := shareRoot(info.Target)
		if !ok {
			return fmt.Errorf("staging path %s links to %s, not to an SMB share: %w", r.StagingPath, info.Target, host.ErrConflict)
		}
		roots = append(roots, root)
		if known && journalRoot != root {
			// The host is the truth; release the share the journal
			// names too, in case an earlier stage left it mapped.
			log.V(2).Info("Staging link points to another share than the stage journal records",
				"remotePath", root, "journalRemotePath", journalRoot)
			roots = append(roots, journalRoot)
		}
		log.V(4).Info("Removing staging link", "remotePath", info.Target)
		if err := b.h.Files.Remove(ctx, r.StagingPath); err != nil && !errors.Is(err, host.ErrNotFound) {
			return fmt.Errorf("staging path: %w", err)
		}
		if use != nil {
			use.Gone()
		}
		if err := b.h.Files.MakeDir(ctx, r.StagingPath); err != nil {
			return fmt.Errorf("recreate the staging directory: %w", err)
		}
	case host.PathDir, host.PathMissing:
		// Not staged (any more). From the spec: reply 0 OK; but first
		// finish what a crashed unstage may have left undone.
		if !known {
			log.V(4).Info("Nothing staged at the staging path")
			return nil
		}
		use.Gone()
		log.V(4).Info("Staging link already removed; releasing the share", "remotePath", journalRoot)
		roots = append(roots, journalRoot)
	default:
		return fmt.Errorf("staging path %s is a %s, not a link made by this plugin: %w", r.StagingPath, info.Kind, host.ErrConflict)
	}

	if r.Entry.VolumeID == "" {
		// The journal does not know this volume at this path (its state
		// was lost): the other users of the share cannot be counted, so
		// the mapping stays. The last unstage of a volume the journal
		// knows removes it.
		log.V(2).Info("Volume unknown to the stage journal; keeping the global mapping of its share", "remotePath", roots[0])
		return nil
	}
	if use != nil {
		use.Done()
	}
	for _, root := range roots {
		if err := b.releaseShare(ctx, r.VolumeID, root, true); err != nil {
			return err
		}
	}
	return nil
}

// releaseShare removes the share's global mapping when no volume other
// than volumeID uses it, as a transition of the share (shared.Set.Release:
// a volume still registered with the share takes the decision over). With
// trustAbsent, a share this process unmapped and nothing mapped since
// needs no host call.
func (b *Backend) releaseShare(ctx context.Context, volumeID, root string, trustAbsent bool) error {
	log := klog.FromContext(ctx).WithValues("remotePath", root)
	if b.opts.KeepMappings {
		log.V(4).Info("Keeping the global mapping (mappings are kept by configuration)")
		return nil
	}
	_, err := b.shares.Release(ctx, resourceKey(root), volumeID, trustAbsent, func(ctx context.Context, t *shared.Transition[mapped]) (shared.State, error) {
		if other := b.otherUser(ctx, t, root); other != "" {
			log.V(4).Info("Keeping the global mapping: other staged volumes use it", "volumes", []string{other})
			return t.Prev(), nil
		}
		return b.unmap(ctx, root)
	})
	return err
}

// unmap removes the share's global mapping and its note.
func (b *Backend) unmap(ctx context.Context, root string) (shared.State, error) {
	log := klog.FromContext(ctx).WithValues("remotePath", root)
	log.V(2).Info("Removing the global mapping: no staged volume uses the share any more")
	if err := b.h.SMB.Unmap(ctx, root); err != nil {
		if !errors.Is(err, host.ErrNotFound) {
			return shared.Unknown, err
		}
		log.V(4).Info("Global mapping already gone")
	}
	b.forgetMaker(ctx, root)
	return shared.Absent, nil
}

// otherUser returns a volume, other than the transition's own, that uses
// the share, or "" when none does: a volume registered with the share that
// relies on it, else one whose staging path is a link into the share (the
// journal says where to look, the host decides). A staging path that
// cannot be inspected counts too: keeping a mapping nobody needs costs far
// less than removing one in use.
func (b *Backend) otherUser(ctx context.Context, t *shared.Transition[mapped], root string) string {
	log := klog.FromContext(ctx)
	inUse, check, err := t.Others(ctx)
	if err != nil {
		// Without the records the users cannot be counted: count one, so
		// that the mapping stays.
		log.Error(err, "Cannot read the volumes of the share from the stage journal; keeping its global mapping", "remotePath", root)
		return "(unknown: the stage journal cannot be read)"
	}
	if len(inUse) > 0 {
		return inUse[0]
	}
	id, _ := shared.FirstUser(ctx, check, func(ctx context.Context, e journal.Entry) (bool, error) {
		info, err := b.h.Files.Stat(ctx, e.StagingPath)
		if err != nil {
			if ctx.Err() == nil {
				log.V(2).Info("Cannot inspect the staging path of another volume of the share; counting it as a user",
					"volumeID", e.VolumeID, "stagingTargetPath", e.StagingPath, "err", err)
			}
			return ctx.Err() == nil, nil
		}
		if info.Kind != host.PathSymlink {
			return false, nil
		}
		r, ok := shareRoot(info.Target)
		return ok && r == root, nil
	})
	return id
}

// shareRoot returns the lower-cased share root \\server\share of a UNC
// path or link target (\\server\share\dir\, \\?\UNC\server\share\dir\),
// in the form contract.SMBSpec.MappingPath gives, or false when the path
// is not on a share.
func shareRoot(p string) (string, bool) {
	c := winpath.CanonicalTarget(p)
	rest, ok := strings.CutPrefix(c, `\\`)
	if !ok || strings.HasPrefix(rest, `?\`) || strings.HasPrefix(rest, `.\`) {
		return "", false
	}
	parts := strings.SplitN(rest, `\`, 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	return strings.ToLower(`\\` + parts[0] + `\` + parts[1]), true
}

// uncPath returns a link target in the plain UNC form \\server\share\dir,
// keeping its case, or false when it is not on a share.
func uncPath(p string) (string, bool) {
	if _, ok := shareRoot(p); !ok {
		return "", false
	}
	s := strings.ReplaceAll(p, "/", `\`)
	for _, prefix := range []string{`\\?\UNC\`, `\??\UNC\`} {
		if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
			s = `\\` + s[len(prefix):]
		}
	}
	return strings.TrimRight(s, `\`), true
}
