package wmiexec

import "encoding/binary"

// I/O control codes and structures of the IOCTLs the executor sends. They
// are declared here, outside the Windows-only files, so that their values
// and layouts are checked by tests on every OS. golang.org/x/sys/windows
// does not define the storage IOCTLs.

// ctlCode is the CTL_CODE macro of winioctl.h:
// (DeviceType << 16) | (Access << 14) | (Function << 2) | Method.
func ctlCode(deviceType, function, method, access uint32) uint32 {
	return deviceType<<16 | access<<14 | function<<2 | method
}

const (
	fileDeviceMassStorage = 0x2d // IOCTL_STORAGE_BASE (winioctl.h)
	ioctlVolumeBase       = 0x56 // 'V', IOCTL_VOLUME_BASE (winioctl.h)
	methodBuffered        = 0
	fileAnyAccess         = 0
)

var (
	// IOCTL_STORAGE_QUERY_PROPERTY = CTL_CODE(IOCTL_STORAGE_BASE, 0x0500,
	// METHOD_BUFFERED, FILE_ANY_ACCESS) = 0x2D1400. FILE_ANY_ACCESS is why
	// the device can be opened with access 0.
	ioctlStorageQueryProperty = ctlCode(fileDeviceMassStorage, 0x0500, methodBuffered, fileAnyAccess)

	// IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS = CTL_CODE(IOCTL_VOLUME_BASE, 0,
	// METHOD_BUFFERED, FILE_ANY_ACCESS) = 0x560000.
	ioctlVolumeGetVolumeDiskExtents = ctlCode(ioctlVolumeBase, 0, methodBuffered, fileAnyAccess)
)

// IOCTL_SCSI_GET_ADDRESS = CTL_CODE(IOCTL_SCSI_BASE (FILE_DEVICE_CONTROLLER,
// 4), 0x0406, METHOD_BUFFERED, FILE_ANY_ACCESS) (ntddscsi.h), the value
// TestIOCTLCodes computes.
const ioctlSCSIGetAddress = 0x41018

// STORAGE_PROPERTY_ID and STORAGE_QUERY_TYPE values (winioctl.h).
const (
	storageDeviceIDProperty = 2 // StorageDeviceIdProperty
	propertyStandardQuery   = 0 // PropertyStandardQuery
)

// storagePropertyQuery is STORAGE_PROPERTY_QUERY (winioctl.h):
//
//	typedef struct _STORAGE_PROPERTY_QUERY {
//	    STORAGE_PROPERTY_ID PropertyId;          // enum: 4 bytes
//	    STORAGE_QUERY_TYPE  QueryType;           // enum: 4 bytes
//	    BYTE                AdditionalParameters[1];
//	} STORAGE_PROPERTY_QUERY;                    // sizeof == 12 (4-byte alignment)
//
// The explicit padding makes the Go struct the same 12 bytes. csi-proxy
// declares AdditionalParameters as a Go slice (kubernetes-csi/csi-proxy,
// pkg/os/disk/types.go: Byte []AdditionalParameters), which on 64-bit
// Windows sends a 32-byte buffer: the two enums and a 24-byte slice header
// (TestCSIProxyQuerySize). The driver reads only the first 8 bytes, which is
// why that worked, but the size passed was wrong.
type storagePropertyQuery struct {
	PropertyID           uint32
	QueryType            uint32
	AdditionalParameters [1]byte
	_                    [3]byte
}

// Output buffer sizes.
const (
	// deviceIDBufferSize is the first buffer for the
	// STORAGE_DEVICE_ID_DESCRIPTOR (csi-proxy uses 4 KiB too); a larger
	// descriptor is read again with the size its header gives, up to
	// maxDescriptorSize.
	deviceIDBufferSize = 4 << 10
	maxDescriptorSize  = 64 << 10

	// SCSI_ADDRESS is { ULONG Length; UCHAR PortNumber, PathId, TargetId,
	// Lun; }: 8 bytes (ntddscsi.h).
	scsiAddressSize = 8

	// VOLUME_DISK_EXTENTS is { DWORD NumberOfDiskExtents; DISK_EXTENT
	// Extents[1]; } with DISK_EXTENT { DWORD DiskNumber; LARGE_INTEGER
	// StartingOffset; LARGE_INTEGER ExtentLength; }: the 8-byte alignment
	// of LARGE_INTEGER puts Extents at offset 8 and makes each extent 24
	// bytes.
	diskExtentsHeader = 8
	diskExtentSize    = 24
	// A simple volume has one extent; a spanned or striped one more.
	// ERROR_MORE_DATA makes the executor read again with the count the
	// driver reported.
	initialDiskExtents = 4
	maxDiskExtents     = 1024
)

// descriptorSize returns the Size field of the STORAGE_DESCRIPTOR_HEADER
// ({ DWORD Version; DWORD Size; }) at the start of a storage descriptor, or
// 0 when fewer than 8 bytes were returned.
func descriptorSize(out []byte) int {
	if len(out) < 8 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(out[4:8]))
}

// diskExtentsBufferSize is the size of a VOLUME_DISK_EXTENTS with n extents.
func diskExtentsBufferSize(n uint32) int {
	if n == 0 {
		n = 1
	}
	return diskExtentsHeader + int(n)*diskExtentSize
}

// diskExtentsCount returns NumberOfDiskExtents of a VOLUME_DISK_EXTENTS, the
// count the driver reports with ERROR_MORE_DATA.
func diskExtentsCount(out []byte) uint32 {
	if len(out) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(out[:4])
}
