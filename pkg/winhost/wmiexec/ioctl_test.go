package wmiexec

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

func TestIOCTLCodes(t *testing.T) {
	// Values from winioctl.h (Windows SDK), the CTL_CODE of each control.
	tests := []struct {
		name string
		got  uint32
		want uint32
	}{
		{"IOCTL_STORAGE_QUERY_PROPERTY", ioctlStorageQueryProperty, 0x2D1400},
		{"IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS", ioctlVolumeGetVolumeDiskExtents, 0x560000},
		// ntddscsi.h: CTL_CODE(IOCTL_SCSI_BASE, 0x0406, METHOD_BUFFERED,
		// FILE_ANY_ACCESS), IOCTL_SCSI_BASE being FILE_DEVICE_CONTROLLER (4).
		{"IOCTL_SCSI_GET_ADDRESS", ioctlSCSIGetAddress, 4<<16 | fileAnyAccess<<14 | 0x0406<<2 | methodBuffered},
		{"IOCTL_STORAGE_GET_DEVICE_NUMBER", ctlCode(fileDeviceMassStorage, 0x0420, methodBuffered, fileAnyAccess), 0x2D1080},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
			}
		})
	}
}

// SCSI_ADDRESS (ntddscsi.h) is a ULONG and four UCHARs: the 8 bytes the
// executor reads.
func TestSCSIAddressLayout(t *testing.T) {
	var a struct {
		Length                            uint32
		PortNumber, PathID, TargetID, Lun uint8
	}
	if got := unsafe.Sizeof(a); got != scsiAddressSize {
		t.Errorf("sizeof(SCSI_ADDRESS) = %d, scsiAddressSize %d", got, scsiAddressSize)
	}
}

func TestStoragePropertyQueryLayout(t *testing.T) {
	// sizeof(STORAGE_PROPERTY_QUERY) is 12 with the native 4-byte
	// alignment: two 4-byte enums and one byte padded to 4.
	var q storagePropertyQuery
	if got := unsafe.Sizeof(q); got != 12 {
		t.Errorf("sizeof(storagePropertyQuery) = %d, want 12", got)
	}
	if got := unsafe.Offsetof(q.QueryType); got != 4 {
		t.Errorf("QueryType at offset %d, want 4", got)
	}
	if got := unsafe.Offsetof(q.AdditionalParameters); got != 8 {
		t.Errorf("AdditionalParameters at offset %d, want 8", got)
	}
	q = storagePropertyQuery{PropertyID: storageDeviceIDProperty, QueryType: propertyStandardQuery}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&q)), unsafe.Sizeof(q))
	want := []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if string(raw) != string(want) {
		t.Errorf("query bytes = %v, want %v", raw, want)
	}
}

func TestDescriptorSize(t *testing.T) {
	hdr := make([]byte, 8)
	binary.LittleEndian.PutUint32(hdr[0:], 1)    // Version
	binary.LittleEndian.PutUint32(hdr[4:], 5000) // Size
	tests := []struct {
		name string
		out  []byte
		want int
	}{
		{"header", hdr, 5000},
		{"short", hdr[:7], 0},
		{"empty", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := descriptorSize(tt.out); got != tt.want {
				t.Errorf("descriptorSize = %d, want %d", got, tt.want)
			}
		})
	}
	if deviceIDBufferSize >= 5000 || maxDescriptorSize < 5000 {
		t.Errorf("a 5000-byte descriptor must need a second, larger read within the limit")
	}
}

func TestDiskExtents(t *testing.T) {
	tests := []struct {
		n    uint32
		want int
	}{
		{0, 32}, // sizeof(VOLUME_DISK_EXTENTS): room for one extent
		{1, 32},
		{initialDiskExtents, 8 + 24*initialDiskExtents},
		{maxDiskExtents, 8 + 24*maxDiskExtents},
	}
	for _, tt := range tests {
		if got := diskExtentsBufferSize(tt.n); got != tt.want {
			t.Errorf("diskExtentsBufferSize(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
	out := make([]byte, 32)
	binary.LittleEndian.PutUint32(out, 3)
	if got := diskExtentsCount(out); got != 3 {
		t.Errorf("diskExtentsCount = %d, want 3", got)
	}
	if got := diskExtentsCount(out[:3]); got != 0 {
		t.Errorf("diskExtentsCount of a short buffer = %d, want 0", got)
	}
}

// TestCSIProxyQuerySize checks what ioctl.go says csi-proxy sends: its
// query struct (two 32-bit enums and a []byte) is 32 bytes on a 64-bit
// platform, not 40 as an earlier comment had it; ours is the native 12.
func TestCSIProxyQuerySize(t *testing.T) {
	type csiProxyQuery struct {
		PropertyID uint32
		QueryType  uint32
		Byte       []byte
	}
	want := 8 + 3*unsafe.Sizeof(uintptr(0)) // two enums, then pointer, len, cap
	if got := unsafe.Sizeof(csiProxyQuery{}); got != want {
		t.Errorf("sizeof(csi-proxy's query) = %d, want %d", got, want)
	}
	if unsafe.Sizeof(uintptr(0)) == 8 && want != 32 {
		t.Errorf("on 64-bit platforms csi-proxy's query is %d bytes, the comment says 32", want)
	}
}
