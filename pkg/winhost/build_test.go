package winhost

import (
	"encoding/binary"
	"unicode/utf16"
)

// Builders of the binary structures the executor returns, laid out as the
// structure comments in descriptor.go, extents.go and reparse.go describe
// (ntddstor.h, winioctl.h, ntifs.h). Tests and fuzz seeds use them.

// storageID is one STORAGE_IDENTIFIER to build. NextOffset zero means
// "the natural one": header plus identifier, rounded up to 4 bytes.
type storageID struct {
	CodeSet, Type, Assoc uint32
	ID                   []byte
	NextOffset           uint16
}

func naturalNext(idLen int) uint16 { return uint16((storageIDHeaderLen + idLen + 3) &^ 3) }

// buildDeviceIDDescriptor lays out a STORAGE_DEVICE_ID_DESCRIPTOR.
func buildDeviceIDDescriptor(ids ...storageID) []byte {
	b := make([]byte, deviceIDHeaderLen)
	binary.LittleEndian.PutUint32(b[0:], 1) // Version
	binary.LittleEndian.PutUint32(b[8:], uint32(len(ids)))
	for _, id := range ids {
		next := id.NextOffset
		if next == 0 {
			next = naturalNext(len(id.ID))
		}
		rec := make([]byte, max(int(next), storageIDHeaderLen+len(id.ID)))
		binary.LittleEndian.PutUint32(rec[0:], id.CodeSet)
		binary.LittleEndian.PutUint32(rec[4:], id.Type)
		binary.LittleEndian.PutUint16(rec[8:], uint16(len(id.ID)))
		binary.LittleEndian.PutUint16(rec[10:], next)
		binary.LittleEndian.PutUint32(rec[12:], id.Assoc)
		copy(rec[storageIDHeaderLen:], id.ID)
		b = append(b, rec...)
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b))) // Size
	return b
}

// buildVolumeDiskExtents lays out VOLUME_DISK_EXTENTS announcing n extents
// and holding one per disk number given.
func buildVolumeDiskExtents(n uint32, disks ...uint32) []byte {
	b := make([]byte, diskExtentsHeaderLen+diskExtentLen*len(disks))
	binary.LittleEndian.PutUint32(b[0:], n)
	for i, d := range disks {
		e := b[diskExtentsHeaderLen+i*diskExtentLen:]
		binary.LittleEndian.PutUint32(e[0:], d)
		binary.LittleEndian.PutUint64(e[8:], 1<<20)         // StartingOffset: after the MSR
		binary.LittleEndian.PutUint64(e[16:], 10<<30-1<<20) // ExtentLength
	}
	return b
}

func utf16le(s string) []byte {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return b
}

// buildReparse lays out a REPARSE_DATA_BUFFER for the symlink or mount
// point tag with the names in PathBuffer (substitute first, then print
// name, each NUL-terminated as Windows writes them), or a bare header
// with data for other tags.
func buildReparse(tag uint32, substitute, print string, flags uint32) []byte {
	sub, pr := utf16le(substitute), utf16le(print)
	var fixed []byte
	switch tag {
	case ioReparseTagSymlink:
		fixed = make([]byte, 12)
		binary.LittleEndian.PutUint32(fixed[8:], flags)
	case ioReparseTagMountPoint:
		fixed = make([]byte, 8)
	default:
		data := []byte{1, 2, 3, 4}
		b := make([]byte, 8, 8+len(data))
		binary.LittleEndian.PutUint32(b[0:], tag)
		binary.LittleEndian.PutUint16(b[4:], uint16(len(data)))
		return append(b, data...)
	}
	binary.LittleEndian.PutUint16(fixed[0:], 0)
	binary.LittleEndian.PutUint16(fixed[2:], uint16(len(sub)))
	binary.LittleEndian.PutUint16(fixed[4:], uint16(len(sub)+2))
	binary.LittleEndian.PutUint16(fixed[6:], uint16(len(pr)))
	paths := append(append(append(sub, 0, 0), pr...), 0, 0)
	data := append(fixed, paths...)
	b := make([]byte, 8, 8+len(data))
	binary.LittleEndian.PutUint32(b[0:], tag)
	binary.LittleEndian.PutUint16(b[4:], uint16(len(data)))
	return append(b, data...)
}
