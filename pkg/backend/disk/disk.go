package disk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/cloud"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inflight"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Options tune the disk backend.
type Options struct {
	// OfflineOnUnstage takes the disk offline after its volume is
	// unmounted, so that detaching it cannot hang (aws-ebs-csi-driver
	// #1116) and a re-attach starts clean. Node flag
	// --offline-disk-on-unstage, default true.
	OfflineOnUnstage bool
	// Backoff paces the wait for a disk to appear after attach.
	Backoff backend.Backoff
	// GCEDisks lists the instance's disks from the Compute Engine metadata
	// server (--cloud=gce; cloud.GCEMetadata.Disks), which the gce-pd
	// preset needs on NVMe machine types. Nil: the preset finds SCSI
	// disks only, and refuses on a node with NVMe persistent disks.
	GCEDisks func(ctx context.Context) ([]cloud.GCEDisk, error)
}

// PrepareRequest says how to prepare and mount a found disk.
type PrepareRequest struct {
	VolumeID    string
	StagingPath string
	FS          contract.FileSystem
	// ReadOnly stages without writing: the disk is kept (or made)
	// read-only and is never initialised, partitioned, formatted or grown.
	ReadOnly bool
	// RootAccess are the resolved grants of volumeRootAccess
	// (ResolveRootAccess) added to the root of the volume once it is
	// mounted; none for a read-only stage.
	RootAccess contract.RootAccess
	// Confirm, when set, is the caller's own check of the disk read again
	// before the plugin first writes to it (writeGuard): the iSCSI
	// backend's that the disk is still the LUN reached through the session
	// it was found through. An error refuses the write and is returned.
	Confirm func(ctx context.Context, now host.Disk) error

	// chosen is the lookup that found the disk (Stage); without it (the
	// iSCSI backend's disks) the disk is re-checked by its device path and
	// identity, and Confirm (writeGuard).
	chosen *choice
}

// Backend is the disk backend.
type Backend struct {
	h     host.Host
	store backend.Store
	opts  Options
	disks *inflight.KeyMutex // one disk's partition table at a time
}

// New returns a disk backend over h. store is the stage journal: the
// backend notes there, crash-safely, that it is about to create a volume's
// partition, so that a stage interrupted between creating the partition
// and formatting it formats it on retry (partitionNote).
func New(h host.Host, store backend.Store, o Options) *Backend {
	if o.Backoff == (backend.Backoff{}) {
		o.Backoff = backend.DefaultBackoff
	}
	return &Backend{h: h, store: store, opts: o, disks: inflight.NewKeyMutex()}
}

// Stage makes the selected disk's volume available at the staging path.
func (b *Backend) Stage(ctx context.Context, r backend.StageRequest) error {
	spec := r.Volume.Disk
	if spec == nil {
		return fmt.Errorf("volume %q has no disk spec: %w", r.VolumeID, host.ErrInvalid)
	}
	access, err := b.ResolveRootAccess(ctx, r.Volume.RootAccess, r)
	if err != nil {
		return err
	}
	staged, err := b.CheckStagingPath(ctx, r.StagingPath)
	if err != nil {
		return err
	}
	if staged != "" {
		if err := b.verifyStaged(ctx, spec.Selector, staged, r.StagingPath, r.ReadOnly); err != nil {
			return err
		}
		return b.GrantRootAccess(ctx, staged, access)
	}
	c, err := b.find(ctx, spec.Selector)
	if err != nil {
		return err
	}
	return b.PrepareAndMount(ctx, c.disk, PrepareRequest{VolumeID: r.VolumeID, StagingPath: r.StagingPath, FS: r.Volume.FS, ReadOnly: r.ReadOnly,
		RootAccess: access, chosen: &c})
}

// CheckStagingPath returns the GUID path of the volume mounted at the
// staging path, "" when it is an empty directory ready for a mount (created
// if missing), or an error when something else is there. The iSCSI backend
// uses it too.
func (b *Backend) CheckStagingPath(ctx context.Context, staging string) (string, error) {
	info, err := b.h.Files.Stat(ctx, staging)
	if err != nil {
		return "", fmt.Errorf("staging path: %w", err)
	}
	switch info.Kind {
	case host.PathMountPoint:
		return info.Target, nil
	case host.PathDir:
		return "", nil
	case host.PathMissing:
		if err := b.h.Files.MakeDir(ctx, staging); err != nil {
			return "", fmt.Errorf("staging path: %w", err)
		}
		return "", nil
	case host.PathSymlink:
		return "", fmt.Errorf("staging path %s is a link to %s, not a volume mount point: %w",
			staging, info.Target, host.ErrAlreadyExists)
	}
	return "", fmt.Errorf("staging path %s is a %s, not a directory: %w", staging, info.Kind, host.ErrConflict)
}

// verifyStaged answers a repeated stage: the staging path already holds a
// volume, which must be on the selected disk. It normally costs one disk
// listing; a disk that shows up late (after a reboot) is waited for like a
// first stage.
func (b *Backend) verifyStaged(ctx context.Context, sel contract.DiskSelector, guid, staging string, readOnly bool) error {
	d, err := b.Find(ctx, sel)
	if errors.Is(err, host.ErrNotFound) {
		return fmt.Errorf("staging path %s holds volume %s, but no attached disk matches %s: %w",
			staging, guid, describe(sel), err)
	}
	if err != nil {
		return err
	}
	// A re-attached disk can come back read-only or offline
	// (csi-proxy#437, kubernetes#108019): repair it rather than report success
	// over a volume that cannot be written. This comes first because an
	// offline disk's volume device is gone, so its disk number cannot be
	// read until the disk is back online.
	switch {
	case readOnly && d.IsOffline:
		if err := b.readOnlyUp(ctx, d); err != nil {
			return err
		}
	case !readOnly && (d.IsReadOnly || d.IsOffline):
		if err := b.BringUp(ctx, d); err != nil {
			return err
		}
	}
	num, err := b.h.Volumes.DiskNumber(ctx, guid)
	if err != nil {
		return fmt.Errorf("staging path %s: %w", staging, err)
	}
	if num != d.Number {
		return fmt.Errorf("staging path %s holds volume %s of disk %d, not of the selected disk %d: %w",
			staging, guid, num, d.Number, host.ErrAlreadyExists)
	}
	klog.FromContext(ctx).V(4).Info("Volume already staged", "diskNumber", d.Number, "volumeGUID", guid)
	return nil
}

// PrepareAndMount makes disk d usable and mounts its volume at the staging
// path, an existing empty directory: it clears read-only, brings the disk
// online, initialises it as GPT when RAW, creates its data partition when
// there is none, formats the volume when it has no file system and mounts
// it. A read-only request only brings the disk online and mounts an
// existing file system. Once the volume is mounted, the grants of
// r.RootAccess are added to its root (GrantRootAccess).
//
// It formats a volume only when the partition is the plugin's own: made by
// this stage, or recorded in a note before an earlier, interrupted stage
// made it. A partition whose volume Windows does not recognise (ext4 on a
// Basic Data partition, a BitLocker-locked or damaged NTFS) is refused.
// Before the first write (online or read-only attribute, initialise,
// partition, format, grow) the disk is read again and must still be the
// disk that was chosen (writeGuard); after the plugin changed it (online,
// initialised) it is read again before the next. A stage that had to wait
// for the disk's lock reads it again before anything else, mounting its
// volume included.
func (b *Backend) PrepareAndMount(ctx context.Context, d host.Disk, r PrepareRequest) error {
	if d.IsCritical() {
		return fmt.Errorf("disk %d is the boot or system disk: %w", d.Number, host.ErrConflict)
	}
	ctx, unlock, waited, err := b.disks.LockUntilIdleWaited(ctx, diskKey(d))
	if err != nil {
		return fmt.Errorf("wait for disk %d: %w", d.Number, err)
	}
	defer unlock()

	log := klog.FromContext(ctx).WithValues("diskNumber", d.Number)
	g := newWriteGuard(b, d, r.chosen, r.Confirm)
	if waited {
		// Another operation held this disk number while this one
		// waited: one on another volume's disk, so the number named
		// two disks, and may name either now. Its partitions are read
		// by number and its volume mounted for the pod to write to:
		// the disk is confirmed first, even when nothing else is
		// written to it, and taken as it is now.
		now, err := g.confirm(ctx)
		if err != nil {
			return err
		}
		d = now
	}
	if d.IsOffline || d.IsReadOnly != r.ReadOnly {
		// A partitioned disk holds volumes (its own data, or another
		// disk's after a renumbering while this stage waited for the
		// disk's lock): confirm it before bringing them online or
		// changing them. A blank one is confirmed once online, before
		// the first write to it (an offline disk may list as RAW).
		if d.PartitionStyle != host.PartitionStyleRAW {
			if _, err := g.confirm(ctx); err != nil {
				return err
			}
		}
		if r.ReadOnly {
			if err := b.readOnlyUp(ctx, d); err != nil {
				return err
			}
		} else if err := b.BringUp(ctx, d); err != nil {
			return err
		}
		g.stale()
	}

	part, own, err := b.dataPartition(ctx, d, r, g)
	if err != nil {
		return err
	}
	vol, err := b.volumeOf(ctx, part)
	if err != nil {
		return err
	}
	switch {
	case vol.FileSystem == "" && r.ReadOnly:
		return fmt.Errorf("disk %d has no file system, and a read-only volume is never formatted: %w", d.Number, host.ErrConflict)
	case vol.FileSystem == "" && !own.ours:
		return fmt.Errorf("partition %d of disk %d holds a volume with no file system Windows recognises "+
			"(another operating system's file system, a locked BitLocker volume or a damaged NTFS); "+
			"the plugin only formats partitions it created and never erases data%s: %w", part.Number, d.Number, own.why, host.ErrConflict)
	case vol.FileSystem == "":
		if _, err := g.confirm(ctx); err != nil {
			return err
		}
		log.V(4).Info("Formatting volume", "volumeGUID", vol.GUIDPath, "fsType", r.FS.Type)
		vol, err = b.h.Volumes.Format(ctx, vol, host.FormatOptions{
			FileSystem:         fsOrDefault(r.FS.Type),
			Label:              r.FS.Label,
			AllocationUnitSize: r.FS.AllocationUnitSize,
		})
		if err != nil {
			return err
		}
		b.forgetPartitioning(ctx, r.VolumeID)
	case !fsCompatible(vol.FileSystem, r.FS):
		return fmt.Errorf("disk %d holds a %s file system, not the requested %s: %w",
			d.Number, vol.FileSystem, r.FS.Type, host.ErrAlreadyExists)
	case !r.ReadOnly && !own.ours:
		if err := b.growToDisk(ctx, d, part, g); err != nil {
			return err
		}
	}

	log.V(4).Info("Mounting volume", "volumeGUID", vol.GUIDPath, "stagingTargetPath", r.StagingPath)
	if err := b.h.Volumes.Mount(ctx, vol.GUIDPath, r.StagingPath); err != nil {
		if errors.Is(err, host.ErrDirNotEmpty) {
			// A concurrent or crashed earlier attempt may have mounted it.
			if info, serr := b.h.Files.Stat(ctx, r.StagingPath); serr == nil && info.Kind == host.PathMountPoint &&
				winpath.CanonicalTarget(info.Target) == winpath.CanonicalTarget(vol.GUIDPath) {
				return b.GrantRootAccess(ctx, vol.GUIDPath, r.RootAccess)
			}
		}
		return err
	}
	return b.GrantRootAccess(ctx, vol.GUIDPath, r.RootAccess)
}

// readOnlyUp brings a disk up for a read-only stage: it is made read-only
// before it comes online, so that no file system ever mounts it writable,
// not even for a moment (a disk attached to several nodes, one of them
// writing). Whether Windows changes the attribute of an offline disk is
// uncertain (docs/windows.md; the host contract accepts both answers):
// where it refuses (MSFT_Disk 41003 "the disk is offline",
// host.ErrNotReady), the stage fails with a conflict naming the disk and
// leaves it offline, rather than bring it online writable first.
func (b *Backend) readOnlyUp(ctx context.Context, d host.Disk) error {
	if !d.IsReadOnly {
		klog.FromContext(ctx).V(4).Info("Setting disk read-only for a read-only volume", "diskNumber", d.Number)
		err := b.h.Disks.SetReadOnly(ctx, d, true)
		if err != nil && d.IsOffline && errors.Is(err, host.ErrNotReady) {
			return fmt.Errorf("the offline disk cannot be made read-only (Windows refuses while it is offline), "+
				"and the disk of a read-only volume is never brought online writable, so it stays offline: %w: %w", err, host.ErrConflict)
		}
		if err != nil {
			return err
		}
	}
	if d.IsOffline {
		return b.online(ctx, d)
	}
	return nil
}

func (b *Backend) online(ctx context.Context, d host.Disk) error {
	klog.FromContext(ctx).V(4).Info("Bringing disk online", "diskNumber", d.Number, "offlineReason", int(d.OfflineReason))
	return b.h.Disks.SetOnline(ctx, d, true)
}

// notePartitioning records that the plugin is about to create the volume's
// partition on disk d, with the disk's identity (identity, as JSON).
func (b *Backend) notePartitioning(ctx context.Context, volumeID string, d host.Disk) error {
	if volumeID == "" {
		return nil
	}
	v, err := json.Marshal(identityOf(d))
	if err != nil { // cannot happen: strings and integers
		return fmt.Errorf("record the partitioning of disk %d: %w", d.Number, err)
	}
	if err := b.store.PutNote(ctx, partitionNote(volumeID), string(v)); err != nil {
		return fmt.Errorf("record the partitioning of disk %d: %w", d.Number, err)
	}
	return nil
}

// ownership says whether a data partition is the plugin's own for a
// volume, and when not, what the partitioning note says instead.
type ownership struct {
	ours bool
	why  string // "" or ", because …", for the refusal's message
}

// partitionedByUs reports whether an earlier stage of the volume recorded
// that it was creating the partition on this disk: the note must exist and
// name disk d by its identity (serial number, UniqueId, a size it may have
// grown from, and the GPT disk GUID when the note has one); a stage resumed
// after a crash formats nothing on another disk. A note whose serial
// number, UniqueId and GPT disk GUID are all blank names no disk. A note
// written before the identity was recorded ("disk N serial \"S\"") names
// the disk by its serial number, which must be non-blank and equal.
func (b *Backend) partitionedByUs(ctx context.Context, volumeID string, g *writeGuard) (ownership, error) {
	if volumeID == "" {
		return ownership{}, nil
	}
	v, ok, err := b.store.Note(ctx, partitionNote(volumeID))
	if err != nil {
		return ownership{}, fmt.Errorf("read the partitioning note of volume %q: %w", volumeID, err)
	}
	if !ok {
		return ownership{}, nil
	}
	// The disk as it is now (online, with its GPT disk GUID), confirmed
	// as the one chosen.
	d, err := g.confirm(ctx)
	if err != nil {
		return ownership{}, err
	}
	now := identityOf(d)
	noted, legacy, err := decodePartitionNote(v)
	switch {
	case err != nil:
		return ownership{why: fmt.Sprintf(", and the partitioning note of volume %q cannot be read (%v)", volumeID, err)}, nil
	case legacy && (noted.Serial == "" || noted.Serial != now.Serial):
		return ownership{why: fmt.Sprintf(", and the partitioning note of volume %q (%q) does not name %s by a serial number it carries",
			volumeID, v, now)}, nil
	case legacy:
		return ownership{ours: true}, nil
	case noted.Serial == "" && noted.UniqueID == "" && noted.GUID == "":
		// Its size alone would name every disk at least as large.
		return ownership{why: fmt.Sprintf(", and the partitioning note of volume %q (%s) names no disk by an identifier: "+
			"the disk showed a blank serial number and UniqueId, and no GPT disk GUID, when it was written", volumeID, noted)}, nil
	}
	if diff := noted.differs(now, true); len(diff) > 0 {
		return ownership{why: fmt.Sprintf(", and the partitioning note of volume %q names another disk (%s differ): noted %s, found %s",
			volumeID, strings.Join(diff, ", "), noted, now)}, nil
	}
	return ownership{ours: true}, nil
}

// decodePartitionNote reads a partitioning note: an identity as JSON, or
// the text earlier releases wrote ("disk 3 serial \"SER\"": legacy).
func decodePartitionNote(v string) (id identity, legacy bool, err error) {
	if strings.HasPrefix(v, "{") {
		err = json.Unmarshal([]byte(v), &id)
		return id, false, err
	}
	if _, err := fmt.Sscanf(v, "disk %d serial %q", &id.Number, &id.Serial); err != nil {
		return identity{}, true, fmt.Errorf("%q: %w", v, err)
	}
	id.Serial = strings.TrimSpace(id.Serial)
	return id, true, nil
}

func (b *Backend) forgetPartitioning(ctx context.Context, volumeID string) {
	if volumeID == "" {
		return
	}
	if err := b.store.DeleteNote(ctx, partitionNote(volumeID)); err != nil {
		// Harmless: the note only allows formatting a RAW volume of this
		// plugin's own partition, which now has a file system.
		klog.FromContext(ctx).V(2).Info("Cannot drop the partitioning note", "err", err)
	}
}

// partitionNote is the key of the note saying that the plugin is creating
// the partition of a volume ("disk/partitioning/<volume ID>"; the value is
// the disk's identity, which a resumed stage compares, partitionedByUs).
func partitionNote(volumeID string) string {
	return backend.NotePrefix(contract.KindDisk, "partitioning") + volumeID
}

// BringUp clears read-only and brings the disk online, in that order: a
// cloned disk whose signature collides with an online disk only comes
// online once read-only is cleared (csi-proxy#287, azuredisk#1909). When
// the provider refuses to change an offline disk's attributes (MSFT_Disk
// 41003 "the disk is offline"), the disk is brought online first, as
// azuredisk does (kubernetes-sigs/azuredisk-csi-driver@d983d61
// pkg/os/disk/disk.go, SetDiskState: Set-Disk -IsOffline, then -IsReadOnly).
func (b *Backend) BringUp(ctx context.Context, d host.Disk) error {
	log := klog.FromContext(ctx).WithValues("diskNumber", d.Number)
	if d.IsReadOnly {
		log.V(4).Info("Clearing disk read-only attribute")
		var err error
		if d, err = b.setReadOnly(ctx, d, false); err != nil {
			return err
		}
	}
	if d.IsOffline {
		return b.online(ctx, d)
	}
	return nil
}

// setReadOnly sets or clears the disk's read-only attribute for a
// writable stage. When the provider refuses to change an offline disk
// (MSFT_Disk 41003, or 41000 on a blank one: host.ErrNotReady), the disk is
// brought online and the attribute set then — except for a clone whose
// signature collides, which only comes online once read-only is cleared.
// It returns the disk as it is afterwards. A read-only stage never comes
// here (readOnlyUp).
func (b *Backend) setReadOnly(ctx context.Context, d host.Disk, readOnly bool) (host.Disk, error) {
	err := b.h.Disks.SetReadOnly(ctx, d, readOnly)
	if err != nil && d.IsOffline && d.OfflineReason != host.OfflineReasonCollision && errors.Is(err, host.ErrNotReady) {
		klog.FromContext(ctx).V(4).Info("The disk must be online to change read-only; bringing it online first", "diskNumber", d.Number)
		if err := b.online(ctx, d); err != nil {
			return d, err
		}
		d.IsOffline, d.OfflineReason = false, host.OfflineReasonNone
		err = b.h.Disks.SetReadOnly(ctx, d, readOnly)
	}
	if err != nil {
		return d, err
	}
	d.IsReadOnly = readOnly
	return d, nil
}

// dataPartition returns the disk's one data partition, initialising the disk
// and creating the partition when needed. It reports whether the partition
// is the plugin's own for this volume (created now, or noted before an
// interrupted earlier stage created it on this disk), so that its volume
// may be formatted.
func (b *Backend) dataPartition(ctx context.Context, d host.Disk, r PrepareRequest, g *writeGuard) (host.Partition, ownership, error) {
	log := klog.FromContext(ctx).WithValues("diskNumber", d.Number)
	if d.PartitionStyle == host.PartitionStyleRAW {
		if r.ReadOnly {
			return host.Partition{}, ownership{}, fmt.Errorf("disk %d is blank, and a read-only volume is never initialised: %w", d.Number, host.ErrConflict)
		}
		now, err := g.confirm(ctx)
		if err != nil {
			return host.Partition{}, ownership{}, err
		}
		// A disk listed while offline may report RAW and show its table
		// once online: then its partitions decide, as for any other.
		d = now
	}
	if d.PartitionStyle == host.PartitionStyleRAW {
		if err := b.notePartitioning(ctx, r.VolumeID, d); err != nil {
			return host.Partition{}, ownership{}, err
		}
		log.V(4).Info("Initialising disk", "partitionStyle", "GPT")
		if err := b.h.Disks.Initialize(ctx, d, host.PartitionStyleGPT); err != nil {
			return host.Partition{}, ownership{}, err
		}
		// The listing predates Initialize: hand the host the style the disk
		// has now, so it creates a GPT Basic Data partition. A freshly
		// initialised GPT disk holds only the MSR: no listing needed. Its
		// note records no GPT disk GUID: the disk had none when it was
		// written (one more round trip would read it; issue 3's budget).
		d.PartitionStyle = host.PartitionStyleGPT
		return b.createPartition(ctx, d)
	}
	parts, err := b.h.Disks.Partitions(ctx, d)
	if err != nil {
		return host.Partition{}, ownership{}, err
	}
	var data []host.Partition
	for _, p := range parts {
		if !p.IsReserved() {
			data = append(data, p)
		}
	}
	switch len(data) {
	case 0:
		if r.ReadOnly {
			return host.Partition{}, ownership{}, fmt.Errorf("disk %d has no data partition, and a read-only volume is never partitioned: %w", d.Number, host.ErrConflict)
		}
		now, err := g.confirm(ctx)
		if err != nil {
			return host.Partition{}, ownership{}, err
		}
		now.PartitionStyle = d.PartitionStyle
		if err := b.notePartitioning(ctx, r.VolumeID, now); err != nil {
			return host.Partition{}, ownership{}, err
		}
		return b.createPartition(ctx, now)
	case 1:
		p := data[0]
		if !ownType(d.PartitionStyle, p) {
			return host.Partition{}, ownership{}, fmt.Errorf("partition %d of disk %d has type %s, which this plugin does not create; "+
				"refusing to touch a disk holding other data: %w", p.Number, d.Number, partType(p), host.ErrConflict)
		}
		own, err := b.partitionedByUs(ctx, r.VolumeID, g)
		if err != nil {
			return host.Partition{}, ownership{}, err
		}
		return p, own, nil
	default:
		return host.Partition{}, ownership{}, fmt.Errorf("disk %d holds %d data partitions; the plugin only uses disks with one: %w",
			d.Number, len(data), host.ErrConflict)
	}
}

func (b *Backend) createPartition(ctx context.Context, d host.Disk) (host.Partition, ownership, error) {
	klog.FromContext(ctx).V(4).Info("Creating data partition", "diskNumber", d.Number)
	p, err := b.h.Disks.CreatePartition(ctx, d)
	if err != nil {
		return host.Partition{}, ownership{}, err
	}
	return p, ownership{ours: true}, nil
}

// volumeOf returns the volume of a partition, waiting briefly for a newly
// created partition's volume to show up.
func (b *Backend) volumeOf(ctx context.Context, p host.Partition) (host.Volume, error) {
	var vol host.Volume
	err := backend.Poll(ctx, b.opts.Backoff, func(ctx context.Context, _ int) error {
		v, err := b.h.Volumes.OfPartition(ctx, p)
		if errors.Is(err, host.ErrNotFound) {
			return fmt.Errorf("partition %d of disk %d has no volume yet: %w", p.Number, p.DiskNumber, backend.ErrRetry)
		}
		if err != nil {
			return err
		}
		vol = v
		return nil
	})
	if errors.Is(err, backend.ErrRetry) {
		return host.Volume{}, fmt.Errorf("partition %d of disk %d has no volume: %w", p.Number, p.DiskNumber, host.ErrNotReady)
	}
	return vol, err
}

// growToDisk grows an existing partition when the disk is larger, as after a
// clone or restore to a bigger size (kubernetes#94929): azuredisk, gcp-pd and
// aws-ebs resize at stage for that reason. The disk is confirmed (g) before
// the resize.
func (b *Backend) growToDisk(ctx context.Context, d host.Disk, p host.Partition, g *writeGuard) error {
	end := p.Offset + p.Size
	if d.Size <= end || d.Size-end < growSlack {
		return nil
	}
	max, err := b.h.Disks.MaxPartitionSize(ctx, p)
	if err != nil {
		return err
	}
	if max < p.Size+minGrowth {
		return nil
	}
	if _, err := g.confirm(ctx); err != nil {
		return err
	}
	klog.FromContext(ctx).V(4).Info("Growing partition to the disk size", "diskNumber", d.Number, "from", p.Size, "to", max)
	if err := b.h.Disks.ResizePartition(ctx, p, max); err != nil {
		return err
	}
	return nil
}

const (
	// minGrowth is Windows' smallest partition extension: Resize-Partition
	// fails with "The size of the extent is less than the minimum of 1MB"
	// below it (StorageWMI 4097; csi-proxy PR #364).
	minGrowth = 1 << 20
	// growSlack is the free space at a disk's end that does not mean the
	// disk grew: the backup GPT (33 sectors) plus alignment.
	growSlack = 2 << 20
)

// ownType reports whether the partition has a type the plugin creates (GPT
// Basic Data, MBR IFS); only those are formatted or mounted.
func ownType(style host.PartitionStyle, p host.Partition) bool {
	switch style {
	case host.PartitionStyleGPT:
		return p.GptType == host.GptTypeBasicData
	case host.PartitionStyleMBR:
		return p.MbrType == host.MbrTypeIFS
	}
	return false
}

func partType(p host.Partition) string {
	if p.GptType != "" {
		return p.GptType
	}
	return "MBR 0x" + strconv.FormatUint(uint64(p.MbrType), 16)
}

func fsOrDefault(t string) string {
	if t == "" {
		return "NTFS"
	}
	return t
}

func diskKey(d host.Disk) string { return "disk:" + strconv.FormatUint(uint64(d.Number), 10) }

// fsCompatible reports whether an existing file system satisfies the
// request: any file system does when the type was not asked for explicitly.
func fsCompatible(existing string, fs contract.FileSystem) bool {
	return !fs.Explicit || fs.Type == "" || strings.EqualFold(existing, fs.Type)
}
