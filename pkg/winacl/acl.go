package winacl

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// ACE types (ACE_HEADER.AceType) the plugin interprets; every other type is
// kept as read and never interpreted.
const (
	AccessAllowedType uint8 = 0 // ACCESS_ALLOWED_ACE_TYPE
	AccessDeniedType  uint8 = 1 // ACCESS_DENIED_ACE_TYPE
)

// ACE flags (ACE_HEADER.AceFlags).
const (
	ObjectInherit      uint8 = 0x01 // OBJECT_INHERIT_ACE: files below inherit it
	ContainerInherit   uint8 = 0x02 // CONTAINER_INHERIT_ACE: directories below inherit it
	NoPropagateInherit uint8 = 0x04 // NO_PROPAGATE_INHERIT_ACE
	InheritOnly        uint8 = 0x08 // INHERIT_ONLY_ACE: does not apply to the object itself
	Inherited          uint8 = 0x10 // INHERITED_ACE: a copy of a parent's inheritable entry
)

// Access masks of files and directories. The three rights of
// volumeRootAccess are the masks icacls writes for RX, M and F, built from
// the File Access Rights Constants
// (https://learn.microsoft.com/en-us/windows/win32/fileio/file-access-rights-constants)
// and the .NET FileSystemRights values ReadAndExecute, Modify and
// FullControl, each with SYNCHRONIZE as Windows' own tools add it.
const (
	// ReadExecute is FILE_GENERIC_READ | FILE_GENERIC_EXECUTE: list,
	// read, traverse and execute.
	ReadExecute uint32 = 0x001200a9
	// Modify is ReadExecute | FILE_GENERIC_WRITE | DELETE: also create
	// files and directories, write, and delete what one may delete; not
	// change permissions or take ownership.
	Modify uint32 = 0x001301bf
	// FullControl is FILE_ALL_ACCESS.
	FullControl uint32 = 0x001f01ff
)

// ACL revisions (ACL.AclRevision).
const (
	ACLRevision   uint8 = 2 // ACL_REVISION
	ACLRevisionDS uint8 = 4 // ACL_REVISION_DS
)

// aclHeaderSize is sizeof(ACL); aceHeaderSize sizeof(ACE_HEADER); maxACLSize
// the largest AclSize a 16-bit field holds that is a multiple of 4.
const (
	aclHeaderSize = 8
	aceHeaderSize = 4
	maxACLSize    = 0xfffc
)

// ACE is one access control entry. Raw holds the entry's bytes as read
// (or as built by AllowACE); Type and Flags are read from them, and Mask
// and SID for the allow and deny types only.
type ACE struct {
	Type  uint8
	Flags uint8
	Mask  uint32
	SID   string // "" for a type the package does not interpret
	Raw   []byte
}

// Interpreted reports whether the entry is an allow or deny entry whose
// mask and SID were read.
func (a ACE) Interpreted() bool {
	return a.Type == AccessAllowedType || a.Type == AccessDeniedType
}

// AllowACE builds an ACCESS_ALLOWED_ACE for sid (string form) with the mask
// and flags.
func AllowACE(sid string, mask uint32, flags uint8) (ACE, error) {
	s, err := ParseSID(sid)
	if err != nil {
		return ACE{}, err
	}
	size := aceHeaderSize + 4 + len(s)
	raw := make([]byte, size)
	raw[0], raw[1] = AccessAllowedType, flags
	binary.LittleEndian.PutUint16(raw[2:], uint16(size))
	binary.LittleEndian.PutUint32(raw[4:], mask)
	copy(raw[8:], s)
	canon, _, _ := FormatSID(s) // s was just built: it parses
	return ACE{Type: AccessAllowedType, Flags: flags, Mask: mask, SID: canon, Raw: raw}, nil
}

// parseACE reads the entry at the start of b.
func parseACE(b []byte) (ACE, error) {
	if len(b) < aceHeaderSize {
		return ACE{}, fmt.Errorf("ACE header in %d bytes: %w", len(b), ErrMalformed)
	}
	size := int(binary.LittleEndian.Uint16(b[2:]))
	if size < aceHeaderSize || size > len(b) {
		return ACE{}, fmt.Errorf("ACE of %d bytes in %d: %w", size, len(b), ErrMalformed)
	}
	a := ACE{Type: b[0], Flags: b[1], Raw: append([]byte(nil), b[:size]...)}
	if !a.Interpreted() {
		return a, nil
	}
	if size < aceHeaderSize+4 {
		return ACE{}, fmt.Errorf("ACE of type %d in %d bytes: %w", a.Type, size, ErrMalformed)
	}
	a.Mask = binary.LittleEndian.Uint32(b[4:])
	// FormatSID sees the entry's bytes only: a SID past the entry fails.
	sid, _, err := FormatSID(b[aceHeaderSize+4 : size])
	if err != nil {
		return ACE{}, fmt.Errorf("ACE of type %d: %w", a.Type, err)
	}
	a.SID = sid
	return a, nil
}

// ACL is an access control list: its revision and its entries in order.
type ACL struct {
	Revision uint8
	ACEs     []ACE
}

// ParseACL reads the ACL at the start of b.
func ParseACL(b []byte) (ACL, error) {
	if len(b) < aclHeaderSize {
		return ACL{}, fmt.Errorf("ACL header in %d bytes: %w", len(b), ErrMalformed)
	}
	size := int(binary.LittleEndian.Uint16(b[2:]))
	count := int(binary.LittleEndian.Uint16(b[4:]))
	if size < aclHeaderSize || size > len(b) {
		return ACL{}, fmt.Errorf("ACL of %d bytes in %d: %w", size, len(b), ErrMalformed)
	}
	acl := ACL{Revision: b[0], ACEs: make([]ACE, 0, min(count, size/aceHeaderSize))}
	off := aclHeaderSize
	for i := 0; i < count; i++ {
		a, err := parseACE(b[off:size])
		if err != nil {
			return ACL{}, fmt.Errorf("entry %d of the ACL: %w", i, err)
		}
		acl.ACEs = append(acl.ACEs, a)
		off += len(a.Raw)
	}
	return acl, nil
}

// Bytes returns the binary ACL: the header, then every entry's Raw bytes
// in order, under Revision (ACLRevision when it is 0). It fails with
// ErrMalformed when an entry's Raw is not an ACE (shorter than its header,
// or not the size its header says), and with ErrTooLarge when the entries
// do not fit in an ACL (64 KiB; so the count, each entry being 4 bytes at
// least, fits its 16 bits).
func (a ACL) Bytes() ([]byte, error) {
	size := aclHeaderSize
	for i, e := range a.ACEs {
		if len(e.Raw) < aceHeaderSize || int(binary.LittleEndian.Uint16(e.Raw[2:])) != len(e.Raw) {
			return nil, fmt.Errorf("entry %d of the ACL is %d bytes, not an ACE: %w", i, len(e.Raw), ErrMalformed)
		}
		size += len(e.Raw)
	}
	if size > maxACLSize {
		return nil, fmt.Errorf("an ACL of %d entries and %d bytes is larger than Windows allows (%d bytes): %w", len(a.ACEs), size, maxACLSize, ErrTooLarge)
	}
	rev := a.Revision
	if rev == 0 {
		rev = ACLRevision
	}
	b := make([]byte, aclHeaderSize, size)
	b[0] = rev
	binary.LittleEndian.PutUint16(b[2:], uint16(size))
	binary.LittleEndian.PutUint16(b[4:], uint16(len(a.ACEs)))
	for _, e := range a.ACEs {
		b = append(b, e.Raw...)
	}
	return b, nil
}

// String renders the entry in the ACE-string form of SDDL
// (https://learn.microsoft.com/en-us/windows/win32/secauthz/ace-strings),
// with the mask in hex and the SID in full: (A;OICI;0x1301bf;;;S-1-5-93-2-2).
// An entry of a type the package does not interpret shows its type and
// size only.
func (a ACE) String() string {
	if !a.Interpreted() {
		return fmt.Sprintf("(type 0x%02x;%s;%d bytes)", a.Type, FlagString(a.Flags), len(a.Raw))
	}
	t := "A"
	if a.Type == AccessDeniedType {
		t = "D"
	}
	return "(" + t + ";" + FlagString(a.Flags) + ";0x" + strconv.FormatUint(uint64(a.Mask), 16) + ";;;" + a.SID + ")"
}

// FlagString renders ACE flags as SDDL does: OI, CI, NP, IO, ID, then any
// other bit in hex.
func FlagString(f uint8) string {
	var sb strings.Builder
	for _, x := range []struct {
		bit  uint8
		name string
	}{{ObjectInherit, "OI"}, {ContainerInherit, "CI"}, {NoPropagateInherit, "NP"}, {InheritOnly, "IO"}, {Inherited, "ID"}} {
		if f&x.bit != 0 {
			sb.WriteString(x.name)
			f &^= x.bit
		}
	}
	if f != 0 {
		fmt.Fprintf(&sb, "0x%02x", f)
	}
	return sb.String()
}
