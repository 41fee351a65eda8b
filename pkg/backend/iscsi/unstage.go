package iscsi

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Unstage unmounts the volume (flush, unmount, offline, as for disks), then
// logs out of its target when no other staged volume uses a LUN of it, and
// removes the volume's portals that nothing uses any more. A staging path
// with nothing mounted still runs the release step, so a retry after a
// crash between unmount and logout finishes the work.
func (b *Backend) Unstage(ctx context.Context, r backend.UnstageRequest) error {
	log := klog.FromContext(ctx)
	rec, known := recordOf(r.Entry)
	iqn := rec.IQN
	if !known {
		// The journal does not know the volume at this path: nothing says
		// which target it used, so its session is left alone.
		if _, err := b.disks.Unmount(ctx, r.StagingPath); err != nil {
			return err
		}
		log.V(2).Info("Unstaged a volume the journal does not know; its iSCSI session, if any, is kept",
			"stagingTargetPath", r.StagingPath)
		return nil
	}
	ctx = klog.NewContext(ctx, log.WithValues("iqn", iqn))
	// The target's lock is taken before the unmount: once the mount point
	// is gone, another volume's unstage would no longer count this one and
	// could log out of the target, taking the disk away (and freeing its
	// number for another disk) before this unstage takes it offline.
	ctx, unlock, err := b.locks.LockUntilIdle(ctx, targetLock(iqn))
	if err != nil {
		return fmt.Errorf("wait for other operations on target %s: %w", iqn, err)
	}
	defer unlock()
	num, err := b.disks.Unmount(ctx, r.StagingPath)
	if err != nil {
		return err
	}
	if num == nil {
		// Nothing was mounted: an earlier unstage may have crashed between
		// the unmount and the offline. Finish it before the release.
		if err := b.offlineLUN(ctx, rec); err != nil {
			return err
		}
	}
	return b.release(ctx, r.VolumeID, iqn, rec.Portals)
}

// offlineLUN takes the disk of the record's LUN offline when it is online
// and none of its volumes is mounted (disk.Backend.OfflineUnused). A LUN
// without a disk (no session, or not reported yet) needs nothing.
func (b *Backend) offlineLUN(ctx context.Context, rec Record) error {
	nums, err := b.targetDisks(ctx, rec.IQN)
	if err != nil || len(nums) == 0 {
		return err
	}
	disks, err := b.h.Disks.List(ctx)
	if err != nil {
		return fmt.Errorf("list disks: %w", err)
	}
	for _, d := range disks {
		if loc, ok := host.ParseLocation(d.Location); ok && nums[d.Number] && *loc.LUN == rec.LUN {
			if err := b.disks.OfflineUnused(ctx, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// release logs out of the target unless another volume uses it, then
// removes the portals no longer used. The caller holds the target's lock.
func (b *Backend) release(ctx context.Context, volumeID, iqn string, portals []host.Portal) error {
	log := klog.FromContext(ctx)
	users, err := b.otherUsers(ctx, iqn, volumeID)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		log.V(4).Info("Other staged volumes use the target; keeping its sessions", "volumes", users)
	} else if err := b.logout(ctx, iqn, nil); err != nil {
		return err
	}
	if b.opts.KeepPortals {
		return nil
	}
	return b.removeUnusedPortals(ctx, volumeID, portals)
}

// otherUsers returns the IDs of the volumes other than volumeID that the
// journal records on target iqn and whose staging path still holds a
// volume mount point of a disk reached through the target. A mount point
// whose volume the host cannot place (its disk offline or gone, as after a
// reboot before the volume is staged again) counts too: a session is never
// torn down under a volume that may still use it.
func (b *Backend) otherUsers(ctx context.Context, iqn, volumeID string) ([]string, error) {
	entries, err := b.store.ByResource(ctx, resourceKey(iqn))
	if err != nil {
		return nil, fmt.Errorf("read the volumes of target %s from the stage journal: %w", iqn, err)
	}
	var users []string
	var disks map[uint32]bool
	for _, e := range entries {
		if e.VolumeID == volumeID || e.StagingPath == "" {
			continue
		}
		info, err := b.h.Files.Stat(ctx, e.StagingPath)
		if err != nil {
			return nil, fmt.Errorf("inspect staging path %s of volume %q: %w", e.StagingPath, e.VolumeID, err)
		}
		if info.Kind != host.PathMountPoint {
			continue // not staged (any more): a stale or failed record
		}
		num, err := b.h.Volumes.DiskNumber(ctx, info.Target)
		if errors.Is(err, host.ErrNotFound) {
			users = append(users, e.VolumeID)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("find the disk of volume %s staged at %s: %w", info.Target, e.StagingPath, err)
		}
		if disks == nil {
			if disks, err = b.targetDisks(ctx, iqn); err != nil {
				return nil, err
			}
		}
		if disks[num] {
			users = append(users, e.VolumeID)
		}
	}
	return users, nil
}

// logout logs out of the target's sessions that match (all when match is
// nil), unregistering persistent ones first so that Windows does not log
// in again at boot. Sessions already gone are fine. Windows refusing
// because the target's disks are in use fails with host.ErrInUse.
func (b *Backend) logout(ctx context.Context, iqn string, match func(host.ISCSISession) bool) error {
	log := klog.FromContext(ctx)
	sessions, err := b.h.ISCSI.Sessions(ctx, iqn)
	if err != nil {
		return fmt.Errorf("list sessions of target %s: %w", iqn, err)
	}
	remaining := len(sessions)
	for _, s := range sessions {
		if match != nil && !match(s) {
			continue
		}
		if s.IsPersistent {
			// Unregister before the logout: the session object is gone
			// afterwards (csi-proxy does the same, csi-proxy.md §2.6).
			log.V(4).Info("Removing persistent login", "sessionID", s.SessionID, "portal", s.TargetPortal.String())
			if err := b.h.ISCSI.Unregister(ctx, s); err != nil && !errors.Is(err, host.ErrNotFound) {
				return fmt.Errorf("remove persistent login of target %s (session %s): %w", iqn, s.SessionID, err)
			}
		}
		log.V(2).Info("Logging out of target", "sessionID", s.SessionID, "portal", s.TargetPortal.String())
		switch err := b.h.ISCSI.Disconnect(ctx, s); {
		case err == nil, errors.Is(err, host.ErrNotFound):
			remaining--
		case errors.Is(err, host.ErrInUse):
			return fmt.Errorf("log out of target %s (session %s): something still holds its disks: %w", iqn, s.SessionID, err)
		default:
			return fmt.Errorf("log out of target %s (session %s): %w", iqn, s.SessionID, err)
		}
	}
	if remaining == 0 {
		if err := b.forgetMutualTarget(ctx, iqn); err != nil {
			return err
		}
	}
	return nil
}

// removeUnusedPortals removes each of portals that no session of any target
// goes through and that no other staged volume lists.
func (b *Backend) removeUnusedPortals(ctx context.Context, volumeID string, portals []host.Portal) error {
	if len(portals) == 0 {
		return nil
	}
	log := klog.FromContext(ctx)
	ctx, unlock, err := b.lockPortals(ctx, portals)
	if err != nil {
		return err
	}
	defer unlock()
	sessions, err := b.h.ISCSI.Sessions(ctx, "")
	if err != nil {
		return fmt.Errorf("list iSCSI sessions: %w", err)
	}
	registered, err := b.h.ISCSI.Portals(ctx)
	if err != nil {
		return fmt.Errorf("list target portals: %w", err)
	}
	isRegistered := map[string]bool{}
	for _, p := range registered {
		isRegistered[portalKey(p)] = true
	}
	done := map[string]bool{}
	for _, p := range portals {
		k := portalKey(p)
		if done[k] || !isRegistered[k] {
			continue
		}
		done[k] = true
		why, err := b.portalUser(ctx, k, volumeID, sessions)
		if err != nil {
			return err
		}
		if why != "" {
			log.V(4).Info("Keeping target portal", "portal", k, "usedBy", why)
			continue
		}
		log.V(2).Info("Removing target portal", "portal", k)
		if err := b.h.ISCSI.RemovePortal(ctx, p); err != nil && !errors.Is(err, host.ErrNotFound) {
			return fmt.Errorf("remove target portal %s: %w", k, err)
		}
	}
	return nil
}

// portalUser names what still uses the portal with key k, or returns ""
// when nothing does: a session of any target through it, or another
// volume that lists it and whose staging path is a volume mount point.
func (b *Backend) portalUser(ctx context.Context, k, volumeID string, sessions []host.ISCSISession) (string, error) {
	for _, s := range sessions {
		if portalKey(s.TargetPortal) == k {
			return "a session of target " + s.TargetNodeAddress, nil
		}
	}
	entries, err := b.store.ByBackend(ctx, string(contract.KindISCSI))
	if err != nil {
		return "", fmt.Errorf("read the iSCSI volumes from the stage journal: %w", err)
	}
	for _, e := range entries {
		if rec, ok := recordOf(e); e.VolumeID == volumeID || !ok || !rec.listsPortal(k) {
			continue
		}
		info, err := b.h.Files.Stat(ctx, e.StagingPath)
		if err != nil {
			return "", fmt.Errorf("inspect staging path %s of volume %q: %w", e.StagingPath, e.VolumeID, err)
		}
		if info.Kind == host.PathMountPoint {
			return fmt.Sprintf("volume %q", e.VolumeID), nil
		}
	}
	return "", nil
}
