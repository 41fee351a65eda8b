package sim

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Geometry of the simulated disks (512-byte sectors).
const (
	sectorSize = 512
	mib        = 1 << 20
	// A GPT disk's first usable byte is LBA 34 and its last 33 sectors hold
	// the backup table (UEFI spec, 128 entries of 128 bytes).
	gptFirstUsable = 34 * sectorSize // 17408
	gptBackupBytes = 33 * sectorSize
	// Windows' Initialize creates the Microsoft Reserved partition at the
	// first usable byte, ending at 16 MiB; offset and size as reported in
	// aws-ebs-csi-driver#1001 (docs/windows.md, "GPT layout after Initialize").
	msrOffset = gptFirstUsable
	msrSize   = 16*mib - msrOffset // 16759808
	// Partitions start on 1 MiB boundaries, the provider default
	// (MSFT_Disk.CreatePartition's Alignment).
	partitionAlignment = mib
	// A resize must change the size by at least 1 MiB: StorageWMI 4097 "The
	// size of the extent is less than the minimum of 1MB" (csi-proxy PR #364).
	minResizeDelta = mib
	// MBR holds four primary partitions.
	mbrMaxPartitions = 4
	gptMaxPartitions = 128
)

const (
	diskRefPrefix  = "sim:disk:"
	partitionInfix = ":partition:"
	// deviceInterfaceDisk is GUID_DEVINTERFACE_DISK, the tail of every
	// MSFT_Disk.Path.
	deviceInterfaceDisk = "{53f56307-b6bf-11d0-94f2-00a0c91efb8b}"
)

func gptUsableEnd(size uint64) uint64 {
	if size < gptFirstUsable+gptBackupBytes {
		return gptFirstUsable
	}
	end := size - gptBackupBytes
	return end - end%sectorSize
}

// usable returns the byte range partitions may occupy.
func (d *DiskState) usable() (start, end uint64) {
	switch d.PartitionStyle {
	case host.PartitionStyleGPT:
		return gptFirstUsable, gptUsableEnd(d.Size)
	case host.PartitionStyleMBR:
		return sectorSize, d.Size - d.Size%sectorSize
	}
	return 0, 0
}

func (d *DiskState) critical() bool { return d.Boot || d.System }

func (d *DiskState) ref() string { return diskRefPrefix + d.ID }

// writableCheck is the precondition of every write to the disk's layout.
func (d *DiskState) writableCheck() error {
	if d.critical() {
		return fmt.Errorf("disk %d is the boot/system disk: %w", d.Number, host.ErrConflict)
	}
	if d.Offline {
		return errOffline(d)
	}
	if d.ReadOnly {
		return fmt.Errorf("disk %d: %w", d.Number, host.ErrReadOnly)
	}
	return nil
}

// errOffline is what Windows answers a change to an offline disk: 41003
// "the disk is offline" (the Initialize, CreatePartition and SetAttributes
// pages under learn.microsoft.com/windows-hardware/drivers/storage/), which
// the Windows host reads as host.ErrNotReady: bring the disk online first
// (the host contract, pkg/host/hosttest).
func errOffline(d *DiskState) error {
	return fmt.Errorf("disk %d is offline: %w", d.Number, host.ErrNotReady)
}

func (d *DiskState) toHost() host.Disk {
	prod := "virtual_disk"
	mfr, model := "Msft", "Virtual Disk"
	if d.BusType == host.BusTypeISCSI {
		prod, mfr, model = "sim_iscsi_lun", "SIM", "iSCSI LUN"
	}
	out := host.Disk{
		Ref:            d.ref(),
		Number:         d.Number,
		Path:           `\\?\scsi#disk&ven_msft&prod_` + prod + `#` + d.ID + `#` + deviceInterfaceDisk,
		SerialNumber:   d.Serial,
		UniqueID:       d.Page83,
		Location:       d.Location,
		FriendlyName:   mfr + " " + model,
		Manufacturer:   mfr,
		Model:          model,
		Size:           d.Size,
		BusType:        d.BusType,
		PartitionStyle: d.PartitionStyle,
		IsBoot:         d.Boot,
		IsSystem:       d.System,
		IsReadOnly:     d.ReadOnly,
		IsOffline:      d.Offline,
		HealthStatus:   d.Health,
	}
	if d.PartitionStyle == host.PartitionStyleGPT && d.GUID != "" {
		out.GUID = "{" + strings.ToUpper(d.GUID) + "}" // as Get-Disk shows it
	}
	if d.Offline {
		out.OfflineReason = d.OfflineReason
	}
	if id := d.Identity; id != nil {
		out.FriendlyName, out.Manufacturer, out.Model = id.FriendlyName, id.Manufacturer, id.Model
		out.UniqueID, out.UniqueIDFormat = id.UniqueID, id.UniqueIDFormat
		out.AdapterSerialNumber = id.AdapterSerialNumber
		if id.Path != "" {
			out.Path = id.Path
		}
	}
	return out
}

func (st *State) diskByNumber(n uint32) *DiskState {
	for i := range st.Disks {
		if st.Disks[i].Number == n {
			return &st.Disks[i]
		}
	}
	return nil
}

// disk finds the disk a caller passes back: by Ref when set (a disk that
// was detached and whose number was reused is not found), else by number.
func (st *State) disk(d host.Disk) (*DiskState, error) {
	if d.Ref != "" {
		id, ok := strings.CutPrefix(d.Ref, diskRefPrefix)
		if !ok {
			return nil, fmt.Errorf("disk %d: bad reference %q: %w", d.Number, d.Ref, host.ErrInvalid)
		}
		for i := range st.Disks {
			if st.Disks[i].ID == id {
				return &st.Disks[i], nil
			}
		}
		return nil, fmt.Errorf("disk %d: %w", d.Number, host.ErrNotFound)
	}
	if ds := st.diskByNumber(d.Number); ds != nil {
		return ds, nil
	}
	return nil, fmt.Errorf("disk %d: %w", d.Number, host.ErrNotFound)
}

func partitionRef(d *DiskState, offset uint64) string {
	return d.ref() + partitionInfix + strconv.FormatUint(offset, 10)
}

// partition finds a partition by Ref (disk ID and offset), else by disk and
// partition number.
func (st *State) partition(p host.Partition) (*DiskState, *PartitionState, error) {
	if p.Ref != "" {
		rest, ok := strings.CutPrefix(p.Ref, diskRefPrefix)
		id, off, ok2 := strings.Cut(rest, partitionInfix)
		offset, err := strconv.ParseUint(off, 10, 64)
		if !ok || !ok2 || err != nil {
			return nil, nil, fmt.Errorf("partition %d on disk %d: bad reference %q: %w", p.Number, p.DiskNumber, p.Ref, host.ErrInvalid)
		}
		for i := range st.Disks {
			d := &st.Disks[i]
			if d.ID != id {
				continue
			}
			for j := range d.Partitions {
				if d.Partitions[j].Offset == offset {
					return d, &d.Partitions[j], nil
				}
			}
		}
		return nil, nil, fmt.Errorf("partition %d on disk %d: %w", p.Number, p.DiskNumber, host.ErrNotFound)
	}
	d := st.diskByNumber(p.DiskNumber)
	if d == nil || p.Number == 0 || int(p.Number) > len(d.Partitions) {
		return nil, nil, fmt.Errorf("partition %d on disk %d: %w", p.Number, p.DiskNumber, host.ErrNotFound)
	}
	return d, &d.Partitions[p.Number-1], nil
}

func (st *State) toHostPartition(d *DiskState, i int, dirSep string) host.Partition {
	p := &d.Partitions[i]
	out := host.Partition{
		Ref:        partitionRef(d, p.Offset),
		DiskNumber: d.Number,
		Number:     uint32(i + 1),
		Offset:     p.Offset,
		Size:       p.Size,
		IsReadOnly: d.ReadOnly,
		// Uncertain: what MSFT_Partition.IsOffline reports for the
		// partitions of an offline disk; the sim reports the disk's state.
		IsOffline: d.Offline,
	}
	if d.PartitionStyle == host.PartitionStyleGPT {
		out.GptType = p.GptType
	} else {
		out.MbrType = p.MbrType
	}
	// MSFT_Partition.AccessPaths lists drive letter and mount folders (with
	// a trailing separator) and the volume GUID path last. While the disk
	// is offline its volumes are not mounted, so there are none.
	if p.Volume != nil && !d.Offline {
		if p.DriveLetter != "" {
			out.AccessPaths = append(out.AccessPaths, p.DriveLetter+`:\`)
		}
		for _, m := range st.Mounts {
			if m.Volume == p.Volume.GUID {
				out.AccessPaths = append(out.AccessPaths, strings.TrimSuffix(m.Dir, dirSep)+dirSep)
			}
		}
		out.AccessPaths = append(out.AccessPaths, guidPath(p.Volume.GUID))
	}
	return out
}

// addDisk gives d the lowest free disk number and a fresh ID. Windows hands
// out disk numbers in enumeration order and reuses freed ones; "lowest
// free" is a simplification of that.
func (st *State) addDisk(d DiskState) uint32 {
	n := uint32(0)
	for st.diskByNumber(n) != nil {
		n++
	}
	d.Number = n
	d.ID = "disk-" + strconv.FormatUint(st.NextDiskID, 10)
	if d.PartitionStyle == host.PartitionStyleGPT && d.GUID == "" {
		d.GUID = newGUID()
	}
	st.NextDiskID++
	st.Disks = append(st.Disks, d)
	sortDisks(st)
	return n
}

func (st *State) removeDisk(id string) {
	for i := range st.Disks {
		if st.Disks[i].ID == id {
			st.Disks = append(st.Disks[:i], st.Disks[i+1:]...)
			return
		}
	}
}

type extent struct{ start, end uint64 }

// freeExtents returns the gaps between partitions in disk order, their
// starts aligned to 1 MiB.
func (d *DiskState) freeExtents() []extent {
	start, end := d.usable()
	var out []extent
	pos := start
	add := func(to uint64) {
		a := alignUp(pos, partitionAlignment)
		if a < to && to-a >= sectorSize {
			out = append(out, extent{a, to - (to-a)%sectorSize})
		}
	}
	for _, p := range d.Partitions {
		if p.Offset > pos {
			add(p.Offset)
		}
		if e := p.Offset + p.Size; e > pos {
			pos = e
		}
	}
	if end > pos {
		add(end)
	}
	return out
}

// followingFree returns the free bytes right after the partition.
func (d *DiskState) followingFree(p *PartitionState) uint64 {
	_, end := d.usable()
	next := end
	for _, q := range d.Partitions {
		if q.Offset > p.Offset && q.Offset < next {
			next = q.Offset
		}
	}
	if e := p.Offset + p.Size; next > e {
		return next - e
	}
	return 0
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) / a * a }

func isReservedPartition(p *PartitionState) bool {
	return host.Partition{GptType: p.GptType, MbrType: p.MbrType}.IsReserved()
}

// page83For derives a 16-byte identifier (hex) from a name.
func page83For(name string) string {
	sum := sha1.Sum([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// disks implements host.Disks.
type disks struct{ s *Sim }

func (h disks) List(ctx context.Context) ([]host.Disk, error) {
	return call(ctx, h.s, OpDisksList, false, func(st *State) ([]host.Disk, error) {
		out := make([]host.Disk, 0, len(st.Disks))
		for i := range st.Disks {
			out = append(out, st.Disks[i].toHost())
		}
		return out, nil
	})
}

func (h disks) Get(ctx context.Context, number uint32) (host.Disk, error) {
	return call(ctx, h.s, OpDisksGet, false, func(st *State) (host.Disk, error) {
		d := st.diskByNumber(number)
		if d == nil {
			return host.Disk{}, fmt.Errorf("disk %d: %w", number, host.ErrNotFound)
		}
		return d.toHost(), nil
	})
}

func (h disks) DeviceIDs(ctx context.Context, disk host.Disk) ([]host.Designator, error) {
	return call(ctx, h.s, OpDisksDeviceIDs, false, func(st *State) ([]host.Designator, error) {
		d, err := st.disk(disk)
		if err != nil {
			return nil, err
		}
		return d.deviceIDs()
	})
}

func (h disks) SCSIAddress(ctx context.Context, disk host.Disk) (host.SCSIAddress, error) {
	return call(ctx, h.s, OpDisksSCSIAddress, false, func(st *State) (host.SCSIAddress, error) {
		d, err := st.disk(disk)
		if err != nil {
			return host.SCSIAddress{}, err
		}
		return d.scsiAddress()
	})
}

func (h disks) Rescan(ctx context.Context) error {
	_, err := call(ctx, h.s, OpDisksRescan, true, func(st *State) (struct{}, error) {
		h.s.rescan(st)
		return struct{}{}, nil
	})
	return err
}

// rescan is UpdateHostStorageCache: new disk sizes and late LUNs become
// visible.
func (s *Sim) rescan(st *State) {
	st.Rescans++
	for i := range st.Disks {
		if d := &st.Disks[i]; d.PendingSize != 0 {
			d.Size, d.PendingSize = d.PendingSize, 0
		}
	}
	for ti := range st.Targets {
		t := &st.Targets[ti]
		if !st.hasSession(t.IQN) {
			continue
		}
		for li := range t.LUNs {
			if l := &t.LUNs[li]; l.Pending > 0 {
				l.Pending--
				if l.Pending == 0 {
					s.attachLUN(st, t, l)
				}
			}
		}
	}
}

// autoLocation is the location of the disk at a LUN of SCSI adapter 1, the
// adapter of volume disks (AttachVolumeDisk) and declared (Setup) disks.
func autoLocation(lun uint32) string {
	return fmt.Sprintf("Integrated : Adapter 1 : Port 0 : Target 0 : LUN %d", lun)
}

// nextAutoLUN returns the next LUN of adapter 1 that no attached disk has,
// as a cloud picks a free LUN for a disk it attaches.
func (st *State) nextAutoLUN() uint32 {
	for {
		l := st.NextAutoLUN
		st.NextAutoLUN++
		if !slices.ContainsFunc(st.Disks, func(d DiskState) bool { return d.Location == autoLocation(l) }) {
			return l
		}
	}
}

// blankDisk is a disk as a cloud attaches a new one: RAW, writable, and
// offline, since Windows Server's default SAN policy (OfflineShared) keeps
// new disks on shared buses offline (docs/windows.md#san-policy). page83 ""
// derives one from the serial.
func blankDisk(serial, page83 string, size uint64, lun uint32) DiskState {
	if page83 == "" {
		page83 = page83For(serial)
	}
	return DiskState{
		Serial:         serial,
		Page83:         page83,
		Location:       autoLocation(lun),
		Size:           size,
		BusType:        host.BusTypeSCSI,
		Offline:        true,
		OfflineReason:  host.OfflineReasonPolicy,
		Health:         host.HealthHealthy,
		PartitionStyle: host.PartitionStyleRAW,
	}
}

func (h disks) SetReadOnly(ctx context.Context, disk host.Disk, readOnly bool) error {
	_, err := call(ctx, h.s, OpDisksSetReadOnly, true, func(st *State) (struct{}, error) {
		d, err := st.disk(disk)
		if err != nil {
			return struct{}{}, err
		}
		if d.critical() {
			return struct{}{}, fmt.Errorf("disk %d is the boot/system disk: %w", d.Number, host.ErrConflict)
		}
		// Whether Windows changes the attribute of an offline disk is
		// uncertain (WindowsAnswers.OfflineReadOnly). Refusing, the
		// exception kept is a clone whose signature collides with an
		// online disk: clearing its read-only attribute while it is offline
		// is what lets it come online (kubernetes-csi/csi-proxy#287, where
		// diskpart did it).
		if d.Offline && !d.Collision && h.s.cfg.Windows.OfflineReadOnly == OfflineReadOnlyRefuse {
			return struct{}{}, errOffline(d)
		}
		d.ReadOnly = readOnly
		return struct{}{}, nil
	})
	return err
}

func (h disks) SetOnline(ctx context.Context, disk host.Disk, online bool) error {
	_, err := call(ctx, h.s, OpDisksSetOnline, true, func(st *State) (struct{}, error) {
		d, err := st.disk(disk)
		if err != nil {
			return struct{}{}, err
		}
		if !online {
			if d.critical() {
				return struct{}{}, fmt.Errorf("disk %d is the boot/system disk: %w", d.Number, host.ErrConflict)
			}
			if !d.Offline {
				// MSFT_Disk docs: OfflineReason 1 "Policy" is also "the
				// user requested the disk to be offline" (uncertain).
				d.Offline, d.OfflineReason = true, host.OfflineReasonPolicy
			}
			return struct{}{}, nil
		}
		if !d.Offline {
			return struct{}{}, nil
		}
		if d.Collision {
			// A clone's signature collides with an online disk: Windows
			// refuses to online it while it is read-only; once read-only is
			// cleared it writes a new signature and brings the disk online
			// (csi-proxy#287; docs/windows.md, "Signature collisions").
			if d.ReadOnly {
				return struct{}{}, fmt.Errorf("disk %d: signature collides with an online disk: %w", d.Number, host.ErrConflict)
			}
			d.Collision = false
		}
		d.Offline, d.OfflineReason = false, host.OfflineReasonNone
		return struct{}{}, nil
	})
	return err
}

func (h disks) Initialize(ctx context.Context, disk host.Disk, style host.PartitionStyle) error {
	_, err := call(ctx, h.s, OpDisksInitialize, true, func(st *State) (struct{}, error) {
		d, err := st.disk(disk)
		if err != nil {
			return struct{}{}, err
		}
		if err := d.writableCheck(); err != nil {
			return struct{}{}, err
		}
		if style != host.PartitionStyleGPT && style != host.PartitionStyleMBR {
			return struct{}{}, fmt.Errorf("disk %d: partition style %s: %w", d.Number, style, host.ErrInvalid)
		}
		if d.PartitionStyle != host.PartitionStyleRAW {
			return struct{}{}, fmt.Errorf("disk %d is initialized (%s): %w", d.Number, d.PartitionStyle, host.ErrAlreadyExists)
		}
		d.PartitionStyle = style
		d.Partitions = nil
		d.GUID = ""
		if style == host.PartitionStyleGPT {
			d.Partitions = []PartitionState{{Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}}
			d.GUID = newGUID()
		}
		return struct{}{}, nil
	})
	return err
}

func (h disks) Partitions(ctx context.Context, disk host.Disk) ([]host.Partition, error) {
	sep := h.s.sep()
	return call(ctx, h.s, OpDisksPartitions, false, func(st *State) ([]host.Partition, error) {
		d, err := st.disk(disk)
		if err != nil {
			return nil, err
		}
		// The partition table is read even while the disk is offline.
		out := make([]host.Partition, 0, len(d.Partitions))
		for i := range d.Partitions {
			out = append(out, st.toHostPartition(d, i, sep))
		}
		return out, nil
	})
}

func (h disks) CreatePartition(ctx context.Context, disk host.Disk) (host.Partition, error) {
	sep := h.s.sep()
	return call(ctx, h.s, OpDisksCreatePartition, true, func(st *State) (host.Partition, error) {
		d, err := st.disk(disk)
		if err != nil {
			return host.Partition{}, err
		}
		if err := d.writableCheck(); err != nil {
			return host.Partition{}, err
		}
		limit := gptMaxPartitions
		switch d.PartitionStyle {
		case host.PartitionStyleRAW:
			return host.Partition{}, fmt.Errorf("disk %d is not initialized: %w", d.Number, host.ErrConflict)
		case host.PartitionStyleMBR:
			limit = mbrMaxPartitions
		}
		if len(d.Partitions) >= limit {
			return host.Partition{}, fmt.Errorf("disk %d: partition table full: %w", d.Number, host.ErrOutOfRange)
		}
		var best extent
		for _, e := range d.freeExtents() {
			if e.end-e.start > best.end-best.start {
				best = e
			}
		}
		if best.end-best.start < partitionAlignment {
			return host.Partition{}, fmt.Errorf("disk %d: no free space: %w", d.Number, host.ErrOutOfRange)
		}
		p := PartitionState{Offset: best.start, Size: best.end - best.start,
			Volume: &VolumeState{GUID: newGUID(), Size: best.end - best.start, Health: host.HealthHealthy}}
		if d.PartitionStyle == host.PartitionStyleGPT {
			p.GptType = host.GptTypeBasicData
		} else {
			p.MbrType = host.MbrTypeIFS
		}
		d.insertPartition(p)
		for i := range d.Partitions {
			if d.Partitions[i].Offset == p.Offset {
				return st.toHostPartition(d, i, sep), nil
			}
		}
		panic("sim: inserted partition vanished")
	})
}

func (d *DiskState) insertPartition(p PartitionState) {
	i := 0
	for i < len(d.Partitions) && d.Partitions[i].Offset < p.Offset {
		i++
	}
	d.Partitions = append(d.Partitions, PartitionState{})
	copy(d.Partitions[i+1:], d.Partitions[i:])
	d.Partitions[i] = p
}

func (h disks) MaxPartitionSize(ctx context.Context, part host.Partition) (uint64, error) {
	return call(ctx, h.s, OpDisksMaxPartitionSize, false, func(st *State) (uint64, error) {
		d, p, err := st.partition(part)
		if err != nil {
			return 0, err
		}
		return p.Size + d.followingFree(p), nil
	})
}

func (h disks) ResizePartition(ctx context.Context, part host.Partition, size uint64) error {
	_, err := call(ctx, h.s, OpDisksResizePartition, true, func(st *State) (struct{}, error) {
		d, p, err := st.partition(part)
		if err != nil {
			return struct{}{}, err
		}
		name := fmt.Sprintf("partition at offset %d on disk %d", p.Offset, d.Number)
		// Extending C: is allowed, hence no critical-disk check.
		if d.Offline {
			return struct{}{}, errOffline(d)
		}
		if d.ReadOnly {
			return struct{}{}, fmt.Errorf("disk %d: %w", d.Number, host.ErrReadOnly)
		}
		if isReservedPartition(p) {
			return struct{}{}, fmt.Errorf("%s is reserved: %w", name, host.ErrInvalid)
		}
		if size == p.Size {
			return struct{}{}, nil
		}
		if size%sectorSize != 0 {
			return struct{}{}, fmt.Errorf("%s: size %d is not a multiple of %d: %w", name, size, sectorSize, host.ErrInvalid)
		}
		delta := size - p.Size
		if size < p.Size {
			delta = p.Size - size
		}
		if delta < minResizeDelta {
			return struct{}{}, fmt.Errorf("%s: the size of the extent is less than the minimum of 1MB: %w", name, host.ErrOutOfRange)
		}
		if max := p.Size + d.followingFree(p); size > max {
			return struct{}{}, fmt.Errorf("%s: size %d exceeds the maximum %d: %w", name, size, max, host.ErrOutOfRange)
		}
		if size < p.Size && p.Volume != nil && p.Volume.FileSystem != "" {
			// Shrinking below the data is refused; the sim's minimum is the
			// bytes in use plus metadata (Windows asks defrag, slowly).
			used, err := dirUsage(h.s.volumeDir(p.Volume.GUID), p.Volume.AllocationUnit)
			if err != nil {
				return struct{}{}, err
			}
			if min := used + fsOverhead(p.Volume.FileSystem, p.Volume.Size); size < min {
				return struct{}{}, fmt.Errorf("%s: size %d is below the minimum %d: %w", name, size, min, host.ErrOutOfRange)
			}
		}
		p.Size = size
		if p.Volume != nil {
			p.Volume.Size = size
		}
		return struct{}{}, nil
	})
	return err
}

// DiskSpec describes a disk for AttachDisk. Zero fields take defaults.
type DiskSpec struct {
	Serial string
	Page83 string
	// Location is MSFT_Disk.Location; when empty it is built from Adapter,
	// Port, Target and LUN as "Integrated : Adapter a : Port p : Target t : LUN l".
	// Adapter 0 is the boot disk's adapter (and LUN 0 its LUN), so leaving
	// all four zero makes a disk whose location matches the boot disk's:
	// set them when a test selects disks by location.
	Location                   string
	Adapter, Port, Target, LUN uint32
	Size                       uint64       // 0: 1 GiB
	BusType                    host.BusType // 0: SCSI
	ReadOnly                   bool
	// Offline disks report OfflineReason (0: Policy).
	Offline       bool
	OfflineReason host.OfflineReason
	// Collision attaches a clone whose signature collides with an online
	// disk: offline with reason Collision and read-only, the state the
	// clones in csi-proxy #287 and gcp-pd #664 are left in (uncertain
	// whether Windows always sets read-only too).
	Collision bool
	Health    host.HealthStatus
	// PartitionStyle RAW leaves the disk blank unless FileSystem is set.
	PartitionStyle host.PartitionStyle
	// Partitions are laid out in order from the first aligned offset (after
	// the MSR partition on GPT, as Initialize would make it).
	Partitions []PartitionSpec
	// FileSystem pre-formats the disk: GPT, MSR, one Basic Data partition
	// of maximum size holding a volume with this file system and Label.
	FileSystem string
	Label      string
}

// PartitionSpec is a pre-made partition.
type PartitionSpec struct {
	Size       uint64 // 0: the rest of the disk
	GptType    string // "": Basic Data
	MbrType    uint16 // 0: IFS
	FileSystem string // "": RAW volume
	Label      string
}

// AttachDisk attaches a disk and returns its number. A disk whose Serial
// matches a detached disk is that disk coming back: its contents are
// restored (the spec may then carry no layout) and it keeps the larger of
// the two sizes.
func (s *Sim) AttachDisk(spec DiskSpec) (uint32, error) {
	var n uint32
	err := s.control(func(st *State) error {
		var err error
		n, err = s.attachDisk(st, spec)
		return err
	})
	return n, err
}

func (s *Sim) attachDisk(st *State, spec DiskSpec) (uint32, error) {
	hasLayout := spec.PartitionStyle != host.PartitionStyleRAW || len(spec.Partitions) > 0 || spec.FileSystem != ""
	if spec.Serial != "" {
		for _, d := range st.Detached {
			if d.Serial == spec.Serial {
				if hasLayout {
					return 0, fmt.Errorf("disk serial %q: a detached disk with contents exists: %w", spec.Serial, host.ErrAlreadyExists)
				}
				n, _ := st.reattach(spec.Serial, spec, false)
				return n, nil
			}
		}
	}
	d := diskFromSpec(spec)
	if hasLayout {
		if err := s.layout(&d, spec); err != nil {
			return 0, err
		}
	}
	return st.addDisk(d), nil
}

func diskFromSpec(spec DiskSpec) DiskState {
	d := DiskState{
		Serial:        spec.Serial,
		Page83:        spec.Page83,
		Location:      spec.Location,
		Size:          spec.Size,
		BusType:       spec.BusType,
		ReadOnly:      spec.ReadOnly,
		Offline:       spec.Offline,
		OfflineReason: spec.OfflineReason,
		Collision:     spec.Collision,
		Health:        spec.Health,
	}
	if d.Size == 0 {
		d.Size = DefaultDiskSize
	}
	if d.BusType == host.BusTypeUnknown {
		d.BusType = host.BusTypeSCSI
	}
	if d.Location == "" {
		d.Location = fmt.Sprintf("Integrated : Adapter %d : Port %d : Target %d : LUN %d", spec.Adapter, spec.Port, spec.Target, spec.LUN)
	}
	if d.Collision {
		d.Offline, d.OfflineReason, d.ReadOnly = true, host.OfflineReasonCollision, true
	}
	if d.Offline && d.OfflineReason == host.OfflineReasonNone {
		d.OfflineReason = host.OfflineReasonPolicy
	}
	if !d.Offline {
		d.OfflineReason = host.OfflineReasonNone
	}
	return d
}

// reattach brings back a detached disk by serial, with spec's attributes;
// auto marks a volume disk (AttachVolumeDisk), which comes back offline by
// SAN policy.
func (st *State) reattach(serial string, spec DiskSpec, auto bool) (uint32, bool) {
	for i, old := range st.Detached {
		if old.Serial != serial {
			continue
		}
		st.Detached = append(st.Detached[:i], st.Detached[i+1:]...)
		d := diskFromSpec(spec)
		if spec.Size == 0 {
			d.Size = old.Size
		}
		if d.Size < old.Size {
			d.Size = old.Size
		}
		if spec.Location == "" && spec.Adapter == 0 && spec.Target == 0 && spec.LUN == 0 && spec.Port == 0 {
			d.Location = old.Location
		}
		if spec.Page83 == "" {
			d.Page83 = old.Page83
		}
		if spec.BusType == host.BusTypeUnknown {
			d.BusType = old.BusType
		}
		d.Serial = old.Serial
		d.PartitionStyle = old.PartitionStyle
		d.Partitions = old.Partitions
		d.GUID = old.GUID
		if auto {
			d.Offline, d.OfflineReason = true, host.OfflineReasonPolicy
		}
		return st.addDisk(d), true
	}
	return 0, false
}

// layout applies a spec's partition style, partitions and file systems.
func (s *Sim) layout(d *DiskState, spec DiskSpec) error {
	parts := spec.Partitions
	style := spec.PartitionStyle
	if spec.FileSystem != "" {
		if len(parts) > 0 {
			return fmt.Errorf("disk spec: both FileSystem and Partitions set: %w", host.ErrInvalid)
		}
		parts = []PartitionSpec{{FileSystem: spec.FileSystem, Label: spec.Label}}
		if style == host.PartitionStyleRAW {
			style = host.PartitionStyleGPT
		}
	}
	switch style {
	case host.PartitionStyleGPT:
		d.Partitions = []PartitionState{{Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}}
		if d.GUID == "" {
			d.GUID = newGUID()
		}
	case host.PartitionStyleMBR:
	default:
		return fmt.Errorf("disk spec: partitions need partition style GPT or MBR: %w", host.ErrInvalid)
	}
	d.PartitionStyle = style
	for _, ps := range parts {
		ext := d.freeExtents()
		if len(ext) == 0 {
			return fmt.Errorf("disk spec: partitions do not fit: %w", host.ErrOutOfRange)
		}
		e := ext[len(ext)-1]
		size := ps.Size
		if size == 0 {
			size = e.end - e.start
		}
		if size > e.end-e.start || size%sectorSize != 0 {
			return fmt.Errorf("disk spec: partition size %d does not fit: %w", ps.Size, host.ErrOutOfRange)
		}
		p := PartitionState{Offset: e.start, Size: size}
		if style == host.PartitionStyleGPT {
			p.GptType = strings.ToLower(ps.GptType)
			if p.GptType == "" {
				p.GptType = host.GptTypeBasicData
			}
		} else {
			p.MbrType = ps.MbrType
			if p.MbrType == 0 {
				p.MbrType = host.MbrTypeIFS
			}
		}
		if !isReservedPartition(&p) {
			v := &VolumeState{GUID: newGUID(), Size: size, Health: host.HealthHealthy}
			if ps.FileSystem != "" {
				fs, unit, err := checkFormat(ps.FileSystem, 0, ps.Label, true)
				if err != nil {
					return err
				}
				v.FileSystem, v.Label, v.AllocationUnit = fs, ps.Label, unit
				if err := s.makeVolumeDir(v.GUID); err != nil {
					return err
				}
			}
			p.Volume = v
		}
		d.insertPartition(p)
	}
	return nil
}

// DetachDisk removes a disk, as a cloud detach does. Its contents are kept
// by serial for a later AttachDisk (or AttachVolumeDisk) of the same
// serial.
// Mount points of its volumes stay, as reparse points do on Windows.
func (s *Sim) DetachDisk(number uint32) error {
	return s.control(func(st *State) error {
		d := st.diskByNumber(number)
		if d == nil {
			return fmt.Errorf("disk %d: %w", number, host.ErrNotFound)
		}
		if d.critical() {
			return fmt.Errorf("disk %d is the boot/system disk: %w", number, host.ErrConflict)
		}
		if d.Target != "" {
			return fmt.Errorf("disk %d is iSCSI LUN %d of %s (log out instead): %w", number, d.LUN, d.Target, host.ErrConflict)
		}
		if d.Serial != "" {
			for i := range st.Detached {
				if st.Detached[i].Serial == d.Serial {
					st.Detached = append(st.Detached[:i], st.Detached[i+1:]...)
					break
				}
			}
			parked := *d
			if parked.PendingSize != 0 {
				parked.Size, parked.PendingSize = parked.PendingSize, 0
			}
			st.Detached = append(st.Detached, parked)
		}
		st.removeDisk(d.ID)
		return nil
	})
}

// ResizeDisk changes a disk's size, as a cloud expansion does. The host
// sees the new size after the next Disks.Rescan (or Reboot): drivers rescan
// before growing a partition; whether Windows notices the change by itself
// is uncertain (docs/windows.md#growing-a-disk).
func (s *Sim) ResizeDisk(number uint32, size uint64) error {
	return s.control(func(st *State) error {
		d := st.diskByNumber(number)
		if d == nil {
			return fmt.Errorf("disk %d: %w", number, host.ErrNotFound)
		}
		if size%sectorSize != 0 {
			return fmt.Errorf("disk %d: size %d is not a multiple of %d: %w", number, size, sectorSize, host.ErrInvalid)
		}
		var end uint64
		for _, p := range d.Partitions {
			end = max(end, p.Offset+p.Size)
		}
		probe := *d
		probe.Size = size
		if _, usableEnd := probe.usable(); d.PartitionStyle != host.PartitionStyleRAW && usableEnd < end {
			return fmt.Errorf("disk %d: size %d cuts partitions: %w", number, size, host.ErrOutOfRange)
		}
		d.PendingSize = size
		if size == d.Size {
			d.PendingSize = 0
		}
		return nil
	})
}

// AttachVolumeDisk attaches the disk of a volume as a cloud's
// ControllerPublishVolume does, for a stand-in of the controller
// (pkg/sim/controller): when no attached disk has the serial, the disk
// detached with that serial comes back with its contents, else a blank
// disk of size bytes (0: DefaultDiskSize) is attached: RAW, writable,
// offline by SAN policy, BusType SCSI, page 83 derived from the serial, at
// the next free LUN of adapter 1. It returns the disk's number and whether
// it attached one (false: a disk with the serial was attached already).
func (s *Sim) AttachVolumeDisk(serial string, size uint64) (uint32, bool, error) {
	if serial == "" {
		return 0, false, fmt.Errorf("attach a volume's disk: no serial: %w", host.ErrInvalid)
	}
	if size == 0 {
		size = DefaultDiskSize
	}
	if size%sectorSize != 0 {
		return 0, false, fmt.Errorf("attach disk %q: size %d is not a multiple of %d: %w", serial, size, sectorSize, host.ErrInvalid)
	}
	var n uint32
	var attached bool
	err := s.control(func(st *State) error {
		for _, d := range st.Disks {
			if d.Serial == serial {
				n = d.Number
				return nil
			}
		}
		attached = true
		var ok bool
		if n, ok = st.reattach(serial, DiskSpec{}, true); !ok {
			n = st.addDisk(blankDisk(serial, "", size, st.nextAutoLUN()))
		}
		return nil
	})
	return n, attached, err
}

// GrowVolumeDisk grows the disk with the serial as a cloud's
// ControllerExpandVolume does, for a stand-in of the controller: to size
// rounded up to whole MiB when it is smaller (it never shrinks a disk), the
// new size visible after the next Disks.Rescan as with ResizeDisk. iSCSI
// LUNs and the boot disk are not such disks. It returns the disk's number
// and its size before and after (equal when it did not grow); ErrNotFound
// when no such disk is attached.
func (s *Sim) GrowVolumeDisk(serial string, size uint64) (number uint32, from, to uint64, err error) {
	want := alignUp(size, mib)
	err = s.control(func(st *State) error {
		for i := range st.Disks {
			d := &st.Disks[i]
			if d.Serial != serial || d.Target != "" || d.critical() {
				continue
			}
			number, from = d.Number, max(d.Size, d.PendingSize)
			to = max(from, want)
			if to > from {
				d.PendingSize = to
			}
			return nil
		}
		return fmt.Errorf("no attached disk has serial %q: %w", serial, host.ErrNotFound)
	})
	return number, from, to, err
}

// DiskChange changes disk attributes behind the plugin's back (faults).
// Nil fields are left alone.
type DiskChange struct {
	ReadOnly      *bool
	Offline       *bool
	OfflineReason *host.OfflineReason
	Collision     *bool
	Health        *host.HealthStatus
}

// SetDiskState changes disk attributes.
func (s *Sim) SetDiskState(number uint32, c DiskChange) error {
	return s.control(func(st *State) error {
		d := st.diskByNumber(number)
		if d == nil {
			return fmt.Errorf("disk %d: %w", number, host.ErrNotFound)
		}
		if c.ReadOnly != nil {
			d.ReadOnly = *c.ReadOnly
		}
		if c.Offline != nil {
			d.setOffline(*c.Offline)
		}
		if c.OfflineReason != nil && d.Offline {
			d.OfflineReason = *c.OfflineReason
		}
		if c.Collision != nil {
			d.Collision = *c.Collision
			if d.Collision {
				d.Offline, d.OfflineReason = true, host.OfflineReasonCollision
			}
		}
		if c.Health != nil {
			d.Health = *c.Health
		}
		return nil
	})
}
