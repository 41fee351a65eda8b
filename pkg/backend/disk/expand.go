package disk

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Expand grows the staged volume's partition (and its file system) to fill
// the disk, after a rescan so that Windows sees the disk's new size, and
// returns the volume's real size afterwards. Growth below Windows' 1 MiB
// minimum extent is a no-op that still reports the real size. Before it
// resizes, the disk is read again (writeGuard): it must have the identity
// it had when the staged volume led to it, and still hold that volume.
func (b *Backend) Expand(ctx context.Context, r backend.ExpandRequest) (int64, error) {
	log := klog.FromContext(ctx)
	guid, num, err := b.stagedVolume(ctx, r.StagingPath)
	if err != nil {
		return 0, err
	}
	if err := b.h.Disks.Rescan(ctx); err != nil {
		return 0, err
	}
	d, err := b.h.Disks.Get(ctx, num)
	if err != nil {
		return 0, err
	}
	if r.RequiredBytes > 0 && d.Size < uint64(r.RequiredBytes) {
		return 0, fmt.Errorf("disk %d is %d bytes, less than the requested %d: the expansion is not visible on this node yet: %w",
			num, d.Size, r.RequiredBytes, host.ErrNotReady)
	}
	ctx, unlock, err := b.disks.LockUntilIdle(ctx, diskKey(d))
	if err != nil {
		return 0, fmt.Errorf("wait for disk %d: %w", num, err)
	}
	defer unlock()

	part, err := b.partitionOf(ctx, d, guid)
	if err != nil {
		return 0, err
	}
	if r.LimitBytes > 0 && part.Size > uint64(r.LimitBytes) {
		// A partition never shrinks here: the answer could only break
		// the limit (CSI spec v1.13.0, NodeExpandVolume Errors:
		// "Unsupported capacity_range" is OUT_OF_RANGE).
		return 0, fmt.Errorf("volume %s is on a partition of %d bytes, more than limit_bytes %d: a volume is never shrunk: %w",
			guid, part.Size, r.LimitBytes, host.ErrOutOfRange)
	}
	max, err := b.h.Disks.MaxPartitionSize(ctx, part)
	if err != nil {
		return 0, err
	}
	target := max
	if r.LimitBytes > 0 && target > uint64(r.LimitBytes) {
		// Never grow past the limit; the partition still grows as far as allowed.
		target = uint64(r.LimitBytes)
	}
	if target >= part.Size+minGrowth {
		g := newWriteGuard(b, d, nil, func(ctx context.Context, now host.Disk) error {
			n, err := b.h.Volumes.DiskNumber(ctx, guid)
			if err != nil {
				return fmt.Errorf("staging path %s: read the disk of volume %s again before growing it: %w", r.StagingPath, guid, err)
			}
			if n != now.Number {
				return fmt.Errorf("volume %s is now on disk %d, not disk %d; refusing to grow a partition of disk %d: %w",
					guid, n, now.Number, now.Number, host.ErrConflict)
			}
			return nil
		})
		if _, err := g.confirm(ctx); err != nil {
			return 0, err
		}
		log.V(4).Info("Growing partition", "diskNumber", num, "from", part.Size, "to", target)
		if err := b.h.Disks.ResizePartition(ctx, part, target); err != nil {
			return 0, err
		}
	} else {
		log.V(4).Info("Partition already fills the disk", "diskNumber", num, "size", part.Size, "max", max)
	}
	vol, err := b.h.Volumes.Get(ctx, guid)
	if err != nil {
		return 0, err
	}
	if r.RequiredBytes > 0 && vol.Size < uint64(r.RequiredBytes) {
		// The file system cannot reach the request (partition table and
		// MSR take their share of the disk): report the real size. CSI
		// lets the CO compare; lying about the size would hide it.
		log.V(2).Info("Volume is smaller than the requested capacity", "size", vol.Size, "required", r.RequiredBytes)
	}
	return int64(vol.Size), nil
}

// stagedVolume returns the volume mounted at the staging path and its disk.
func (b *Backend) stagedVolume(ctx context.Context, staging string) (string, uint32, error) {
	info, err := b.h.Files.Stat(ctx, staging)
	if err != nil {
		return "", 0, fmt.Errorf("staging path: %w", err)
	}
	if info.Kind != host.PathMountPoint {
		return "", 0, fmt.Errorf("no volume is mounted at staging path %s: %w", staging, host.ErrNotFound)
	}
	num, err := b.h.Volumes.DiskNumber(ctx, info.Target)
	if err != nil {
		return "", 0, fmt.Errorf("staging path %s: %w", staging, err)
	}
	return info.Target, num, nil
}

// partitionOf finds the partition holding the volume: the one whose access
// paths name it, else the disk's only data partition.
func (b *Backend) partitionOf(ctx context.Context, d host.Disk, guid string) (host.Partition, error) {
	parts, err := b.h.Disks.Partitions(ctx, d)
	if err != nil {
		return host.Partition{}, err
	}
	want := winpath.CanonicalTarget(guid)
	var data []host.Partition
	for _, p := range parts {
		for _, ap := range p.AccessPaths {
			if winpath.CanonicalTarget(ap) == want {
				return p, nil
			}
		}
		if !p.IsReserved() {
			data = append(data, p)
		}
	}
	if len(data) == 1 {
		return data[0], nil
	}
	return host.Partition{}, fmt.Errorf("no partition of disk %d holds volume %s: %w", d.Number, guid, host.ErrNotFound)
}

// Health reports abnormal conditions of the staged volume.
func (b *Backend) Health(ctx context.Context, r backend.HealthRequest) ([]backend.Condition, error) {
	info, err := b.h.Files.Stat(ctx, r.StagingPath)
	if err != nil {
		return nil, fmt.Errorf("staging path: %w", err)
	}
	if info.Kind != host.PathMountPoint {
		return []backend.Condition{{Severity: backend.Inaccessible, Reason: "MountPointMissing",
			Message: fmt.Sprintf("staging path %s is a %s, not a volume mount point", r.StagingPath, info.Kind)}}, nil
	}
	conds, err := b.VolumeHealth(ctx, info.Target)
	if err != nil || len(conds) != 1 || conds[0].Reason != "DiskMissing" {
		return stagedConditions(conds, r.Entry), err
	}
	// An offline disk hides its volume: tell it apart from a detached
	// disk by looking the disk up with the selector the stage recorded.
	d, err := b.Locate(ctx, r.Entry)
	switch {
	case err == nil:
		return stagedConditions(DiskConditions(d), r.Entry), nil
	case errors.Is(err, errListDisks):
		return nil, err
	}
	return conds, nil
}

// errListDisks marks Locate's failure to list the disks (a host failure),
// as opposed to no disk matching.
var errListDisks = errors.New("list disks")

// Locate returns the disk the selector of a disk volume's journal entry
// names among the disks the host lists now, without rescanning and without
// changing anything: an offline disk, whose volume Windows hides, is found
// too. An entry without a disk record fails with an error wrapping
// backend.ErrNoRecord; no matching disk with host.ErrNotFound; two, or the
// boot disk, with host.ErrConflict. Health uses it, and so do tools that
// report what backs a volume (pkg/inventory).
func (b *Backend) Locate(ctx context.Context, e journal.Entry) (host.Disk, error) {
	rec, err := DecodeRecord(e)
	if err != nil {
		return host.Disk{}, err
	}
	disks, err := b.h.Disks.List(ctx)
	if err != nil {
		return host.Disk{}, fmt.Errorf("%w: %w", errListDisks, err)
	}
	d, err := b.match(ctx, disks, rec.Selector)
	if errors.Is(err, backend.ErrRetry) {
		return host.Disk{}, fmt.Errorf("no attached disk matches %s: %w", describe(rec.Selector), host.ErrNotFound)
	}
	return d, err
}

// stagedConditions drops from a staged volume's conditions what its stage
// asked for: a volume staged read-only is on a disk the stage made (or
// kept) read-only, so DiskReadOnly is no fault of it.
func stagedConditions(conds []backend.Condition, e journal.Entry) []backend.Condition {
	if !backend.StagedReadOnly(e) {
		return conds
	}
	return slices.DeleteFunc(conds, func(c backend.Condition) bool { return c.Reason == reasonDiskReadOnly })
}

// reasonDiskReadOnly is the condition of a read-only disk.
const reasonDiskReadOnly = "DiskReadOnly"

// DiskConditions reports a disk's own abnormal conditions.
func DiskConditions(d host.Disk) []backend.Condition {
	var conds []backend.Condition
	if d.IsOffline {
		conds = append(conds, backend.Condition{Severity: backend.Inaccessible, Reason: "DiskOffline",
			Message: fmt.Sprintf("disk %d is offline", d.Number)})
	}
	if d.IsReadOnly {
		conds = append(conds, backend.Condition{Severity: backend.Degraded, Reason: reasonDiskReadOnly,
			Message: fmt.Sprintf("disk %d is read-only; writes fail", d.Number)})
	}
	return append(conds, healthConditions("Disk", fmt.Sprintf("disk %d", d.Number), d.HealthStatus)...)
}

// VolumeHealth reports the conditions of a mounted volume and its disk.
func (b *Backend) VolumeHealth(ctx context.Context, guid string) ([]backend.Condition, error) {
	var conds []backend.Condition
	num, err := b.h.Volumes.DiskNumber(ctx, guid)
	if errors.Is(err, host.ErrNotFound) {
		return []backend.Condition{{Severity: backend.Inaccessible, Reason: "DiskMissing",
			Message: "the disk holding volume " + guid + " is no longer attached"}}, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := b.h.Disks.Get(ctx, num)
	if errors.Is(err, host.ErrNotFound) {
		return []backend.Condition{{Severity: backend.Inaccessible, Reason: "DiskMissing",
			Message: fmt.Sprintf("disk %d is no longer attached", num)}}, nil
	}
	if err != nil {
		return nil, err
	}
	conds = append(conds, DiskConditions(d)...)
	if !d.IsOffline {
		v, err := b.h.Volumes.Get(ctx, guid)
		switch {
		case errors.Is(err, host.ErrNotFound):
			conds = append(conds, backend.Condition{Severity: backend.Inaccessible, Reason: "VolumeMissing",
				Message: "volume " + guid + " is not present"})
		case err != nil:
			return nil, err
		default:
			conds = append(conds, healthConditions("Volume", "volume "+guid, v.HealthStatus)...)
		}
	}
	return conds, nil
}

func healthConditions(prefix, what string, h host.HealthStatus) []backend.Condition {
	switch h {
	case host.HealthWarning:
		return []backend.Condition{{Severity: backend.Degraded, Reason: prefix + "HealthWarning",
			Message: what + " reports health status Warning"}}
	case host.HealthUnhealthy:
		return []backend.Condition{{Severity: backend.Inaccessible, Reason: prefix + "Unhealthy",
			Message: what + " reports health status Unhealthy"}}
	}
	return nil
}
