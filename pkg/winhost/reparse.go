package winhost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// FSCTL_GET_REPARSE_POINT (on a handle opened with
// FILE_FLAG_OPEN_REPARSE_POINT|FILE_FLAG_BACKUP_SEMANTICS) returns a
// REPARSE_DATA_BUFFER (ntifs.h, learn.microsoft.com/windows-hardware/
// drivers/ddi/ntifs/ns-ntifs-_reparse_data_buffer), little endian:
//
//	offset 0  uint32 ReparseTag
//	offset 4  uint16 ReparseDataLength (bytes after this 8-byte header)
//	offset 6  uint16 Reserved
//	IO_REPARSE_TAG_SYMLINK (0xA000000C), SymbolicLinkReparseBuffer:
//	  offset 8  uint16 SubstituteNameOffset  (bytes, from PathBuffer)
//	  offset 10 uint16 SubstituteNameLength  (bytes, no terminating NUL)
//	  offset 12 uint16 PrintNameOffset
//	  offset 14 uint16 PrintNameLength
//	  offset 16 uint32 Flags                 (SYMLINK_FLAG_RELATIVE = 1)
//	  offset 20 WCHAR  PathBuffer[]
//	IO_REPARSE_TAG_MOUNT_POINT (0xA0000003), MountPointReparseBuffer
//	(volume mount points and junctions):
//	  offset 8  uint16 SubstituteNameOffset
//	  offset 10 uint16 SubstituteNameLength
//	  offset 12 uint16 PrintNameOffset
//	  offset 14 uint16 PrintNameLength
//	  offset 16 WCHAR  PathBuffer[]
//
// A volume mount point made by SetVolumeMountPoint carries the substitute
// name \??\Volume{GUID}\ (and an empty print name); a junction carries
// \??\C:\dir. Tags are compared for equality: csi-proxy's IsMountedFolder
// tested tag & IO_REPARSE_TAG_MOUNT_POINT != 0, which is true for every
// Microsoft name-surrogate tag, symlinks included (kubernetes-csi/csi-proxy@eeba470
// pkg/utils/utils.go, IsMountedFolder).

// Reparse tags (winnt.h).
const (
	ioReparseTagMountPoint = 0xA0000003
	ioReparseTagSymlink    = 0xA000000C
	symlinkFlagRelative    = 1
)

// reparsePoint is the part of a REPARSE_DATA_BUFFER the plugin reads.
type reparsePoint struct {
	Tag            uint32
	SubstituteName string // empty for tags other than symlink and mount point
	PrintName      string
	Relative       bool // a symlink whose substitute name is relative
}

var errBadReparse = errors.New("malformed REPARSE_DATA_BUFFER")

// parseReparsePoint parses a REPARSE_DATA_BUFFER, checking every length
// and offset against the buffer. Tags other than symlink and mount point
// are returned with their tag only.
func parseReparsePoint(b []byte) (reparsePoint, error) {
	if len(b) < 8 {
		return reparsePoint{}, fmt.Errorf("%w: %d bytes, shorter than its 8-byte header", errBadReparse, len(b))
	}
	rp := reparsePoint{Tag: binary.LittleEndian.Uint32(b[0:4])}
	dataLen := int(binary.LittleEndian.Uint16(b[4:6]))
	if len(b)-8 < dataLen {
		return reparsePoint{}, fmt.Errorf("%w: ReparseDataLength %d overruns the %d-byte buffer", errBadReparse, dataLen, len(b))
	}
	data := b[8 : 8+dataLen]
	var fixed int
	switch rp.Tag {
	case ioReparseTagSymlink:
		fixed = 12
	case ioReparseTagMountPoint:
		fixed = 8
	default:
		return rp, nil
	}
	if len(data) < fixed {
		return reparsePoint{}, fmt.Errorf("%w: tag 0x%08X with %d data bytes", errBadReparse, rp.Tag, len(data))
	}
	if rp.Tag == ioReparseTagSymlink {
		rp.Relative = binary.LittleEndian.Uint32(data[8:12])&symlinkFlagRelative != 0
	}
	paths := data[fixed:]
	var err error
	if rp.SubstituteName, err = utf16Name(paths, data[0:2], data[2:4]); err != nil {
		return reparsePoint{}, fmt.Errorf("substitute name: %w", err)
	}
	if rp.PrintName, err = utf16Name(paths, data[4:6], data[6:8]); err != nil {
		return reparsePoint{}, fmt.Errorf("print name: %w", err)
	}
	return rp, nil
}

// utf16Name decodes the UTF-16LE name at the offset and length (both in
// bytes, little-endian uint16 fields) inside paths.
func utf16Name(paths, offField, lenField []byte) (string, error) {
	off := int(binary.LittleEndian.Uint16(offField))
	n := int(binary.LittleEndian.Uint16(lenField))
	if n%2 != 0 {
		return "", fmt.Errorf("%w: odd name length %d", errBadReparse, n)
	}
	if off > len(paths) || len(paths)-off < n {
		return "", fmt.Errorf("%w: name at %d+%d overruns the %d-byte path buffer", errBadReparse, off, n, len(paths))
	}
	u := make([]uint16, n/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(paths[off+2*i:])
	}
	return string(utf16.Decode(u)), nil
}

// win32Target turns a link's substitute name (an NT path) into the form the
// rest of the plugin compares: \??\UNC\srv\share -> \\srv\share,
// \??\C:\x -> C:\x, \??\Volume{GUID}\ -> \\?\Volume{guid}\; the \\?\
// spellings of the same are treated alike. Other \??\ names (a path inside
// a volume GUID path, GLOBALROOT) keep an explicit \\?\ prefix so that they
// never read as relative; names without a prefix (relative symlinks) are
// returned unchanged.
func win32Target(s string) string {
	var rest string
	switch {
	case strings.HasPrefix(s, `\??\`), strings.HasPrefix(s, `\\?\`):
		rest = s[4:]
	default:
		return s
	}
	if len(rest) >= 4 && strings.EqualFold(rest[:4], `UNC\`) {
		return `\\` + rest[4:]
	}
	if g, ok := winpath.VolumeGUIDPath(`\\?\` + rest); ok {
		return g
	}
	if len(rest) >= 3 && rest[1] == ':' && rest[2] == '\\' {
		return rest
	}
	return `\\?\` + rest
}
