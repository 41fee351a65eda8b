package winacl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxSubAuthorities is SID_MAX_SUB_AUTHORITIES (winnt.h).
const maxSubAuthorities = 15

// Well-known SIDs the plugin names (Well-known SIDs,
// https://learn.microsoft.com/en-us/windows/win32/secauthz/well-known-sids).
const (
	SIDLocalSystem        = "S-1-5-18"     // NT AUTHORITY\SYSTEM
	SIDAdministrators     = "S-1-5-32-544" // BUILTIN\Administrators
	SIDUsers              = "S-1-5-32-545" // BUILTIN\Users
	SIDAuthenticatedUsers = "S-1-5-11"     // NT AUTHORITY\Authenticated Users
	SIDEveryone           = "S-1-1-0"      // Everyone (World)
	SIDCreatorOwner       = "S-1-3-0"      // CREATOR OWNER
)

// ErrMalformed is wrapped by every parse error of this package.
var ErrMalformed = errors.New("malformed")

// ErrTooLarge is wrapped by the error of a build whose entries do not fit
// in an ACL.
var ErrTooLarge = errors.New("too large")

// ParseSID parses a SID in its string form, S-1-<authority>-<sub>... (the
// form ConvertSidToStringSid writes: the authority in decimal, or as 0x and
// twelve hex digits when it does not fit in 32 bits; up to fifteen decimal
// 32-bit subauthorities), and returns its binary form. The S may be lower
// case. SDDL aliases ("BA", "SY") are not SIDs here.
//
// It accepts exactly the SIDs FormatSID writes, so that a descriptor read
// from Windows can be written back: that includes a SID without
// subauthorities ("S-1-5", the NT authority itself), which the binary form
// allows ([MS-DTYP] 2.4.2.2 bounds SubAuthorityCount at 15 only) although
// the string syntax of [MS-DTYP] 2.4.2.1 asks for one. Callers that want an
// account (pkg/contract) refuse it themselves.
func ParseSID(s string) ([]byte, error) {
	bad := func(why string) error { return fmt.Errorf("SID %q: %s: %w", s, why, ErrMalformed) }
	parts := strings.Split(s, "-")
	if len(parts) < 3 || !strings.EqualFold(parts[0], "S") {
		return nil, bad("want S-1-<authority>-<subauthority>...")
	}
	if parts[1] != "1" {
		return nil, bad("the revision is not 1")
	}
	// strconv.ParseUint takes digits only: no sign, space or underscore.
	num := func(p string, base, bits int, what string) (uint64, error) {
		n, err := strconv.ParseUint(p, base, bits)
		if errors.Is(err, strconv.ErrRange) {
			return 0, bad(what + " is out of range")
		}
		if err != nil {
			return 0, bad(what + " is not a number")
		}
		return n, nil
	}
	var auth uint64
	var err error
	if h, ok := strings.CutPrefix(strings.ToLower(parts[2]), "0x"); ok {
		if len(h) != 12 {
			return nil, bad("a hexadecimal authority has twelve digits")
		}
		auth, err = num(h, 16, 48, "the authority")
	} else {
		auth, err = num(parts[2], 10, 32, "the authority")
	}
	if err != nil {
		return nil, err
	}
	subs := parts[3:]
	if len(subs) > maxSubAuthorities {
		return nil, bad(fmt.Sprintf("it has %d subauthorities, want at most %d", len(subs), maxSubAuthorities))
	}
	b := make([]byte, 8+4*len(subs))
	b[0], b[1] = 1, byte(len(subs))
	for i := 0; i < 6; i++ {
		b[2+i] = byte(auth >> (8 * (5 - i))) // big-endian
	}
	for i, p := range subs {
		n, err := num(p, 10, 32, "subauthority "+strconv.Quote(p))
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(b[8+4*i:], uint32(n))
	}
	return b, nil
}

// CanonicalSID returns the string form Windows writes for the SID s
// (ParseSID, then FormatSID): "s-1-5-032-544" becomes "S-1-5-32-544".
func CanonicalSID(s string) (string, error) {
	b, err := ParseSID(s)
	if err != nil {
		return "", err
	}
	out, _, err := FormatSID(b)
	return out, err
}

// FormatSID reads the binary SID at the start of b and returns its string
// form and its length in bytes.
func FormatSID(b []byte) (string, int, error) {
	if len(b) < 8 {
		return "", 0, fmt.Errorf("SID of %d bytes: %w", len(b), ErrMalformed)
	}
	if b[0] != 1 {
		return "", 0, fmt.Errorf("SID revision %d: %w", b[0], ErrMalformed)
	}
	n := int(b[1])
	size := 8 + 4*n
	if n > maxSubAuthorities || len(b) < size {
		return "", 0, fmt.Errorf("SID with %d subauthorities in %d bytes: %w", n, len(b), ErrMalformed)
	}
	var auth uint64
	for i := 0; i < 6; i++ {
		auth = auth<<8 | uint64(b[2+i])
	}
	var sb strings.Builder
	sb.WriteString("S-1-")
	if auth >= 1<<32 {
		fmt.Fprintf(&sb, "0x%012X", auth)
	} else {
		sb.WriteString(strconv.FormatUint(auth, 10))
	}
	for i := 0; i < n; i++ {
		sb.WriteByte('-')
		sb.WriteString(strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[8+4*i:])), 10))
	}
	return sb.String(), size, nil
}
