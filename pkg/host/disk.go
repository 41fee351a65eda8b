package host

import (
	"context"
	"strings"
)

// PartitionStyle is MSFT_Disk.PartitionStyle.
type PartitionStyle uint16

// Partition styles, with MSFT_Disk's numeric values.
const (
	PartitionStyleRAW PartitionStyle = 0 // "Unknown" in MSFT_Disk: not initialised
	PartitionStyleMBR PartitionStyle = 1
	PartitionStyleGPT PartitionStyle = 2
)

func (s PartitionStyle) String() string {
	switch s {
	case PartitionStyleRAW:
		return "RAW"
	case PartitionStyleMBR:
		return "MBR"
	case PartitionStyleGPT:
		return "GPT"
	}
	return "PartitionStyle(" + itoa(uint64(s)) + ")"
}

// BusType is MSFT_Disk.BusType (the STORAGE_BUS_TYPE values).
type BusType uint16

// Bus types the plugin cares about; others pass through numerically.
const (
	BusTypeUnknown     BusType = 0
	BusTypeSCSI        BusType = 1
	BusTypeATAPI       BusType = 2
	BusTypeATA         BusType = 3
	BusTypeFibre       BusType = 6
	BusTypeUSB         BusType = 7
	BusTypeRAID        BusType = 8
	BusTypeISCSI       BusType = 9
	BusTypeSAS         BusType = 10
	BusTypeSATA        BusType = 11
	BusTypeFileBacked  BusType = 15 // VHD/VHDX mounted from a file
	BusTypeStorageSpcs BusType = 16
	BusTypeNVMe        BusType = 17
)

// String names the bus type as the MSFT_Disk page does
// (learn.microsoft.com/windows-hardware/drivers/storage/msft-disk).
func (b BusType) String() string {
	names := []string{"Unknown", "SCSI", "ATAPI", "ATA", "1394", "SSA", "Fibre Channel", "USB", "RAID", "iSCSI",
		"SAS", "SATA", "SD", "MMC", "Virtual", "File Backed Virtual", "Storage Spaces", "NVMe"}
	if int(b) < len(names) {
		return names[b]
	}
	return "BusType(" + itoa(uint64(b)) + ")"
}

// OfflineReason is MSFT_Disk.OfflineReason.
type OfflineReason uint16

// Offline reasons, with MSFT_Disk's numeric values.
const (
	OfflineReasonNone               OfflineReason = 0
	OfflineReasonPolicy             OfflineReason = 1
	OfflineReasonRedundantPath      OfflineReason = 2
	OfflineReasonSnapshot           OfflineReason = 3
	OfflineReasonCollision          OfflineReason = 4 // disk signature collides with an online disk
	OfflineReasonResourceExhaustion OfflineReason = 5
	OfflineReasonWriteFailures      OfflineReason = 6
	OfflineReasonDataIntegrityScan  OfflineReason = 7
)

// HealthStatus is the HealthStatus property shared by MSFT_Disk and MSFT_Volume.
type HealthStatus uint16

// Health states, with the storage classes' numeric values.
const (
	HealthHealthy   HealthStatus = 0
	HealthWarning   HealthStatus = 1
	HealthUnhealthy HealthStatus = 2
	HealthUnknown   HealthStatus = 5
)

func (h HealthStatus) String() string {
	switch h {
	case HealthHealthy:
		return "Healthy"
	case HealthWarning:
		return "Warning"
	case HealthUnhealthy:
		return "Unhealthy"
	case HealthUnknown:
		return "Unknown"
	}
	return "HealthStatus(" + itoa(uint64(h)) + ")"
}

// UniqueIDFormat is MSFT_Disk.UniqueIdFormat (inherited from
// MSFT_StorageObject): the type of the page 83 designator Windows set
// UniqueId from. Windows takes the first it finds in the order 8, 3, 2, 1, 0
// (the MSFT_Disk page, learn.microsoft.com/windows-hardware/drivers/storage/msft-disk).
type UniqueIDFormat uint16

// UniqueId formats, with their ValueMap values.
const (
	UniqueIDVendorSpecific UniqueIDFormat = 0
	UniqueIDVendorID       UniqueIDFormat = 1
	UniqueIDEUI64          UniqueIDFormat = 2
	UniqueIDFCPHName       UniqueIDFormat = 3 // an NAA identifier
	UniqueIDSCSINameString UniqueIDFormat = 8
)

// String names the format as the MSFT_Disk page does.
func (f UniqueIDFormat) String() string {
	switch f {
	case UniqueIDVendorSpecific:
		return "Vendor Specific"
	case UniqueIDVendorID:
		return "Vendor Id"
	case UniqueIDEUI64:
		return "EUI64"
	case UniqueIDFCPHName:
		return "FCPH Name"
	case UniqueIDSCSINameString:
		return "SCSI Name String"
	}
	return "UniqueIdFormat(" + itoa(uint64(f)) + ")"
}

// Disk is one MSFT_Disk as the host reports it.
type Disk struct {
	// Ref is the implementation's handle for the disk (the WMI object
	// path on Windows). Callers pass the Disk back unchanged.
	Ref string

	Number       uint32
	Path         string // device path, e.g. \\?\scsi#disk&ven_msft&...#{53f56307-...}
	SerialNumber string // as reported; may be blank, padded with spaces or end in '.'
	// UniqueID is MSFT_Disk.UniqueId: one page 83 designator as Windows
	// renders it (UniqueIDFormat says which), or a PnP-derived string when
	// the device reports none. It is not unique: every virtio disk of old
	// virtio-win drivers reported the same one (virtio-win/kvm-guest-drivers-windows#353).
	UniqueID       string
	UniqueIDFormat UniqueIDFormat
	Location       string // e.g. "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"
	FriendlyName   string
	// Manufacturer is MSFT_Disk.Manufacturer, the vendor identifier ("Msft"
	// for a Hyper-V or Azure virtual disk, "VMware" for a vSphere one).
	Manufacturer string
	// Model is MSFT_Disk.Model, the product identifier; Windows sometimes
	// prefixes "NVMe " to it in FriendlyName. FriendlyName is commonly
	// Manufacturer and Model ("VMware Virtual disk": ansible/ansible PR
	// #51595's Get-Disk | Select *).
	Model string
	// AdapterSerialNumber is MSFT_Disk.AdapterSerialNumber: the serial of
	// the adapter (for NVMe, the controller) the disk is reached through,
	// shared by every namespace of one controller. Blank on Hyper-V SCSI.
	AdapterSerialNumber string
	// GUID is MSFT_Disk.Guid, "the GUID of the disk, if it's GPT
	// formatted" (the disk GUID of its GPT header; blank on a RAW or MBR
	// disk, and possibly while it is offline), as Windows renders it
	// ("{…}"); SameGUID compares two.
	GUID           string
	Size           uint64
	BusType        BusType
	PartitionStyle PartitionStyle
	IsBoot         bool
	IsSystem       bool
	IsReadOnly     bool
	IsOffline      bool
	OfflineReason  OfflineReason
	HealthStatus   HealthStatus
}

// SameGUID reports whether two disk GUIDs as MSFT_Disk renders them are
// the same GUID: braces and case aside.
func SameGUID(a, b string) bool {
	trim := func(s string) string { return strings.Trim(strings.TrimSpace(s), "{}") }
	return strings.EqualFold(trim(a), trim(b))
}

// IsCritical reports whether the disk holds the running system. Such a
// disk is never selected, initialised, partitioned, formatted or offlined.
func (d Disk) IsCritical() bool { return d.IsBoot || d.IsSystem }

// IsNVMe reports whether the disk is an NVMe namespace: its bus type is
// NVMe, or its device path is storport's for an NVMe device
// ("\\?\scsi#disk&ven_nvme&prod_…", the form stornvme gives every namespace;
// kubernetes-sigs/azuredisk-csi-driver PR #3632 reads it the same way).
func (d Disk) IsNVMe() bool {
	return d.BusType == BusTypeNVMe || strings.Contains(strings.ToLower(d.Path), `#disk&ven_nvme&`)
}

// SCSILocation parses the disk's Location as a SCSI location. An NVMe
// disk's Location ("Integrated : Bus 12606208 : Device 0 : Function 0 :
// Adapter 0", with a PCI bus number and no target or LUN; PR #3632 of
// kubernetes-sigs/azuredisk-csi-driver) is never read as one.
func (d Disk) SCSILocation() (Location, bool) {
	if d.IsNVMe() {
		return Location{}, false
	}
	return ParseLocation(d.Location)
}

// Partition is one MSFT_Partition.
type Partition struct {
	Ref         string
	DiskNumber  uint32
	Number      uint32
	Offset      uint64
	Size        uint64
	GptType     string // "{ebd0a0a2-...}" on GPT disks, empty on MBR
	MbrType     uint16 // 0 on GPT disks
	AccessPaths []string
	IsReadOnly  bool
	IsOffline   bool
}

// Well-known GPT partition types (lower case, braced, as MSFT_Partition reports them).
const (
	GptTypeBasicData    = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}"
	GptTypeMSR          = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}"
	GptTypeEFISystem    = "{c12a7328-f81f-11d2-ba4b-00a0c93ec93b}"
	GptTypeRecovery     = "{de94bba4-06d1-4d40-a16a-bfd50179d6ac}"
	MbrTypeExtended     = 5
	MbrTypeExtendedLBA  = 15
	MbrTypeIFS          = 7 // NTFS / ReFS / exFAT
	MbrTypeFAT32LBA     = 12
	MbrTypeGPTProtected = 0xee
)

// IsReserved reports whether the partition is one Windows manages by itself
// (MSR, EFI system, recovery, MBR extended container) and which never holds
// user data for the plugin.
func (p Partition) IsReserved() bool {
	switch strings.ToLower(p.GptType) {
	case GptTypeMSR, GptTypeEFISystem, GptTypeRecovery:
		return true
	}
	return p.MbrType == MbrTypeExtended || p.MbrType == MbrTypeExtendedLBA
}

// Disks is the disk side of the Windows storage stack: MSFT_Disk,
// MSFT_Partition, MSFT_StorageSetting and the storage IOCTLs.
type Disks interface {
	// List returns every disk the host currently sees, in disk-number
	// order. A disk whose properties cannot be read is left out rather
	// than failing the whole list.
	List(ctx context.Context) ([]Disk, error)

	// Get returns the disk with this number, or ErrNotFound.
	Get(ctx context.Context, number uint32) (Disk, error)

	// DeviceIDs returns the disk's device identifiers: the designators of
	// its STORAGE_DEVICE_ID_DESCRIPTOR (SCSI VPD page 0x83), in the order
	// the device reports them, of every type, code set and association.
	// An empty list means the device answered with none. ErrNotFound
	// means the device does not answer the query (some virtual disks and,
	// possibly, Windows Server 2025's native NVMe stack): the disk has no
	// such identifiers. It costs an IOCTL: callers ask only for the disks
	// they must tell apart. Page83 derives csi-proxy's single value.
	DeviceIDs(ctx context.Context, d Disk) ([]Designator, error)

	// SCSIAddress returns the disk's storport address (IOCTL_SCSI_GET_ADDRESS).
	// ErrNotFound means the disk does not answer it: it has no SCSI address
	// the plugin can read. It costs an IOCTL, like DeviceIDs.
	SCSIAddress(ctx context.Context, d Disk) (SCSIAddress, error)

	// Rescan asks the host to re-enumerate storage
	// (MSFT_StorageSetting.UpdateHostStorageCache).
	Rescan(ctx context.Context) error

	// SetReadOnly sets or clears the disk's read-only attribute.
	SetReadOnly(ctx context.Context, d Disk, readOnly bool) error

	// SetOnline brings the disk online or takes it offline. Bringing a
	// disk whose signature collides with an online disk online fails with
	// ErrConflict.
	SetOnline(ctx context.Context, d Disk, online bool) error

	// Initialize writes an empty partition table of the given style to a
	// RAW disk. A disk that is already initialised fails with
	// ErrAlreadyExists.
	Initialize(ctx context.Context, d Disk, style PartitionStyle) error

	// Partitions returns the disk's partitions in partition-number order.
	Partitions(ctx context.Context, d Disk) ([]Partition, error)

	// CreatePartition creates one partition using the largest free extent
	// of an online, writable, initialised disk, without a drive letter:
	// Basic Data on GPT, IFS on MBR.
	CreatePartition(ctx context.Context, d Disk) (Partition, error)

	// MaxPartitionSize returns the largest size the partition can grow to
	// (MSFT_Partition.GetSupportedSize SizeMax).
	MaxPartitionSize(ctx context.Context, p Partition) (uint64, error)

	// ResizePartition grows (or shrinks) the partition and the file
	// system on it to size bytes. Sizes the host cannot honour fail with
	// ErrOutOfRange.
	ResizePartition(ctx context.Context, p Partition, size uint64) error
}
