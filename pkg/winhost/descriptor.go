package winhost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
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
// checked against the buffer instead. Windows has no NGUID type: an NVMe
// namespace's NGUID is an EUI64 (2) identifier 16 bytes long, SPC's NAA is
// FCPHName (3) (STORAGE_IDENTIFIER_TYPE, learn.microsoft.com/windows-hardware/
// drivers/ddi/ntddstor/ne-ntddstor-storage_identifier_type); host.Designator
// tells them apart by length.

const (
	deviceIDHeaderLen  = 12
	storageIDHeaderLen = 16
)

// errBadDescriptor marks a STORAGE_DEVICE_ID_DESCRIPTOR (or SCSI_ADDRESS)
// whose offsets or lengths do not fit its buffer.
var errBadDescriptor = errors.New("malformed storage descriptor")

// parseDeviceIDDescriptor returns every identifier of the descriptor, in
// descriptor order, with its type, code set and association (csi-proxy's
// single value, pkg/disk/hostapi GetDiskPage83ID, is host.Page83 of the
// result). A malformed part is an error; the identifiers read before it are
// returned with the error, so that a descriptor whose tail is damaged still
// yields what csi-proxy, which stops at its first usable identifier, would
// have read.
func parseDeviceIDDescriptor(b []byte) ([]host.Designator, error) {
	if len(b) < deviceIDHeaderLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its %d-byte header", errBadDescriptor, len(b), deviceIDHeaderLen)
	}
	n := binary.LittleEndian.Uint32(b[8:12])
	var ids []host.Designator
	off := deviceIDHeaderLen
	for i := uint32(0); i < n; i++ {
		if len(b)-off < storageIDHeaderLen {
			return ids, fmt.Errorf("%w: identifier %d at offset %d overruns the %d-byte buffer", errBadDescriptor, i, off, len(b))
		}
		codeSet := binary.LittleEndian.Uint32(b[off:])
		typ := binary.LittleEndian.Uint32(b[off+4:])
		size := int(binary.LittleEndian.Uint16(b[off+8:]))
		next := int(binary.LittleEndian.Uint16(b[off+10:]))
		assoc := binary.LittleEndian.Uint32(b[off+12:])
		data := off + storageIDHeaderLen
		if len(b)-data < size {
			return ids, fmt.Errorf("%w: identifier %d of %d bytes at offset %d overruns the %d-byte buffer", errBadDescriptor, i, size, off, len(b))
		}
		if codeSet > 0xff || typ > 0xff || assoc > 0xff {
			return ids, fmt.Errorf("%w: identifier %d has code set %d, type %d, association %d", errBadDescriptor, i, codeSet, typ, assoc)
		}
		ids = append(ids, host.Designator{
			Type: host.DesignatorType(typ), CodeSet: host.CodeSet(codeSet), Association: host.Association(assoc),
			Value: bytes.Clone(b[data : data+size]),
		})
		if i+1 == n {
			break
		}
		if next < storageIDHeaderLen {
			// Zero or a value pointing into this identifier's header
			// would never advance (csi-proxy would re-read the same one).
			return ids, fmt.Errorf("%w: identifier %d has NextOffset %d", errBadDescriptor, i, next)
		}
		off += next
		if off > len(b) {
			return ids, fmt.Errorf("%w: identifier %d points past the %d-byte buffer", errBadDescriptor, i, len(b))
		}
	}
	return ids, nil
}

// The storport address of a disk comes from IOCTL_SCSI_GET_ADDRESS
// (0x41018: CTL_CODE(IOCTL_SCSI_BASE 4, 0x0406, METHOD_BUFFERED,
// FILE_ANY_ACCESS)), no input, on the disk's device path opened with access
// 0. It returns SCSI_ADDRESS (ntddscsi.h, learn.microsoft.com/windows-
// hardware/drivers/ddi/ntddscsi/ns-ntddscsi-_scsi_address):
//
//	offset 0  uint32 Length      (sizeof(SCSI_ADDRESS) = 8)
//	offset 4  byte   PortNumber
//	offset 5  byte   PathId
//	offset 6  byte   TargetId
//	offset 7  byte   Lun
const scsiAddressLen = 8

// parseSCSIAddress reads a SCSI_ADDRESS.
func parseSCSIAddress(b []byte) (host.SCSIAddress, error) {
	if len(b) < scsiAddressLen {
		return host.SCSIAddress{}, fmt.Errorf("%w: SCSI_ADDRESS of %d bytes, want %d", errBadDescriptor, len(b), scsiAddressLen)
	}
	if l := binary.LittleEndian.Uint32(b); l != scsiAddressLen {
		return host.SCSIAddress{}, fmt.Errorf("%w: SCSI_ADDRESS.Length %d, want %d", errBadDescriptor, l, scsiAddressLen)
	}
	return host.SCSIAddress{Port: b[4], Path: b[5], Target: b[6], LUN: b[7]}, nil
}
