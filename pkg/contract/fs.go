package contract

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// File system names as Windows spells them (MSFT_Volume.FileSystem).
const (
	FSNTFS = "NTFS"
	FSReFS = "ReFS"
)

// maxLabelLen is the longest NTFS and ReFS volume label, in UTF-16 code
// units (Format-Volume -NewFileSystemLabel; NTFS labels are 32 characters).
const maxLabelLen = 32

// labelForbidden are the characters Windows refuses in NTFS and ReFS
// volume labels.
const labelForbidden = `*?/\|,;:+=[]<>"`

// fsSource is one place an fsType came from.
type fsSource struct {
	key  string // key as written, or keyFsType for the capability
	what string // for messages
	val  string
}

// parseFS resolves the file system of disk and iscsi volumes and checks
// the fsType of smb volumes, which is otherwise ignored.
func parseFS(p params, capFsType string, kind Kind) (FileSystem, *Error) {
	var srcs []fsSource
	if v := strings.TrimSpace(capFsType); v != "" {
		srcs = append(srcs, fsSource{keyFsType, "the volume capability fsType", v})
	}
	for _, k := range []string{keyFsType, keyCSIFsType} {
		if e, ok := p.get(k); ok {
			srcs = append(srcs, fsSource{e.key, e.key, e.val})
		}
	}

	if kind == KindSMB {
		// Provisioners and kubelet sometimes send a default fsType; the
		// ones that make sense for a share are accepted and ignored.
		for _, s := range srcs {
			switch strings.ToLower(s.val) {
			case "cifs", "smb", "ntfs":
			default:
				return FileSystem{}, errorf(s.key, "%s %q is not valid for an smb volume (cifs, smb, ntfs or empty; it is ignored)", s.what, s.val)
			}
		}
		return FileSystem{}, nil
	}

	fs := FileSystem{Type: FSNTFS}
	var chosen *fsSource
	for i := range srcs {
		s := &srcs[i]
		var t string
		switch strings.ToLower(s.val) {
		case "ntfs":
			t = FSNTFS
		case "refs":
			t = FSReFS
		default:
			return FileSystem{}, errorf(s.key, "%s %q is not ntfs or refs", s.what, s.val)
		}
		if chosen != nil && t != fs.Type {
			return FileSystem{}, errorf(s.key, "%s %q conflicts with %s %q", s.what, s.val, chosen.what, chosen.val)
		}
		fs.Type, chosen = t, s
	}
	fs.Explicit = chosen != nil

	if e, ok := p.get(keyFsLabel); ok {
		if err := checkLabel(e); err != nil {
			return FileSystem{}, err
		}
		fs.Label = e.val
	}
	if e, ok := p.get(keyAllocationUnitSize); ok {
		n, err := parseAllocationUnit(e, fs.Type)
		if err != nil {
			return FileSystem{}, err
		}
		fs.AllocationUnitSize = n
	}
	return fs, nil
}

func checkLabel(e entry) *Error {
	if !utf8.ValidString(e.val) {
		return errorf(e.key, "%q is not valid UTF-8", e.val)
	}
	for _, r := range e.val {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(labelForbidden, r) {
			return errorf(e.key, "%q contains %q; labels cannot contain control characters or any of %s", e.val, r, labelForbidden)
		}
	}
	if n := len(utf16.Encode([]rune(e.val))); n > maxLabelLen {
		return errorf(e.key, "%q is %d characters long, more than the %d NTFS and ReFS allow", e.val, n, maxLabelLen)
	}
	return nil
}

// parseAllocationUnit parses a cluster size: bytes, or a number with the
// suffix K, KiB, M or MiB (case-insensitive, binary multiples).
func parseAllocationUnit(e entry, fsType string) (uint32, *Error) {
	num, mult := strings.ToLower(e.val), uint64(1)
	for _, s := range []struct {
		suffix string
		mult   uint64
	}{{"kib", 1 << 10}, {"k", 1 << 10}, {"mib", 1 << 20}, {"m", 1 << 20}} {
		if strings.HasSuffix(num, s.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, s.suffix)), s.mult
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || !isDigits(num) {
		return 0, errorf(e.key, "%q is not a size in bytes (for example 4096, 64K, 64KiB or 1M)", e.val)
	}
	n *= mult
	if n == 0 || n&(n-1) != 0 {
		return 0, errorf(e.key, "%q is not a power of two", e.val)
	}
	switch fsType {
	case FSReFS:
		if n != 4096 && n != 65536 {
			return 0, errorf(e.key, "%q is not valid for ReFS (4096 or 65536 bytes)", e.val)
		}
	default:
		if n < 512 || n > 2<<20 {
			return 0, errorf(e.key, "%q is not valid for NTFS (512 bytes to 2 MiB)", e.val)
		}
	}
	return uint32(n), nil
}
