package disk

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Unstage unmounts the volume from the staging path and, when configured,
// takes its disk offline. An already unstaged path succeeds.
func (b *Backend) Unstage(ctx context.Context, r backend.UnstageRequest) error {
	_, err := b.Unmount(ctx, r.StagingPath)
	return err
}

// Unmount flushes and removes the volume mount point at staging, leaving
// the empty directory, then offlines the volume's disk when the backend is
// configured to. It returns the number of the disk the volume was on, or nil
// when nothing was mounted or the disk is gone.
func (b *Backend) Unmount(ctx context.Context, staging string) (*uint32, error) {
	log := klog.FromContext(ctx)
	info, err := b.h.Files.Stat(ctx, staging)
	if err != nil {
		return nil, fmt.Errorf("inspect staging path %s: %w", staging, err)
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
		return nil, fmt.Errorf("find the disk of volume %s: %w", guid, err)
	}

	if diskNumber != nil {
		log.V(4).Info("Flushing volume", "volumeGUID", guid)
		if err := b.h.Volumes.Flush(ctx, guid); err != nil && !errors.Is(err, host.ErrNotFound) {
			return nil, fmt.Errorf("flush volume %s: %w", guid, err)
		}
	}
	log.V(4).Info("Removing volume mount point", "volumeGUID", guid, "stagingTargetPath", staging)
	if err := b.h.Volumes.Unmount(ctx, staging); err != nil && !errors.Is(err, host.ErrNotFound) {
		return nil, fmt.Errorf("remove mount point %s: %w", staging, err)
	}

	if diskNumber != nil && b.opts.OfflineOnUnstage {
		if err := b.offline(ctx, *diskNumber); err != nil {
			return diskNumber, err
		}
	}
	return diskNumber, nil
}

func (b *Backend) offline(ctx context.Context, number uint32) error {
	d, err := b.h.Disks.Get(ctx, number)
	if errors.Is(err, host.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read disk %d: %w", number, err)
	}
	if d.IsCritical() || d.IsOffline {
		return nil
	}
	ctx, unlock, err := b.disks.LockUntilIdle(ctx, diskKey(d))
	if err != nil {
		return fmt.Errorf("wait for disk %d: %w", number, err)
	}
	defer unlock()
	klog.FromContext(ctx).V(4).Info("Taking disk offline", "diskNumber", number)
	if err := b.h.Disks.SetOnline(ctx, d, false); err != nil {
		return fmt.Errorf("take disk %d offline: %w", number, err)
	}
	return nil
}
