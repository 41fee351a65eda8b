package iscsi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

var _ backend.Releaser = (*Backend)(nil)

// portalKeyPrefix starts the resource key of a target portal (PortalKey).
const portalKeyPrefix = "iscsi-portal:"

// TargetKey returns the resource key of target iqn, as the journal records
// the target's volumes under it.
func TargetKey(iqn string) string { return resourceKey(iqn) }

// PortalID returns the canonical "address:port" of a portal, as the
// backend compares portals and lists them in its records (port 0 is 3260,
// host names in lower case); tools that take stock of a node name portals
// so.
func PortalID(p host.Portal) string { return portalKey(p) }

// PortalKey returns the resource key of a target portal, for
// ReleaseUnused.
func PortalKey(p host.Portal) string { return portalKeyPrefix + portalKey(p) }

// Owns implements backend.Releaser: the keys of targets and portals.
func (b *Backend) Owns(key string) bool {
	return strings.HasPrefix(key, resourceKeyPrefix) || strings.HasPrefix(key, portalKeyPrefix)
}

// ReleaseUnused implements backend.Releaser.
//
// For a target (key from TargetKey) it is the release of the target's last
// unstage: the target is unused when no volume is being staged or unstaged
// on it and no volume of the journal has a LUN of it mounted; with remove,
// its sessions are logged out (persistent logins removed first) and the
// portals they went through, and that its volumes list, are removed when
// nothing else uses them (unless Options.KeepPortals).
//
// Only what the plugin's records name is ever unused: a target with
// sessions or a registered portal that no journal entry names (any more)
// is someone else's and is left alone, however stale the caller's view;
// one the host no longer has is unused and needs nothing.
//
// For a portal (key from PortalKey) the portal is unused when no session of
// any target goes through it and no staged volume (or volume being staged
// or unstaged) lists it; with remove it is removed, under the portal's
// lock, which a stage holds from adding a portal until its login through it
// is done.
func (b *Backend) ReleaseUnused(ctx context.Context, key string, remove bool) (bool, error) {
	if addr, ok := strings.CutPrefix(key, portalKeyPrefix); ok {
		p, err := contract.ParsePortal(addr)
		if err != nil {
			return false, fmt.Errorf("%q is not the key of an iSCSI target portal (%s): %w", key, err.Error(), host.ErrInvalid)
		}
		return b.releasePortal(ctx, p, remove)
	}
	iqn, ok := strings.CutPrefix(key, resourceKeyPrefix)
	if !ok || iqn == "" {
		return false, fmt.Errorf("%q is not the key of an iSCSI target: %w", key, host.ErrInvalid)
	}
	unused := false
	_, err := b.releaseTarget(ctx, release{iqn: iqn, dryRun: !remove, unused: &unused})
	return unused, err
}

// releasePortal decides about one portal (ReleaseUnused).
func (b *Backend) releasePortal(ctx context.Context, p host.Portal, remove bool) (bool, error) {
	ctx, unlock, err := b.lockPortals(ctx, []host.Portal{p})
	if err != nil {
		return false, err
	}
	defer unlock()
	sessions, err := b.h.ISCSI.Sessions(ctx, "")
	if err != nil {
		return false, err
	}
	why, listed, err := b.portalUser(ctx, portalKey(p), sessions)
	if err != nil || why != "" {
		return false, err
	}
	// A portal no journal entry lists is someone else's when the host
	// has it (the plugin's went with its last volume), and needs nothing
	// when it does not: checked under the portal's lock, so the answer
	// cannot go stale before the removal it guards.
	if !listed {
		registered, err := b.h.ISCSI.Portals(ctx)
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(registered, func(q host.Portal) bool { return portalKey(q) == portalKey(p) }), nil
	}
	if !remove {
		return true, nil
	}
	if err := b.removePortal(ctx, p); err != nil {
		return false, err
	}
	return true, nil
}
