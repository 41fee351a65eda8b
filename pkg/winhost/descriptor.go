package winhost

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// The page 83 identifier of a disk comes from IOCTL_STORAGE_QUERY_PROPERTY
// (0x2D1400) with PropertyId = StorageDeviceIdProperty (2) and QueryType =
// PropertyStandardQuery (0). The executor sends the native 12-byte
// STORAGE_PROPERTY_QUERY (ntddstor.h, learn.microsoft.com/windows/win32/api/
// winioctl/ns-winioctl-storage_property_query):
//
//	offset 0  uint32  PropertyId            = 2 (StorageDeviceIdProperty)
//	offset 4  uint32  QueryType             = 0 (PropertyStandardQuery)
//	offset 8  [1]byte AdditionalParameters  = 0
//	offset 9  3 bytes padding to the 4-byte alignment of the enums
//	sizeof = 12
//
// (csi-proxy declared AdditionalParameters as a Go slice, so on 64-bit
// Windows it sent 32 bytes of which 24 were a slice header; see
// pkg/winhost/wmiexec/ioctl.go.) It returns the
// bytes the IOCTL wrote (lpBytesReturned of them), which this file parses.
//
// STORAGE_DEVICE_ID_DESCRIPTOR (ntddstor.h, learn.microsoft.com/windows/
// win32/api/winioctl/ns-winioctl-storage_device_id_descriptor), little
// endian:
//
//	offset 0  uint32  Version
//	offset 4  uint32  Size
//	offset 8  uint32  NumberOfIdentifiers
//	offset 12 STORAGE_IDENTIFIER Identifiers[]
//
// STORAGE_IDENTIFIER (ntddstor.h, learn.microsoft.com/windows-hardware/
// drivers/ddi/ntddstor/ns-ntddstor-_storage_identifier; MS-CSVP 2.2.10
// gives the same field widths):
//
//	offset 0  uint32  CodeSet        (STORAGE_IDENTIFIER_CODE_SET: 1 binary, 2 ASCII, 3 UTF-8)
//	offset 4  uint32  Type           (STORAGE_IDENTIFIER_TYPE: vendor id, EUI-64, FC-PH name (NAA), ...)
//	offset 8  uint16  IdentifierSize (bytes of Identifier)
//	offset 10 uint16  NextOffset     (from the start of this identifier to the next)
//	offset 12 uint32  Association    (STORAGE_ASSOCIATION_TYPE: 0 device, 1 port, 2 target)
//	offset 16 byte    Identifier[IdentifierSize]
//
// The descriptor's own Size field is not used: csi-proxy ignores it, and
// identifiers must match what csi-proxy reports. Every offset and length is
// checked against the buffer instead.

const (
	deviceIDHeaderLen   = 12
	storageIDHeaderLen  = 16
	storageIDCodeBinary = 1
	storageIDCodeASCII  = 2
	storageIDAssocDev   = 0
)

// errBadDescriptor marks a STORAGE_DEVICE_ID_DESCRIPTOR whose offsets or
// lengths do not fit its buffer.
var errBadDescriptor = errors.New("malformed STORAGE_DEVICE_ID_DESCRIPTOR")

// parseDeviceIDDescriptor returns the page 83 identifier the way csi-proxy
// computes it (pkg/disk/hostapi GetDiskPage83ID): the first identifier,
// in descriptor order, whose Association is the device and whose CodeSet is
// binary (hex-encoded, lower case) or ASCII (the bytes verbatim); the
// identifier Type is not looked at. ok is false when no identifier
// qualifies or the qualifying one is empty (csi-proxy then reports "").
// The walk stops at the first match, so a malformed tail after it is not
// read; a malformed part before it is an error.
func parseDeviceIDDescriptor(b []byte) (id string, ok bool, err error) {
	if len(b) < deviceIDHeaderLen {
		return "", false, fmt.Errorf("%w: %d bytes, shorter than its %d-byte header", errBadDescriptor, len(b), deviceIDHeaderLen)
	}
	n := binary.LittleEndian.Uint32(b[8:12])
	off := deviceIDHeaderLen
	for i := uint32(0); i < n; i++ {
		if len(b)-off < storageIDHeaderLen {
			return "", false, fmt.Errorf("%w: identifier %d at offset %d overruns the %d-byte buffer", errBadDescriptor, i, off, len(b))
		}
		codeSet := binary.LittleEndian.Uint32(b[off:])
		size := int(binary.LittleEndian.Uint16(b[off+8:]))
		next := int(binary.LittleEndian.Uint16(b[off+10:]))
		assoc := binary.LittleEndian.Uint32(b[off+12:])
		data := off + storageIDHeaderLen
		if len(b)-data < size {
			return "", false, fmt.Errorf("%w: identifier %d of %d bytes at offset %d overruns the %d-byte buffer", errBadDescriptor, i, size, off, len(b))
		}
		if assoc == storageIDAssocDev && (codeSet == storageIDCodeBinary || codeSet == storageIDCodeASCII) {
			raw := b[data : data+size]
			if codeSet == storageIDCodeASCII {
				return string(raw), size > 0, nil
			}
			return hex.EncodeToString(raw), size > 0, nil
		}
		if i+1 == n {
			break
		}
		if next < storageIDHeaderLen {
			// Zero or a value pointing into this identifier's header
			// would never advance (csi-proxy would re-read the same one).
			return "", false, fmt.Errorf("%w: identifier %d has NextOffset %d", errBadDescriptor, i, next)
		}
		off += next
		if off > len(b) {
			return "", false, fmt.Errorf("%w: identifier %d points past the %d-byte buffer", errBadDescriptor, i, len(b))
		}
	}
	return "", false, nil
}
