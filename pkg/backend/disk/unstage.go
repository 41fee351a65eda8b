package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Unstage unmounts the volume from the staging path and, when configured,
// takes its disk offline. An already unstaged path succeeds; when the
// journal still records the volume (the node drops the record only once
// Unstage succeeded), its disk is taken offline then too, so that a crash
// between the unmount and the offline converges on the retry.
func (b *Backend) Unstage(ctx context.Context, r backend.UnstageRequest) error {
	num, err := b.Unmount(ctx, r.StagingPath)
	if err != nil || num != nil || !b.opts.OfflineOnUnstage {
		return err
	}
	d, err := b.Locate(ctx, r.Entry)
	switch {
	case errors.Is(err, errListDisks):
		return err
	case errors.Is(err, backend.ErrNoRecord), errors.Is(err, host.ErrNotFound):
		// Not a disk the journal knows (nothing says which disk to take
		// offline), or detached: nothing to take offline.
		return nil
	case err != nil:
		// Ambiguous or critical: never guess which disk to take offline.
		klog.FromContext(ctx).V(2).Info("Not taking a disk offline after an earlier unstage", "err", err)
		return nil
	}
	return b.OfflineUnused(ctx, d)
}

// OfflineUnused takes disk d offline, when the backend is configured to
// (Options.OfflineOnUnstage), unless it is critical, already offline, or
// one of its volumes is still mounted somewhere (a drive letter or a mount
// folder among its partitions' access paths). It finishes the offline step
// of an unstage that crashed after the unmount.
func (b *Backend) OfflineUnused(ctx context.Context, d host.Disk) error {
	if !b.opts.OfflineOnUnstage || d.IsOffline || d.IsCritical() {
		return nil
	}
	parts, err := b.h.Disks.Partitions(ctx, d)
	if err != nil {
		return err
	}
	for _, p := range parts {
		for _, ap := range p.AccessPaths {
			if !strings.HasPrefix(strings.ToLower(ap), `\\?\volume{`) {
				klog.FromContext(ctx).V(4).Info("Keeping disk online: a volume of it is mounted", "diskNumber", d.Number, "path", ap)
				return nil
			}
		}
	}
	return b.offlineDisk(ctx, d)
}

// Unmount flushes and removes the volume mount point at staging, leaving
// the empty directory, then offlines the volume's disk when the backend is
// configured to. It returns the number of the disk the volume was on, or nil
// when nothing was mounted or the disk is gone.
func (b *Backend) Unmount(ctx context.Context, staging string) (*uint32, error) {
	log := klog.FromContext(ctx)
	info, err := b.h.Files.Stat(ctx, staging)
	if err != nil {
		return nil, fmt.Errorf("staging path: %w", err)
	}
	switch info.Kind {
	case host.PathMissing, host.PathDir:
		// From the spec: if the volume is not staged at the path, the
		// plugin MUST reply 0 OK.
		log.V(4).Info("Nothing mounted at the staging path", "stagingTargetPath", staging)
		return nil, nil
	case host.PathMountPoint:
	default:
		return nil, fmt.Errorf("staging path %s is a %s, not a volume mount point: %w", staging, info.Kind, host.ErrConflict)
	}

	guid := info.Target
	var diskNumber *uint32
	num, err := b.h.Volumes.DiskNumber(ctx, guid)
	switch {
	case err == nil:
		diskNumber = &num
	case errors.Is(err, host.ErrNotFound):
		// The disk was detached under us; the mount point is all that is left.
		log.V(2).Info("Volume's disk is gone; removing the stale mount point", "volumeGUID", guid)
	default:
		return nil, fmt.Errorf("staging path %s: %w", staging, err)
	}

	if diskNumber != nil {
		if err := b.flush(ctx, guid, *diskNumber); err != nil {
			return nil, err
		}
	}
	log.V(4).Info("Removing volume mount point", "volumeGUID", guid, "stagingTargetPath", staging)
	if err := b.h.Volumes.Unmount(ctx, staging); err != nil && !errors.Is(err, host.ErrNotFound) {
		return nil, err
	}

	if diskNumber != nil && b.opts.OfflineOnUnstage {
		if err := b.offline(ctx, *diskNumber); err != nil {
			return diskNumber, err
		}
	}
	return diskNumber, nil
}

// flush writes the volume's cached data before its mount point goes. A
// volume that cannot be written holds nothing to write: the flush opens the
// volume for writing, which a write-protected disk refuses with
// ERROR_WRITE_PROTECT (host.ErrReadOnly) or, on some drivers, access denied
// (uncertain which; both are accepted, access denied only when the disk
// reports itself read-only). Without this an unstage of a read-only volume
// would fail, and be retried, forever. A volume gone meanwhile needs
// nothing either.
func (b *Backend) flush(ctx context.Context, guid string, diskNumber uint32) error {
	log := klog.FromContext(ctx)
	log.V(4).Info("Flushing volume", "volumeGUID", guid)
	err := b.h.Volumes.Flush(ctx, guid)
	switch {
	case err == nil, errors.Is(err, host.ErrNotFound):
		return nil
	case errors.Is(err, host.ErrReadOnly):
		log.V(4).Info("Volume is write-protected; nothing to flush", "volumeGUID", guid)
		return nil
	case errors.Is(err, host.ErrAccessDenied):
		d, gerr := b.h.Disks.Get(ctx, diskNumber)
		if gerr == nil && d.IsReadOnly {
			log.V(4).Info("Volume of a read-only disk refuses writing; nothing to flush", "volumeGUID", guid, "diskNumber", diskNumber)
			return nil
		}
	}
	return err
}

// offline takes the disk with this number offline. The caller makes sure
// the number still names the disk it unmounted a volume of: the iSCSI
// backend holds the target's lock across the unmount and the offline, so
// that no other volume's unstage logs out of the target (making the disk,
// and its number, go away) in between.
func (b *Backend) offline(ctx context.Context, number uint32) error {
	d, err := b.h.Disks.Get(ctx, number)
	if errors.Is(err, host.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return b.offlineDisk(ctx, d)
}

// offlineDisk takes disk d offline unless it is critical or offline
// already. A disk that went away meanwhile needs nothing.
func (b *Backend) offlineDisk(ctx context.Context, d host.Disk) error {
	if d.IsCritical() || d.IsOffline {
		return nil
	}
	ctx, unlock, err := b.disks.LockUntilIdle(ctx, diskKey(d))
	if err != nil {
		return fmt.Errorf("wait for disk %d: %w", d.Number, err)
	}
	defer unlock()
	klog.FromContext(ctx).V(4).Info("Taking disk offline", "diskNumber", d.Number)
	if err := b.h.Disks.SetOnline(ctx, d, false); err != nil {
		if errors.Is(err, host.ErrNotFound) {
			// Gone (detached, or an iSCSI disk whose target's last
			// session ended): nothing left to take offline.
			return nil
		}
		return err
	}
	return nil
}
