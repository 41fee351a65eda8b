package winhost

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS (0x560000, no input) on a volume
// handle (\\?\Volume{GUID} without the trailing backslash, opened with
// access 0) returns VOLUME_DISK_EXTENTS (winioctl.h,
// learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-volume_disk_extents),
// little endian, natural alignment:
//
//	offset 0  uint32      NumberOfDiskExtents
//	offset 4  4 bytes     padding (DISK_EXTENT holds LARGE_INTEGERs, 8-aligned)
//	offset 8  DISK_EXTENT Extents[NumberOfDiskExtents], 24 bytes each:
//	            +0  uint32 DiskNumber
//	            +4  4 bytes padding
//	            +8  int64  StartingOffset
//	            +16 int64  ExtentLength
//	sizeof(VOLUME_DISK_EXTENTS) = 32 (one extent)
//
// A volume spanning several disks makes the IOCTL fail with ERROR_MORE_DATA
// on a 32-byte buffer after filling NumberOfDiskExtents and the first
// extent; the executor should retry with 8 + 24*N bytes. The parser accepts
// a buffer holding fewer extents than announced and returns those present.

const (
	diskExtentsHeaderLen = 8
	diskExtentLen        = 24
)

// diskExtent is one DISK_EXTENT.
type diskExtent struct {
	DiskNumber     uint32
	StartingOffset int64
	ExtentLength   int64
}

var errBadExtents = errors.New("malformed VOLUME_DISK_EXTENTS")

// parseVolumeDiskExtents returns the extents present in b, at least one.
func parseVolumeDiskExtents(b []byte) ([]diskExtent, error) {
	if len(b) < diskExtentsHeaderLen+diskExtentLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than one extent", errBadExtents, len(b))
	}
	n := binary.LittleEndian.Uint32(b[0:4])
	if n == 0 {
		return nil, fmt.Errorf("%w: the volume has no disk extent", errBadExtents)
	}
	fit := (len(b) - diskExtentsHeaderLen) / diskExtentLen
	count := fit
	if uint64(n) < uint64(fit) {
		count = int(n)
	}
	out := make([]diskExtent, count)
	for i := range out {
		e := b[diskExtentsHeaderLen+i*diskExtentLen:]
		out[i] = diskExtent{
			DiskNumber:     binary.LittleEndian.Uint32(e[0:4]),
			StartingOffset: int64(binary.LittleEndian.Uint64(e[8:16])),
			ExtentLength:   int64(binary.LittleEndian.Uint64(e[16:24])),
		}
	}
	return out, nil
}
