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
	return b.offlineDisk(ctx, d, nil)
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

	var disk *diskReading
	if diskNumber != nil {
		disk = &diskReading{number: *diskNumber}
		if err := b.flush(ctx, guid, disk); err != nil {
			return nil, err
		}
	}
	// The disk to take offline is read while its volume is still mounted
	// there, before the unmount (see offlineVolumeDisk).
	var d host.Disk
	offline := disk != nil && b.opts.OfflineOnUnstage
	if offline {
		d, err = disk.get(ctx, b)
		if errors.Is(err, host.ErrNotFound) {
			offline = false
		} else if err != nil {
			return nil, err
		}
	}
	log.V(4).Info("Removing volume mount point", "volumeGUID", guid, "stagingTargetPath", staging)
	if err := b.h.Volumes.Unmount(ctx, staging); err != nil && !errors.Is(err, host.ErrNotFound) {
		return nil, err
	}

	if offline {
		if err := b.offlineVolumeDisk(ctx, guid, d); err != nil {
			return diskNumber, err
		}
	}
	return diskNumber, nil
}

// diskReading reads the disk with a number once.
type diskReading struct {
	number uint32
	d      host.Disk
	err    error
	done   bool
}

func (r *diskReading) get(ctx context.Context, b *Backend) (host.Disk, error) {
	if !r.done {
		r.d, r.err = b.h.Disks.Get(ctx, r.number)
		r.done = r.err == nil || errors.Is(r.err, host.ErrNotFound)
	}
	return r.d, r.err
}

// flush writes the volume's cached data before its mount point goes. A
// volume that cannot be written holds nothing to write: the flush opens the
// volume for writing, which a write-protected disk refuses with
// ERROR_WRITE_PROTECT (host.ErrReadOnly) or, on some drivers, access denied
// (uncertain which; both are accepted, access denied only when the disk
// reports itself read-only). Without this an unstage of a read-only volume
// would fail, and be retried, forever. A volume gone meanwhile needs
// nothing either.
func (b *Backend) flush(ctx context.Context, guid string, disk *diskReading) error {
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
		d, gerr := disk.get(ctx, b)
		if gerr == nil && d.IsReadOnly {
			log.V(4).Info("Volume of a read-only disk refuses writing; nothing to flush", "volumeGUID", guid, "diskNumber", disk.number)
			return nil
		}
	}
	return err
}

// offlineVolumeDisk takes disk d, read while the volume guid was mounted
// from it, offline once the volume is unmounted, if the volume is still on
// the disk with d's number. Windows numbers disks in the order it finds
// them (MSFT_Disk.Number,
// learn.microsoft.com/windows-hardware/drivers/storage/msft-disk): a disk
// removed and another added between the unmount and the offline may give
// the number to another pod's disk. So the disk is not read again by
// number; the offline goes to the object read before the unmount (its
// Ref), and only while the volume, looked up by its GUID after the
// unmount, still lies on a disk with that number. A volume that is gone
// or now lies on another number leaves every disk as it is: the unstage
// succeeds (the volume is unmounted), logged at V(2); a disk left online
// is harmless, one taken offline under another pod is not. No WMI round
// trip is added: the volume lookup is one IOCTL
// (IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS).
func (b *Backend) offlineVolumeDisk(ctx context.Context, guid string, d host.Disk) error {
	return b.offlineDisk(ctx, d, func(ctx context.Context) (bool, error) {
		num, err := b.h.Volumes.DiskNumber(ctx, guid)
		switch {
		case errors.Is(err, host.ErrNotFound):
			klog.FromContext(ctx).V(2).Info("Not taking the disk offline: the volume is no longer on it (the disk went away)", "diskNumber", d.Number, "volumeGUID", guid)
			return false, nil
		case err != nil:
			return false, fmt.Errorf("find the disk of volume %s again before taking disk %d offline: %w", guid, d.Number, err)
		case num != d.Number:
			klog.FromContext(ctx).V(2).Info("Not taking the disk offline: disk numbers changed since the unmount", "diskNumber", d.Number, "volumeGUID", guid)
			return false, nil
		}
		return true, nil
	})
}

// offlineDisk takes disk d offline unless it is critical or offline
// already. When ours is set, it is asked, under the disk's lock (another
// operation on the number may have held it), whether d is still the disk
// to take offline. A disk that went away meanwhile needs nothing.
func (b *Backend) offlineDisk(ctx context.Context, d host.Disk, ours func(context.Context) (bool, error)) error {
	if d.IsCritical() || d.IsOffline {
		return nil
	}
	ctx, unlock, err := b.disks.LockUntilIdle(ctx, diskKey(d))
	if err != nil {
		return fmt.Errorf("wait for disk %d: %w", d.Number, err)
	}
	defer unlock()
	if ours != nil {
		if ok, err := ours(ctx); !ok || err != nil {
			return err
		}
	}
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
