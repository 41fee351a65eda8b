package winacl

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Security descriptor control bits (SECURITY_DESCRIPTOR_CONTROL,
// https://learn.microsoft.com/en-us/windows/win32/secauthz/security-descriptor-control).
const (
	ControlDACLPresent       uint16 = 0x0004 // SE_DACL_PRESENT
	ControlDACLDefaulted     uint16 = 0x0008 // SE_DACL_DEFAULTED
	ControlDACLAutoInheritRq uint16 = 0x0100 // SE_DACL_AUTO_INHERIT_REQ
	ControlDACLAutoInherited uint16 = 0x0400 // SE_DACL_AUTO_INHERITED
	ControlDACLProtected     uint16 = 0x1000 // SE_DACL_PROTECTED
	ControlSelfRelative      uint16 = 0x8000 // SE_SELF_RELATIVE
)

// Which parts of a descriptor a call reads or writes (SECURITY_INFORMATION,
// https://learn.microsoft.com/en-us/windows/win32/secauthz/security-information).
const (
	OwnerSecurityInformation         uint32 = 0x00000001
	GroupSecurityInformation         uint32 = 0x00000002
	DACLSecurityInformation          uint32 = 0x00000004
	ProtectedDACLSecurityInformation uint32 = 0x80000000
)

// sdHeaderSize is sizeof(SECURITY_DESCRIPTOR_RELATIVE).
const sdHeaderSize = 20

// Descriptor is a self-relative security descriptor with the parts the
// plugin reads and writes: owner, group and DACL. A system ACL, if the
// bytes held one, is not kept.
type Descriptor struct {
	Control uint16
	Owner   string // "" when the descriptor holds none
	Group   string
	// DACL is nil when the descriptor has no DACL or a NULL DACL (both
	// mean that everyone has full access; NullDACL tells them apart from
	// an empty DACL, which grants nothing).
	DACL *ACL
}

// NullDACL reports whether the descriptor grants everyone full access: its
// DACL is absent (SE_DACL_PRESENT clear) or NULL.
func (d Descriptor) NullDACL() bool { return d.DACL == nil }

// Protected reports whether the DACL is protected from inheritance.
func (d Descriptor) Protected() bool { return d.Control&ControlDACLProtected != 0 }

// ParseDescriptor reads a self-relative security descriptor, as
// GetSecurityInfo and GetNamedSecurityInfo return it (x/sys/windows copies
// their descriptor self-relative).
func ParseDescriptor(b []byte) (Descriptor, error) {
	if len(b) < sdHeaderSize {
		return Descriptor{}, fmt.Errorf("security descriptor of %d bytes: %w", len(b), ErrMalformed)
	}
	if b[0] != 1 {
		return Descriptor{}, fmt.Errorf("security descriptor revision %d: %w", b[0], ErrMalformed)
	}
	d := Descriptor{Control: binary.LittleEndian.Uint16(b[2:])}
	if d.Control&ControlSelfRelative == 0 {
		return Descriptor{}, fmt.Errorf("security descriptor is not self-relative: %w", ErrMalformed)
	}
	at := func(field int) (int, error) {
		off := int(binary.LittleEndian.Uint32(b[field:]))
		if off != 0 && (off < sdHeaderSize || off >= len(b)) {
			return 0, fmt.Errorf("security descriptor offset %d outside its %d bytes: %w", off, len(b), ErrMalformed)
		}
		return off, nil
	}
	var err error
	for _, f := range []struct {
		field int
		dst   *string
	}{{4, &d.Owner}, {8, &d.Group}} {
		off, ferr := at(f.field)
		if ferr != nil {
			return Descriptor{}, ferr
		}
		if off != 0 {
			if *f.dst, _, err = FormatSID(b[off:]); err != nil {
				return Descriptor{}, err
			}
		}
	}
	off, err := at(16)
	if err != nil {
		return Descriptor{}, err
	}
	if d.Control&ControlDACLPresent != 0 && off != 0 {
		acl, err := ParseACL(b[off:])
		if err != nil {
			return Descriptor{}, err
		}
		d.DACL = &acl
	}
	return d, nil
}

// Bytes returns the self-relative descriptor: the header, then the owner,
// the group and the DACL, each present only when set. The control word is
// Control with SE_SELF_RELATIVE set and SE_DACL_PRESENT set exactly when
// DACL is not nil.
func (d Descriptor) Bytes() ([]byte, error) {
	control := d.Control | ControlSelfRelative
	control &^= ControlDACLPresent
	if d.DACL != nil {
		control |= ControlDACLPresent
	}
	b := make([]byte, sdHeaderSize)
	b[0] = 1
	binary.LittleEndian.PutUint16(b[2:], control)
	for _, f := range []struct {
		field int
		sid   string
	}{{4, d.Owner}, {8, d.Group}} {
		if f.sid == "" {
			continue
		}
		s, err := ParseSID(f.sid)
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(b[f.field:], uint32(len(b)))
		b = append(b, s...)
	}
	if d.DACL != nil {
		acl, err := d.DACL.Bytes()
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(b[16:], uint32(len(b)))
		b = append(b, acl...)
	}
	return b, nil
}

// String renders the descriptor in SDDL form with full SIDs and hex masks:
// O:S-1-5-32-544D:P(A;OICI;0x1f01ff;;;S-1-5-18). A NULL DACL is D:NO_ACCESS_CONTROL.
func (d Descriptor) String() string {
	var sb strings.Builder
	if d.Owner != "" {
		sb.WriteString("O:" + d.Owner)
	}
	if d.Group != "" {
		sb.WriteString("G:" + d.Group)
	}
	sb.WriteString("D:")
	if d.Protected() {
		sb.WriteString("P")
	}
	if d.Control&ControlDACLAutoInherited != 0 {
		sb.WriteString("AI")
	}
	if d.DACL == nil {
		sb.WriteString("NO_ACCESS_CONTROL")
		return sb.String()
	}
	for _, a := range d.DACL.ACEs {
		sb.WriteString(a.String())
	}
	return sb.String()
}
