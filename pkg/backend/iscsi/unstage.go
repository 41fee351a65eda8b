package iscsi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Unstage unmounts the volume (flush, unmount, offline, as for disks), then
// logs out of its target when no other staged volume uses a LUN of it, and
// removes the portals that nothing uses any more. A staging path with
// nothing mounted still runs the release step, so a retry after a crash
// between unmount and logout finishes the work.
//
// The volume is registered with its target (b.targets) from before the
// unmount until its disk is offline: once the mount point is gone, another
// volume's unstage no longer counts this one from the host, and logging
// out then would take the disk away (and free its number for another disk)
// before this unstage takes it offline. The last volume out logs out, once.
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
	uctx, use, err := b.targets.Unstage(ctx, resourceKey(iqn), r.VolumeID)
	if err != nil {
		return err
	}
	defer use.Done()
	num, err := b.disks.Unmount(uctx, r.StagingPath)
	if err != nil {
		return err
	}
	if num == nil {
		// Nothing was mounted: an earlier unstage may have crashed between
		// the unmount and the offline. Finish it before the release.
		if err := b.offlineLUN(uctx, rec); err != nil {
			return err
		}
	}
	use.Gone()
	use.Done()
	_, err = b.releaseTarget(ctx, release{volumeID: r.VolumeID, iqn: iqn, portals: rec.Portals, trustAbsent: true})
	return err
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
		return err
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

// release is what releaseTarget does.
type release struct {
	// volumeID is the volume being unstaged ("": none; the failed volume
	// of a rollback counts itself from the host).
	volumeID string
	iqn      string
	// portals are removed, once the target is logged out, when nothing
	// uses them; added (the portals a failed stage registered) are
	// removed when nothing uses them whether the target is logged out or
	// not.
	portals, added []host.Portal
	// match selects the sessions to log out (nil: all of them);
	// keepSessions logs out of none (a failed stage that created none).
	match        func(host.ISCSISession) bool
	keepSessions bool
	// trustAbsent: a target this process logged out and nothing logged
	// in to since needs no host call.
	trustAbsent bool
	// dryRun decides without changing the host; unused, when set,
	// receives whether the target is unused (ReleaseUnused: its caller is
	// not one of the target's volumes, so only a target a journal entry
	// names may be logged out).
	dryRun bool
	unused *bool
}

// releaseTarget logs out of the target unless another volume uses it, then
// removes the portals no longer used, as a transition of the target
// (shared.Set.Release: a volume still registered with the target takes
// the decision over). It returns the target's state afterwards.
func (b *Backend) releaseTarget(ctx context.Context, r release) (shared.State, error) {
	return b.targets.Release(ctx, resourceKey(r.iqn), r.volumeID, r.trustAbsent, func(ctx context.Context, t *shared.Transition[loggedIn]) (shared.State, error) {
		log := klog.FromContext(ctx)
		user, err := b.otherUser(ctx, t, r.iqn)
		if err != nil {
			return t.Prev(), err
		}
		if user == "" && r.unused != nil {
			// No journal entry names the target any more: sessions it
			// has now are someone else's (the plugin's went with its last
			// volume), and none means nothing is left to do, but for
			// persistent logins the plugin's record of the target's logins
			// still names (a login whose target did not answer at boot
			// has no session, and the unstage that logged out the others
			// did not see it).
			entries, err := b.store.ByResource(ctx, t.Key())
			if err != nil {
				return t.Prev(), fmt.Errorf("read the volumes of target %s from the stage journal: %w", r.iqn, err)
			}
			if len(entries) == 0 {
				sessions, err := b.h.ISCSI.Sessions(ctx, r.iqn)
				if err != nil {
					return t.Prev(), err
				}
				if len(sessions) > 0 {
					return t.Prev(), nil
				}
				*r.unused = true
				if _, noted, err := b.store.Note(ctx, targetNoteKey(r.iqn)); err != nil || !noted || r.dryRun {
					return shared.Absent, err
				}
				if err := b.removePersistentLogins(ctx, r.iqn); err != nil {
					return shared.Unknown, err
				}
				return shared.Absent, b.putTargetRecord(ctx, r.iqn, targetRecord{}, nil)
			}
		}
		next := t.Prev()
		portals := r.added
		if user != "" {
			log.V(4).Info("Other staged volumes use the target; keeping its sessions", "volumes", []string{user})
		} else if r.unused != nil {
			*r.unused = true
		}
		if user == "" && !r.dryRun && !r.keepSessions {
			through, err := b.logout(ctx, r.iqn, r.match)
			if err != nil {
				return shared.Unknown, err
			}
			next = shared.Unknown // only some sessions went: the host decides next time
			if r.match == nil {
				next = shared.Absent
				b.forgetLogin(ctx, r.iqn)
			}
			portals = slices.Concat(portals, r.portals, through, b.listedPortals(ctx, t))
		}
		if b.opts.KeepPortals || r.dryRun {
			return next, nil
		}
		if err := b.removeUnusedPortals(ctx, portals); err != nil {
			return shared.Unknown, err
		}
		return next, nil
	})
}

// listedPortals returns the portals the target's other journal entries
// list: volumes that no longer use the target (the transition found none
// that does), whose portals go with it when nothing else uses them.
func (b *Backend) listedPortals(ctx context.Context, t *shared.Transition[loggedIn]) []host.Portal {
	entries, err := b.store.ByResource(ctx, t.Key())
	if err != nil {
		return nil // the volume's own portals are still removed
	}
	var out []host.Portal
	for _, e := range entries {
		if rec, ok := recordOf(e); ok {
			out = append(out, rec.Portals...)
		}
	}
	return out
}

// otherUser returns a volume, other than the transition's own, that uses
// the target, or "" when none does: a volume registered with the target
// that relies on it, else one the journal records on the target whose
// staging path still holds a volume mount point of a disk reached through
// the target. A mount point whose volume the host cannot place (its disk
// offline or gone, as after a reboot before the volume is staged again)
// counts too: a session is never torn down under a volume that may still
// use it.
func (b *Backend) otherUser(ctx context.Context, t *shared.Transition[loggedIn], iqn string) (string, error) {
	inUse, check, err := t.Others(ctx)
	if err != nil {
		return "", err
	}
	if len(inUse) > 0 {
		return inUse[0], nil
	}
	var (
		mu    sync.Mutex
		disks map[uint32]bool
	)
	targetDisks := func(ctx context.Context) (map[uint32]bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if disks != nil {
			return disks, nil
		}
		d, err := b.targetDisks(ctx, iqn)
		if err == nil {
			disks = d
		}
		return d, err
	}
	return shared.FirstUser(ctx, check, func(ctx context.Context, e journal.Entry) (bool, error) {
		info, err := b.h.Files.Stat(ctx, e.StagingPath)
		if err != nil {
			return false, fmt.Errorf("the staging path of volume %q: %w", e.VolumeID, err)
		}
		if info.Kind != host.PathMountPoint {
			return false, nil // not staged (any more): a stale or failed record
		}
		num, err := b.h.Volumes.DiskNumber(ctx, info.Target)
		if errors.Is(err, host.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("the staging path of volume %q: %w", e.VolumeID, err)
		}
		nums, err := targetDisks(ctx)
		if err != nil {
			return false, err
		}
		return nums[num], nil
	})
}

// logout logs out of the target's sessions that match (all when match is
// nil), unregistering persistent ones first so that Windows does not log
// in again at boot, and returns the portals of the sessions it logged out
// of. Sessions already gone are fine. Windows refusing because the
// target's disks are in use fails with host.ErrInUse.
func (b *Backend) logout(ctx context.Context, iqn string, match func(host.ISCSISession) bool) (_ []host.Portal, err error) {
	log := klog.FromContext(ctx)
	sessions, err := b.h.ISCSI.Sessions(ctx, iqn)
	if err != nil {
		return nil, err
	}
	rec, err := b.targetRecordOf(ctx, iqn)
	if err != nil {
		return nil, err
	}
	var portals []host.Portal
	remaining := len(sessions)
	// The record forgets the sessions logged out, also when a later one
	// fails: a session it still names but the host no longer has would
	// only be dropped at the next write.
	defer func() {
		if remaining == 0 {
			err = errors.Join(err, b.putTargetRecord(ctx, iqn, targetRecord{}, nil))
		} else {
			err = errors.Join(err, b.putTargetRecord(ctx, iqn, rec, nil))
		}
	}()
	for _, s := range sessions {
		if match != nil && !match(s) {
			continue
		}
		if s.IsPersistent {
			// Unregister before the logout: the session object is gone
			// afterwards (csi-proxy does the same: kubernetes-csi/csi-proxy@eeba470
			// pkg/os/iscsi/api.go, DisconnectTarget).
			log.V(4).Info("Removing persistent login", "sessionID", s.SessionID, "portal", s.TargetPortal.String())
			if err := b.h.ISCSI.Unregister(ctx, s); err != nil && !errors.Is(err, host.ErrNotFound) {
				return portals, err
			}
		}
		log.V(2).Info("Logging out of target", "sessionID", s.SessionID, "portal", s.TargetPortal.String())
		switch err := b.h.ISCSI.Disconnect(ctx, s); {
		case err == nil, errors.Is(err, host.ErrNotFound):
			remaining--
			portals = append(portals, s.TargetPortal)
			if r, ok := rec.Sessions[s.SessionID]; ok {
				if pt, err := contract.ParsePortal(r.Portal); err == nil {
					portals = append(portals, pt) // the portal it was made through
				}
				delete(rec.Sessions, s.SessionID)
			}
		case errors.Is(err, host.ErrInUse):
			return portals, fmt.Errorf("something still holds the disks of target %s: %w", iqn, err)
		default:
			return portals, err
		}
	}
	if remaining == 0 && match == nil {
		// The last session is gone: a persistent login that has none (its
		// target did not answer at boot) would still log in at the next
		// boot.
		if err := b.removePersistentLogins(ctx, iqn); err != nil {
			return portals, err
		}
	}
	if remaining == 0 {
		if err := b.forgetMutualTarget(ctx, iqn); err != nil {
			return portals, err
		}
	}
	return portals, nil
}

// removePersistentLogins removes the persistent logins of target iqn that
// Windows still lists (host.ISCSI.PersistentLogins: iscsicli
// ListPersistentTargets shows the same), such as one whose target did not
// answer at boot and so has no session to unregister. One already gone is
// fine.
func (b *Backend) removePersistentLogins(ctx context.Context, iqn string) error {
	logins, err := b.h.ISCSI.PersistentLogins(ctx)
	if err != nil {
		return err
	}
	for _, l := range logins {
		if !sameIQN(l.TargetNodeAddress, iqn) {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removing a persistent login without a session", "portal", l.Portal.String())
		if err := b.h.ISCSI.RemovePersistentLogin(ctx, l); err != nil && !errors.Is(err, host.ErrNotFound) {
			return err
		}
	}
	return nil
}

// removeUnusedPortals removes each of portals that no session of any target
// goes through and that no staged volume lists. It runs within a
// transition of the target whose volumes listed them.
func (b *Backend) removeUnusedPortals(ctx context.Context, portals []host.Portal) error {
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
		return err
	}
	registered, err := b.h.ISCSI.Portals(ctx)
	if err != nil {
		return err
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
		why, _, err := b.portalUser(ctx, k, sessions)
		if err != nil {
			return err
		}
		if why != "" {
			log.V(4).Info("Keeping target portal", "portal", k, "usedBy", why)
			continue
		}
		if err := b.removePortal(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// removePortal removes a target portal; one already gone is fine. The
// caller holds the portal's lock.
func (b *Backend) removePortal(ctx context.Context, p host.Portal) error {
	k := portalKey(p)
	klog.FromContext(ctx).V(2).Info("Removing target portal", "portal", k)
	if err := b.h.ISCSI.RemovePortal(ctx, p); err != nil && !errors.Is(err, host.ErrNotFound) {
		return err
	}
	return nil
}

// portalUser names what still uses the portal with key k, or returns ""
// when nothing does: a session of any target through it, a volume being
// staged or unstaged on a target that lists it, or a volume that lists it
// and whose staging path is a volume mount point. The volumes this process
// saw leave their target are not asked about. When nothing uses the
// portal, listed reports whether any journal entry lists it at all.
func (b *Backend) portalUser(ctx context.Context, k string, sessions []host.ISCSISession) (why string, listed bool, err error) {
	through, err := b.sessionThrough(ctx, k, sessions)
	if err != nil || through != nil {
		if through != nil {
			why = "a session of target " + through.TargetNodeAddress
		}
		return why, true, err
	}
	entries, err := b.store.ByBackend(ctx, string(contract.KindISCSI))
	if err != nil {
		return "", false, fmt.Errorf("read the iSCSI volumes from the stage journal: %w", err)
	}
	var check []journal.Entry
	for _, e := range entries {
		rec, ok := recordOf(e)
		if !ok || !rec.listsPortal(k) {
			continue
		}
		listed = true
		if b.targets.IsGone(e.ResourceKey, e.VolumeID) {
			continue
		}
		if b.targets.Registered(e.ResourceKey, e.VolumeID) {
			return fmt.Sprintf("volume %q", e.VolumeID), true, nil
		}
		check = append(check, e)
	}
	id, err := shared.FirstUser(ctx, check, func(ctx context.Context, e journal.Entry) (bool, error) {
		info, err := b.h.Files.Stat(ctx, e.StagingPath)
		if err != nil {
			return false, fmt.Errorf("the staging path of volume %q: %w", e.VolumeID, err)
		}
		return info.Kind == host.PathMountPoint, nil
	})
	if id != "" {
		return fmt.Sprintf("volume %q", id), true, nil
	}
	return "", listed, err
}

// sessionThrough returns a session that goes through the portal with key
// k, or nil: one whose connection answers on the portal's address, one the
// record of its target says was made through it, or one whose address the
// portal's name resolves to (paths.go).
func (b *Backend) sessionThrough(ctx context.Context, k string, sessions []host.ISCSISession) (*host.ISCSISession, error) {
	pt, err := contract.ParsePortal(k)
	if err != nil {
		return nil, fmt.Errorf("portal %q: %w", k, err)
	}
	byTarget := map[string][]host.ISCSISession{}
	for i, s := range sessions {
		if portalKey(s.TargetPortal) == k {
			return &sessions[i], nil
		}
		iqn := normalizeIQN(s.TargetNodeAddress)
		byTarget[iqn] = append(byTarget[iqn], s)
	}
	for iqn, ss := range byTarget {
		rec, err := b.targetRecordOf(ctx, iqn)
		if err != nil {
			return nil, err
		}
		p, err := b.pathsOf(ctx, rec, []host.Portal{pt}, ss)
		if err != nil {
			return nil, err
		}
		for i, s := range ss {
			if p.through[s.SessionID] == k {
				return &ss[i], nil
			}
		}
	}
	return nil, nil
}
