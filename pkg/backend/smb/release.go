package smb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

var _ backend.Releaser = (*Backend)(nil)

// ShareKey returns the resource key of the share a global mapping's
// remote path (or any path on the share) names, as the journal records
// the share's volumes under it, and false when the path is not on a share.
func ShareKey(remotePath string) (string, bool) {
	root, ok := shareRoot(remotePath)
	if !ok {
		return "", false
	}
	return resourceKey(root), true
}

// Owns implements backend.Releaser: the keys of shares.
func (b *Backend) Owns(key string) bool { return strings.HasPrefix(key, resourceKeyPrefix) }

// ReleaseUnused implements backend.Releaser for a share (key from
// ShareKey): the share is unused when no volume is being staged or
// unstaged on it and no volume of the journal links into it; with remove,
// its global mapping and the note of its user are then removed, as the
// unstage of its last volume does (also with Options.KeepMappings, which
// only keeps mappings at unstage). Only a mapping the plugin made (its
// note is in the journal) is ever unused: the note is checked inside the
// transition, so a mapping someone made after the plugin removed its own
// is left alone however stale the caller's view; a share with no mapping
// left is unused and needs nothing.
func (b *Backend) ReleaseUnused(ctx context.Context, key string, remove bool) (bool, error) {
	root, ok := strings.CutPrefix(key, resourceKeyPrefix)
	if !ok || root == "" {
		return false, fmt.Errorf("%q is not the key of an SMB share: %w", key, host.ErrInvalid)
	}
	unused := false
	st, err := b.shares.Release(ctx, key, "", false, func(ctx context.Context, t *shared.Transition[mapped]) (shared.State, error) {
		if b.otherUser(ctx, t, root) != "" {
			return t.Prev(), nil
		}
		if _, ours := b.maker(ctx, root); !ours {
			// No note: the plugin did not make the mapping there is now
			// (its own was removed since the caller looked, and someone
			// mapped the share again), or there is none left.
			if _, err := b.h.SMB.Mapping(ctx, root); !errors.Is(err, host.ErrNotFound) {
				if err != nil {
					return t.Prev(), err
				}
				return t.Prev(), nil // someone else's mapping: never touched
			}
			unused = true
			return shared.Absent, nil
		}
		unused = true
		if !remove {
			return t.Prev(), nil
		}
		return b.unmap(ctx, root)
	})
	if err != nil {
		return false, err
	}
	return unused && (!remove || st == shared.Absent), nil
}
