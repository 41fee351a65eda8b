package winhost_test

import (
	"fmt"
	"strconv"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// Replies below follow what the Storage Management provider returns
// through IDispatch, as converted by the executor (executor.go: integers
// as int64, CIM uint64 as decimal strings ("Numbers (WMI)"), NULL as
// nil, arrays as []any, embedded objects as Instance). Property names and
// types are those of the MSFT_Disk, MSFT_Partition and MSFT_Volume pages
// under learn.microsoft.com/windows-hardware/drivers/storage/.

const ns = winhost.NamespaceStorage

// The exact WQL each query must send (built by pkg/winhost/wql).
const (
	wqlDisks = "SELECT ObjectId, Number, Path, SerialNumber, UniqueId, UniqueIdFormat, Location, FriendlyName, Manufacturer, Model, " +
		"AdapterSerialNumber, Guid, Size, BusType, PartitionStyle, IsBoot, IsSystem, IsReadOnly, IsOffline, OfflineReason, " +
		"HealthStatus FROM MSFT_Disk"
	wqlPartitions = "SELECT ObjectId, DiskNumber, PartitionNumber, Offset, Size, GptType, MbrType, AccessPaths, " +
		"IsReadOnly, IsOffline FROM MSFT_Partition"
	wqlVolumes = "SELECT ObjectId, Path, FileSystem, FileSystemType, FileSystemLabel, Size, SizeRemaining, " +
		"AllocationUnitSize, HealthStatus FROM MSFT_Volume"
)

func wqlDisk(n uint32) string {
	return wqlDisks + " WHERE Number = " + strconv.FormatUint(uint64(n), 10)
}
func wqlPartsOf(n uint32) string {
	return wqlPartitions + " WHERE DiskNumber = " + strconv.FormatUint(uint64(n), 10)
}
func wqlVolume(guid string) string { return wqlVolumes + " WHERE Path = '" + wqlEscape(guid) + "'" }

// wqlEscape escapes a WQL string literal's content as the WQL documentation
// prescribes (backslash before \, ' and ").
func wqlEscape(s string) string {
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '\'' || s[i] == '"' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// Object paths in the shape the provider reports (__PATH of MSFT_* objects
// is the WMI path of the WSP_* provider object; only its opacity matters).
func diskRef(n uint32) string {
	return fmt.Sprintf(`\\NODE1\ROOT\Microsoft\Windows\Storage:MSFT_Disk.ObjectId="{1}\\\\NODE1\\root/Microsoft/Windows/Storage/Providers_v2\\WSP_Disk.ObjectId=\"{7d1a7a8e-2b7c-11ef-9c2a-806e6f6e6963}:DI:\\\\?\\scsi#disk&ven_msft&prod_virtual_disk#5&1ec51bf7&0&00000%d#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}\""`, n)
}

func partRef(disk, part uint32) string {
	return fmt.Sprintf(`\\NODE1\ROOT\Microsoft\Windows\Storage:MSFT_Partition.ObjectId="{1}\\\\NODE1\\root/Microsoft/Windows/Storage/Providers_v2\\WSP_Partition.ObjectId=\"{7d1a7a8e-2b7c-11ef-9c2a-806e6f6e6963}:PR:{00000000-0000-0000-0000-%012d}\\\\?\\scsi#disk&ven_msft#%d\""`, part, disk)
}

func volRef(guid string) string {
	return `\\NODE1\ROOT\Microsoft\Windows\Storage:MSFT_Volume.ObjectId="{1}\\\\NODE1\\root/Microsoft/Windows/Storage/Providers_v2\\WSP_Volume.ObjectId=\"{7d1a7a8e-2b7c-11ef-9c2a-806e6f6e6963}:VO:` + guid + `\""`
}

// devicePath is MSFT_Disk.Path: a device interface path of the disk class
// GUID {53f56307-...}, GUID_DEVINTERFACE_DISK.
func devicePath(n uint32) string {
	return fmt.Sprintf(`\\?\scsi#disk&ven_msft&prod_virtual_disk#5&1ec51bf7&0&00000%d#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`, n)
}

type diskSpec struct {
	Number        uint32
	Serial        string
	Location      any // string, or nil as for Hyper-V/VHD disks (MSFT_Disk docs)
	Size          uint64
	Style         host.PartitionStyle
	Boot, System  bool
	ReadOnly      bool
	Offline       bool
	OfflineReason host.OfflineReason
	GUID          any // MSFT_Disk.Guid: a string, or nil (NULL) as on RAW and MBR disks

	// Identity overrides; zero keeps a Hyper-V SCSI disk's as
	// kubernetes-sigs/azuredisk-csi-driver#2661 shows them (FriendlyName
	// "Msft Virtual Disk", BusType SAS, UniqueIdFormat "FCPH Name",
	// AdapterSerialNumber blank; Manufacturer "Msft" and Model "Virtual
	// Disk" assumed, the issue's listing cuts them off).
	Friendly, Manufacturer, Model, AdapterSerial, UniqueID, DevPath string
	Bus                                                             host.BusType
	UniqueIDFormat                                                  host.UniqueIDFormat
}

// identity fills the defaults of the identity fields.
func (s diskSpec) identity() diskSpec {
	if s.Friendly == "" {
		s.Friendly = "Msft Virtual Disk"
	}
	if s.Manufacturer == "" {
		s.Manufacturer = "Msft"
	}
	if s.Model == "" {
		s.Model = "Virtual Disk"
	}
	if s.UniqueID == "" {
		s.UniqueID = "60022480" + strconv.FormatUint(uint64(s.Number), 16)
		s.UniqueIDFormat = host.UniqueIDFCPHName
	}
	if s.DevPath == "" {
		s.DevPath = devicePath(s.Number)
	}
	if s.Bus == 0 {
		s.Bus = host.BusTypeSAS
	}
	return s
}

func diskInst(s diskSpec) winhost.Instance {
	s = s.identity()
	size := s.Size
	if size == 0 {
		size = 10 << 30
	}
	var reason any
	if s.Offline {
		reason = int64(s.OfflineReason)
	}
	return winhost.Instance{
		Path:  diskRef(s.Number),
		Class: "MSFT_Disk",
		Props: map[string]any{
			"ObjectId":            `{1}\\NODE1\root/Microsoft/Windows/Storage/Providers_v2\WSP_Disk.ObjectId="..."`,
			"Number":              int64(s.Number),
			"Path":                s.DevPath,
			"SerialNumber":        s.Serial,
			"UniqueId":            s.UniqueID,
			"UniqueIdFormat":      int64(s.UniqueIDFormat),
			"Location":            s.Location,
			"FriendlyName":        s.Friendly,
			"Manufacturer":        s.Manufacturer,
			"Model":               s.Model,
			"AdapterSerialNumber": s.AdapterSerial,
			"Guid":                s.GUID,
			"Size":                strconv.FormatUint(size, 10),
			"BusType":             int64(s.Bus),
			"PartitionStyle":      int64(s.Style),
			"IsBoot":              s.Boot,
			"IsSystem":            s.System,
			"IsReadOnly":          s.ReadOnly,
			"IsOffline":           s.Offline,
			"OfflineReason":       reason,
			"HealthStatus":        int64(0),
		},
	}
}

// diskOf is the host.Disk a diskInst parses to.
func diskOf(s diskSpec) host.Disk {
	s = s.identity()
	size := s.Size
	if size == 0 {
		size = 10 << 30
	}
	loc, _ := s.Location.(string)
	guid, _ := s.GUID.(string)
	d := host.Disk{GUID: guid,
		Ref: diskRef(s.Number), Number: s.Number, Path: s.DevPath, SerialNumber: s.Serial,
		UniqueID: s.UniqueID, UniqueIDFormat: s.UniqueIDFormat, Location: loc,
		FriendlyName: s.Friendly, Manufacturer: s.Manufacturer, Model: s.Model, AdapterSerialNumber: s.AdapterSerial,
		Size: size, BusType: s.Bus, PartitionStyle: s.Style,
		IsBoot: s.Boot, IsSystem: s.System, IsReadOnly: s.ReadOnly, IsOffline: s.Offline,
	}
	if s.Offline {
		d.OfflineReason = s.OfflineReason
	}
	return d
}

type partSpec struct {
	Disk, Number uint32
	Offset, Size uint64
	GptType      any // string or nil (MBR)
	MbrType      any // int64 or nil (GPT)
	AccessPaths  []any
	Offline      bool
}

func partInst(s partSpec) winhost.Instance {
	var paths any // NULL when the partition has no access path
	if s.AccessPaths != nil {
		paths = s.AccessPaths
	}
	return winhost.Instance{
		Path:  partRef(s.Disk, s.Number),
		Class: "MSFT_Partition",
		Props: map[string]any{
			"ObjectId":        "{1}...",
			"DiskNumber":      int64(s.Disk),
			"PartitionNumber": int64(s.Number),
			"Offset":          strconv.FormatUint(s.Offset, 10),
			"Size":            strconv.FormatUint(s.Size, 10),
			"GptType":         s.GptType,
			"MbrType":         s.MbrType,
			"AccessPaths":     paths,
			"IsReadOnly":      false,
			"IsOffline":       s.Offline,
		},
	}
}

// A fresh GPT disk after Initialize holds the MSR (aws-ebs-csi-driver#1001:
// 15.98 MB at offset 17408); the data
// partition CreatePartition makes starts at 16 MiB.
const (
	msrOffset  = 17408
	msrSize    = 16759808
	dataOffset = 16 << 20
)

const (
	guidA = `\\?\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\`
	guidB = `\\?\Volume{9f3c1d2e-8a7b-4c5d-b6e7-f80912a3b4c5}\`
)

func volInst(guid, fs string, fsType int64, size uint64) winhost.Instance {
	var fsv any = fs
	if fs == "" {
		fsv = nil
	}
	return winhost.Instance{
		Path:  volRef(guid),
		Class: "MSFT_Volume",
		Props: map[string]any{
			"ObjectId":           "{1}...",
			"Path":               guid,
			"FileSystem":         fsv,
			"FileSystemType":     fsType,
			"FileSystemLabel":    "",
			"Size":               strconv.FormatUint(size, 10),
			"SizeRemaining":      strconv.FormatUint(size/2, 10),
			"AllocationUnitSize": allocationUnit(fs),
			"HealthStatus":       int64(0),
		},
	}
}

func w32(call string, code uint32) error { return &winhost.Win32Error{Call: call, Code: code} }

func ok() scripted.Reply { return scripted.Reply{} }

// rv is a reply with a return value and no output object (Out nil: what
// the executor reports when ExecMethod returns none).
func rv(code uint32) scripted.Reply {
	return scripted.Reply{Result: winhost.Result{ReturnValue: code}}
}

func disksOf(e *scripted.Executor) *winhost.Disks     { return winhost.NewDisks(e) }
func volumesOf(e *scripted.Executor) *winhost.Volumes { return winhost.NewVolumes(e) }
func filesOf(e *scripted.Executor) *winhost.Files     { return winhost.NewFiles(e) }

// createdPartition is the output of MSFT_Disk.CreatePartition as the
// executor reads it: every OUT parameter of the method (MOF:
// CreatedPartition, ExtendedStatus), the latter null on success.
func createdPartition(p winhost.Instance) map[string]any {
	return map[string]any{"CreatedPartition": p, "ExtendedStatus": nil}
}

// allocationUnit is MSFT_Volume.AllocationUnitSize (uint32, as int64): 4096
// for NTFS and ReFS defaults, 0 for a volume without a file system.
func allocationUnit(fs string) any {
	if fs == "" {
		return int64(0)
	}
	return int64(4096)
}
