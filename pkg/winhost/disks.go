package winhost

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
)

// Disks implements host.Disks with MSFT_Disk, MSFT_Partition and
// MSFT_StorageSetting (Root\Microsoft\Windows\Storage) and the
// IOCTL_STORAGE_QUERY_PROPERTY device-ID query, all through an Executor.
//
// Methods are invoked on the object path (__PATH) read with the disk.
// Uncertain: that the path stays valid across Online, Initialize and
// CreatePartition on the same disk; ObjectId, the key it is made of, names
// the device, not its state, and csi-proxy re-queries the disk before each
// method instead, at the cost of one round trip each.
type Disks struct{ s storage }

var _ host.Disks = (*Disks)(nil)

// NewDisks returns the disk side of the Windows host.
func NewDisks(e Executor) *Disks { return &Disks{s: storage{e}} }

// diskProps are the MSFT_Disk properties the plugin reads. ObjectId is the
// class key: without it WMI returns no usable __PATH for the partial
// instances a property list produces, and methods could not be invoked.
//
// AdapterSerialNumber is missing from the simplified syntax on the MSFT_Disk
// documentation page, but the class's MOF has it (string; microsoft/wmi
// v0.43.0, server2019 and server23h2 .../storage/MSFT_Disk.go), which the
// schema test checks; Azure SCSI disks report it blank
// (kubernetes-sigs/azuredisk-csi-driver#2661, Get-Disk | select *). Guid
// (string in the same MOF) is "the GUID of the disk, if it's GPT formatted"
// (learn.microsoft.com/windows-hardware/drivers/storage/msft-disk); the
// disk backend compares it before it writes to a partitioned disk.
var diskProps = []string{
	"ObjectId", "Number", "Path", "SerialNumber", "UniqueId", "UniqueIdFormat", "Location", "FriendlyName",
	"Manufacturer", "Model", "AdapterSerialNumber", "Guid", "Size", "BusType", "PartitionStyle", "IsBoot", "IsSystem", "IsReadOnly",
	"IsOffline", "OfflineReason", "HealthStatus",
}

// partitionProps are the MSFT_Partition properties the plugin reads. Offset
// is missing from the simplified syntax on the MSFT_Partition documentation
// page, but the class's MOF has it (uint64; microsoft/wmi v0.43.0,
// server2019 and server23h2 .../storage/MSFT_Partition.go), which the
// schema test checks.
var partitionProps = []string{
	"ObjectId", "DiskNumber", "PartitionNumber", "Offset", "Size", "GptType", "MbrType",
	"AccessPaths", "IsReadOnly", "IsOffline",
}

// propsOf reads an instance, naming the class in errors when the executor
// left Instance.Class empty.
func propsOf(in Instance, class string) *Props {
	if in.Class == "" {
		in.Class = class
	}
	return PropsOf(in)
}

// parseDisk reads one MSFT_Disk. Properties whose absence could make the
// plugin touch the wrong disk (the boot and system flags, the state flags,
// the number, the partition style) are required: a disk that lacks them is
// reported, never guessed about.
func parseDisk(in Instance) (host.Disk, error) {
	if in.Path == "" {
		return host.Disk{}, &PropError{Class: classDisk, Prop: "__PATH"}
	}
	p := propsOf(in, classDisk)
	d := host.Disk{
		Ref:            in.Path,
		Number:         p.RequiredUint32("Number"),
		Path:           p.RequiredString("Path"),
		SerialNumber:   p.String("SerialNumber"),
		UniqueID:       p.String("UniqueId"),
		UniqueIDFormat: host.UniqueIDFormat(p.Uint16("UniqueIdFormat")),
		// NULL for Hyper-V and VHD disks (MSFT_Disk docs); empty for a
		// host-mounted VHD (dataplat/dbaclone PR #78).
		Location:            p.String("Location"),
		FriendlyName:        p.String("FriendlyName"),
		Manufacturer:        p.String("Manufacturer"),
		Model:               p.String("Model"),
		AdapterSerialNumber: p.String("AdapterSerialNumber"),
		GUID:                p.String("Guid"), // NULL on RAW and MBR disks
		Size:                p.RequiredUint64("Size"),
		BusType:             host.BusType(p.Uint16("BusType")),
		PartitionStyle:      host.PartitionStyle(p.RequiredUint16("PartitionStyle")),
		IsBoot:              p.RequiredBool("IsBoot"),
		IsSystem:            p.RequiredBool("IsSystem"),
		IsReadOnly:          p.RequiredBool("IsReadOnly"),
		IsOffline:           p.RequiredBool("IsOffline"),
		OfflineReason:       host.OfflineReason(p.Uint16("OfflineReason")),
		HealthStatus:        host.HealthStatus(p.Uint16("HealthStatus")),
	}
	if err := p.Err(); err != nil {
		return host.Disk{}, err
	}
	return d, nil
}

// parsePartition reads one MSFT_Partition. GptType is lower-cased: the
// provider reports it braced and lower case, and the plugin compares it
// with host.GptType* constants. A partition without an object path is
// returned with a *PropError for __PATH, so that a caller can still use
// its number to query it.
func parsePartition(in Instance) (host.Partition, error) {
	p := propsOf(in, classPartition)
	part := host.Partition{
		Ref:         in.Path,
		DiskNumber:  p.RequiredUint32("DiskNumber"),
		Number:      p.RequiredUint32("PartitionNumber"),
		Offset:      p.RequiredUint64("Offset"),
		Size:        p.RequiredUint64("Size"),
		GptType:     strings.ToLower(p.String("GptType")), // NULL on MBR disks
		MbrType:     p.Uint16("MbrType"),                  // NULL on GPT disks
		AccessPaths: p.Strings("AccessPaths"),
		IsReadOnly:  p.Bool("IsReadOnly"),
		IsOffline:   p.Bool("IsOffline"),
	}
	if err := p.Err(); err != nil {
		return host.Partition{}, err
	}
	if in.Path == "" {
		return part, &PropError{Class: classPartition, Prop: "__PATH"}
	}
	return part, nil
}

// List implements host.Disks: one query for every disk. A disk whose
// properties cannot be read is left out and logged.
func (d *Disks) List(ctx context.Context) ([]host.Disk, error) {
	insts, err := d.s.query(ctx, classDisk, diskProps)
	if err != nil {
		return nil, fmt.Errorf("list disks: %w", err)
	}
	log := klog.FromContext(ctx)
	disks := make([]host.Disk, 0, len(insts))
	for _, in := range insts {
		dk, err := parseDisk(in)
		if err != nil {
			log.V(2).Info("Skipping a disk whose properties cannot be read", "object", in.Path, "err", err)
			continue
		}
		disks = append(disks, dk)
	}
	slices.SortFunc(disks, func(a, b host.Disk) int { return cmp.Compare(a.Number, b.Number) })
	return disks, nil
}

// Get implements host.Disks: one query by Number.
func (d *Disks) Get(ctx context.Context, number uint32) (host.Disk, error) {
	insts, err := d.s.query(ctx, classDisk, diskProps, wql.Eq("Number", number))
	if err != nil {
		return host.Disk{}, fmt.Errorf("read disk %d: %w", number, err)
	}
	switch len(insts) {
	case 0:
		return host.Disk{}, fmt.Errorf("disk %d: %w", number, host.ErrNotFound)
	case 1:
	default:
		return host.Disk{}, fmt.Errorf("%d disks have number %d: %w", len(insts), number, host.ErrConflict)
	}
	dk, err := parseDisk(insts[0])
	if err != nil {
		return host.Disk{}, fmt.Errorf("read disk %d: %w", number, err)
	}
	return dk, nil
}

// DeviceIDs implements host.Disks with one IOCTL on the disk's device path
// (descriptor.go). A device that does not answer the device-ID query
// reports no identifiers: ErrNotFound (noIdentifier). A descriptor
// damaged after its first identifiers yields those.
func (d *Disks) DeviceIDs(ctx context.Context, dk host.Disk) ([]host.Designator, error) {
	path, err := devicePathOf(dk)
	if err != nil {
		return nil, err
	}
	b, err := d.s.e.StorageDeviceIDDescriptor(ctx, path)
	if err != nil {
		return nil, noIdentifier(dk, "device identifiers", err)
	}
	ids, err := parseDeviceIDDescriptor(b)
	if err != nil {
		if len(ids) == 0 {
			return nil, fmt.Errorf("read device identifiers of disk %d: %w", dk.Number, err)
		}
		klog.FromContext(ctx).V(2).Info("Using the identifiers read before a damaged part of the device-ID descriptor",
			"diskNumber", dk.Number, "identifiers", len(ids), "err", err)
	}
	return ids, nil
}

// SCSIAddress implements host.Disks with IOCTL_SCSI_GET_ADDRESS on the
// disk's device path (descriptor.go). A disk that does not answer it has no
// SCSI address: ErrNotFound (noIdentifier).
func (d *Disks) SCSIAddress(ctx context.Context, dk host.Disk) (host.SCSIAddress, error) {
	path, err := devicePathOf(dk)
	if err != nil {
		return host.SCSIAddress{}, err
	}
	b, err := d.s.e.SCSIAddress(ctx, path)
	if err != nil {
		return host.SCSIAddress{}, noIdentifier(dk, "SCSI address", err)
	}
	a, err := parseSCSIAddress(b)
	if err != nil {
		return host.SCSIAddress{}, fmt.Errorf("read the SCSI address of disk %d: %w", dk.Number, err)
	}
	return a, nil
}

// devicePathOf is the path the identification IOCTLs open: a disk without
// one has no identifiers (ErrNotFound).
func devicePathOf(dk host.Disk) (string, error) {
	if dk.Path == "" {
		return "", fmt.Errorf("disk %d has no device path: %w", dk.Number, host.ErrNotFound)
	}
	return dk.Path, nil
}

// noIdentifier maps the failure of a per-disk identification IOCTL. A
// device that does not implement it answers ERROR_INVALID_FUNCTION (the
// virtual disks of GitHub's Windows runners to the device-ID query:
// kubernetes-csi/csi-proxy@eeba470 integrationtests/disk_v1_test.go) or
// ERROR_NOT_SUPPORTED; ERROR_INVALID_PARAMETER is taken the same way
// (assumed: what Windows Server 2025's native NVMe stack answers is not
// documented). Those are ErrNotFound, "no such identifier". Other errors
// keep their mapping; the disk backend reads every failure of one disk as
// "no such identifier for this disk" and goes on with the others.
func noIdentifier(dk host.Disk, what string, err error) error {
	if isCode(err, ErrorInvalidFunction, ErrorNotSupported, ErrorInvalidParameter) {
		return fmt.Errorf("disk %d does not report its %s: %w: %w", dk.Number, what, err, host.ErrNotFound)
	}
	return fmt.Errorf("read the %s of disk %d: %w", what, dk.Number, mapHostErr(err))
}

// Rescan implements host.Disks: the static method
// MSFT_StorageSetting.UpdateHostStorageCache.
func (d *Disks) Rescan(ctx context.Context) error {
	if _, err := d.s.call(ctx, Method{Class: classStorageSetting, Name: "UpdateHostStorageCache"}); err != nil {
		return fmt.Errorf("rescan disks: %w", err)
	}
	return nil
}

// SetReadOnly implements host.Disks: MSFT_Disk.SetAttributes(IsReadOnly).
// Signature and Guid are not supplied, so they stay as they are.
//
// The SetAttributes page (learn.microsoft.com/windows-hardware/drivers/
// storage/msft-disk-setattributes) says "the disk must be online for most
// attributes to be set" and lists 41003 "the disk is offline"; on an
// offline disk that has not been initialised the provider may answer 41000
// "the disk has not been initialized" instead. Both mean, for an offline
// disk, that it must come online first: host.ErrNotReady, which the disk
// backend answers by bringing the disk online and trying again. Uncertain:
// whether Windows accepts IsReadOnly on an offline disk at all (diskpart's
// "attributes disk clear readonly" does, kubernetes-csi/csi-proxy#287);
// the integration suite's host contract checks it on a VHDX.
func (d *Disks) SetReadOnly(ctx context.Context, dk host.Disk, readOnly bool) error {
	if err := checkDisk(dk, "change the read-only attribute of"); err != nil {
		return err
	}
	_, err := d.s.call(ctx, Method{Class: classDisk, Path: dk.Ref, Name: "SetAttributes",
		In: []Param{{Name: "IsReadOnly", Value: readOnly}}})
	var me *MethodError
	if err != nil && dk.IsOffline && errors.As(err, &me) && me.ReturnValue == rvDiskNotInitialized {
		return fmt.Errorf("set read-only=%t on disk %d: the disk is offline (and blank): %w: %w", readOnly, dk.Number, me, host.ErrNotReady)
	}
	if err != nil {
		return fmt.Errorf("set read-only=%t on disk %d: %w", readOnly, dk.Number, err)
	}
	return nil
}

// rvDiskNotInitialized is MSFT_Disk's 41000 "the disk has not been
// initialized".
const rvDiskNotInitialized = 41000

// SetOnline implements host.Disks: MSFT_Disk.Online() or Offline().
//
// Windows documents no return value for a signature collision (the Online
// page lists only the generic codes). When a disk whose OfflineReason is
// Collision (4) fails to come online, the failure is reported as
// host.ErrConflict, whatever the return value, with what happened.
func (d *Disks) SetOnline(ctx context.Context, dk host.Disk, online bool) error {
	name, what := "Offline", fmt.Sprintf("take disk %d offline", dk.Number)
	if online {
		name, what = "Online", fmt.Sprintf("bring disk %d online", dk.Number)
	} else if err := checkDisk(dk, "take offline"); err != nil {
		return err
	}
	if dk.Ref == "" {
		return errNoRef(classDisk, dk.Number)
	}
	_, err := d.s.call(ctx, Method{Class: classDisk, Path: dk.Ref, Name: name})
	if err == nil {
		return nil
	}
	var me *MethodError
	if online && dk.OfflineReason == host.OfflineReasonCollision && errors.As(err, &me) {
		return fmt.Errorf("%s: its signature collides with another disk's "+
			"(a clone of a disk attached to this node): %w: %w", what, me, host.ErrConflict)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Initialize implements host.Disks: MSFT_Disk.Initialize(PartitionStyle
// UInt16). An initialised disk answers 41001, host.ErrAlreadyExists.
func (d *Disks) Initialize(ctx context.Context, dk host.Disk, style host.PartitionStyle) error {
	if style != host.PartitionStyleGPT && style != host.PartitionStyleMBR {
		return fmt.Errorf("initialise disk %d as %s: %w", dk.Number, style, host.ErrInvalid)
	}
	if err := checkDisk(dk, "initialise"); err != nil {
		return err
	}
	_, err := d.s.call(ctx, Method{Class: classDisk, Path: dk.Ref, Name: "Initialize",
		In: []Param{{Name: "PartitionStyle", Value: uint16(style)}}})
	if err != nil {
		return fmt.Errorf("initialise disk %d as %s: %w", dk.Number, style, err)
	}
	return nil
}

// Partitions implements host.Disks: one query by DiskNumber. Any partition
// that cannot be read fails the call: a partition left out could make the
// disk look empty and get partitioned over.
func (d *Disks) Partitions(ctx context.Context, dk host.Disk) ([]host.Partition, error) {
	insts, err := d.s.query(ctx, classPartition, partitionProps, wql.Eq("DiskNumber", dk.Number))
	if err != nil {
		return nil, fmt.Errorf("list partitions of disk %d: %w", dk.Number, err)
	}
	parts := make([]host.Partition, 0, len(insts))
	for _, in := range insts {
		p, err := parsePartition(in)
		if err != nil {
			return nil, fmt.Errorf("read a partition of disk %d: %w", dk.Number, err)
		}
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b host.Partition) int { return cmp.Compare(a.Number, b.Number) })
	return parts, nil
}

// CreatePartition implements host.Disks: MSFT_Disk.CreatePartition with
// UseMaximumSize, no drive letter, Basic Data (GPT) or IFS (MBR). The new
// partition is read from the CreatedPartition output parameter (an
// embedded MSFT_Partition), so no query follows in the usual case; it is
// queried only when the provider returns no usable object. A partition that
// comes up offline is brought online (MSFT_Partition.Online), as csi-proxy
// does for every new partition.
//
// 42002 ("the requested access path is already in use") is accepted only
// together with a created partition: the CreatePartition page documents it
// as "the partition will be created, but" the requested drive letter could
// not be assigned. The plugin requests none, so it should never occur; if
// it does without a partition, it is an error (csi-proxy ignored it always).
//
// Uncertain: whether the embedded object carries a __PATH (embedded
// instances need not); without one the partition is queried by number,
// one more round trip.
func (d *Disks) CreatePartition(ctx context.Context, dk host.Disk) (host.Partition, error) {
	if err := checkDisk(dk, "partition"); err != nil {
		return host.Partition{}, err
	}
	in := []Param{
		{Name: "UseMaximumSize", Value: true},
		{Name: "AssignDriveLetter", Value: false},
	}
	switch dk.PartitionStyle {
	case host.PartitionStyleGPT:
		in = append(in, Param{Name: "GptType", Value: host.GptTypeBasicData})
	case host.PartitionStyleMBR:
		in = append(in, Param{Name: "MbrType", Value: uint16(host.MbrTypeIFS)})
	case host.PartitionStyleRAW:
		// The Disk was read before the caller initialised it (the disk
		// backend passes the listing it started from). No type is
		// supplied: the provider's documented default is Basic Data on
		// GPT, the style the plugin initialises (on MBR it would be Huge).
	default:
		return host.Partition{}, fmt.Errorf("create a partition on disk %d of partition style %s: %w", dk.Number, dk.PartitionStyle, host.ErrInvalid)
	}
	r, err := d.s.call(ctx, Method{Class: classDisk, Path: dk.Ref, Name: "CreatePartition", In: in})
	var me *MethodError
	accessPathInUse := errors.As(err, &me) && me.ReturnValue == 42002
	if err != nil && !accessPathInUse {
		return host.Partition{}, fmt.Errorf("create a partition on disk %d: %w", dk.Number, err)
	}
	out := OutOf(classDisk, "CreatePartition", r)
	created, ok := out.TryInstance("CreatedPartition")
	if oerr := out.Err(); oerr != nil {
		return host.Partition{}, fmt.Errorf("create a partition on disk %d: %w", dk.Number, oerr)
	}
	if accessPathInUse && !ok {
		return host.Partition{}, fmt.Errorf("create a partition on disk %d: %w", dk.Number, err)
	}
	var p host.Partition
	perr := errors.New("no CreatedPartition object")
	if ok {
		p, perr = parsePartition(created)
	}
	if perr != nil {
		klog.FromContext(ctx).V(2).Info("CreatePartition returned no usable partition object; querying it",
			"diskNumber", dk.Number, "err", perr)
		if p, err = d.findCreated(ctx, dk, p.Number); err != nil {
			return host.Partition{}, err
		}
	}
	if p.IsOffline {
		if _, err := d.s.call(ctx, Method{Class: classPartition, Path: p.Ref, Name: "Online"}); err != nil {
			return host.Partition{}, fmt.Errorf("bring new partition %d of disk %d online: %w", p.Number, dk.Number, err)
		}
		p.IsOffline = false
	}
	return p, nil
}

// findCreated queries the partition CreatePartition made: by number when
// the output named it, else the disk's only data partition.
func (d *Disks) findCreated(ctx context.Context, dk host.Disk, number uint32) (host.Partition, error) {
	if number != 0 {
		insts, err := d.s.query(ctx, classPartition, partitionProps,
			wql.Eq("DiskNumber", dk.Number), wql.Eq("PartitionNumber", number))
		if err != nil {
			return host.Partition{}, fmt.Errorf("read new partition %d of disk %d: %w", number, dk.Number, err)
		}
		if len(insts) != 1 {
			return host.Partition{}, fmt.Errorf("new partition %d of disk %d: found %d: %w", number, dk.Number, len(insts), host.ErrNotFound)
		}
		p, err := parsePartition(insts[0])
		if err != nil {
			return host.Partition{}, fmt.Errorf("read new partition %d of disk %d: %w", number, dk.Number, err)
		}
		return p, nil
	}
	parts, err := d.Partitions(ctx, dk)
	if err != nil {
		return host.Partition{}, err
	}
	var data []host.Partition
	for _, p := range parts {
		if !p.IsReserved() {
			data = append(data, p)
		}
	}
	if len(data) != 1 {
		return host.Partition{}, fmt.Errorf("disk %d holds %d data partitions after creating one: %w", dk.Number, len(data), host.ErrConflict)
	}
	return data[0], nil
}

// MaxPartitionSize implements host.Disks: MSFT_Partition.GetSupportedSize,
// output SizeMax (a CIM uint64, which arrives as a decimal string).
func (d *Disks) MaxPartitionSize(ctx context.Context, p host.Partition) (uint64, error) {
	if p.Ref == "" {
		return 0, errNoRef(classPartition, p.Number)
	}
	r, err := d.s.call(ctx, Method{Class: classPartition, Path: p.Ref, Name: "GetSupportedSize"})
	if err != nil {
		return 0, fmt.Errorf("read supported size of partition %d of disk %d: %w", p.Number, p.DiskNumber, err)
	}
	out := OutOf(classPartition, "GetSupportedSize", r)
	max := out.RequiredUint64("SizeMax")
	if err := out.Err(); err != nil {
		return 0, fmt.Errorf("read supported size of partition %d of disk %d: %w", p.Number, p.DiskNumber, err)
	}
	return max, nil
}

// minExtent is the smallest change of a partition's size Windows accepts:
// Resize-Partition fails with "Size Not Supported ... The size of the
// extent is less than the minimum of 1MB" (4097) below it (csi-proxy PR #364).
const minExtent = 1 << 20

// ResizePartition implements host.Disks: MSFT_Partition.Resize(Size), the
// size passed as a decimal string (CIM uint64 through IDispatch). A change
// smaller than 1 MiB fails with host.ErrOutOfRange without asking Windows;
// the size the partition already has succeeds without a call.
func (d *Disks) ResizePartition(ctx context.Context, p host.Partition, size uint64) error {
	switch {
	case size == 0:
		return fmt.Errorf("resize partition %d of disk %d to 0 bytes: %w", p.Number, p.DiskNumber, host.ErrInvalid)
	case size == p.Size:
		return nil
	case absDiff(size, p.Size) < minExtent:
		return fmt.Errorf("resize partition %d of disk %d from %d to %d bytes: the change is below Windows' 1 MiB minimum extent: %w",
			p.Number, p.DiskNumber, p.Size, size, host.ErrOutOfRange)
	case p.Ref == "":
		return errNoRef(classPartition, p.Number)
	}
	_, err := d.s.call(ctx, Method{Class: classPartition, Path: p.Ref, Name: "Resize",
		In: []Param{{Name: "Size", Value: strconv.FormatUint(size, 10)}}})
	if err != nil {
		return fmt.Errorf("resize partition %d of disk %d to %d bytes: %w", p.Number, p.DiskNumber, size, err)
	}
	return nil
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// checkDisk refuses changes to the boot or system disk (a second line of
// defence behind the backend's own check) and to a disk without a WMI path,
// which would otherwise turn an instance method into a static one.
func checkDisk(dk host.Disk, what string) error {
	if dk.IsCritical() {
		return fmt.Errorf("refusing to %s disk %d: it is the boot or system disk: %w", what, dk.Number, host.ErrConflict)
	}
	if dk.Ref == "" {
		return errNoRef(classDisk, dk.Number)
	}
	return nil
}

func errNoRef(class string, number uint32) error {
	return fmt.Errorf("%s %d has no WMI object path: %w", class, number, host.ErrInvalid)
}
