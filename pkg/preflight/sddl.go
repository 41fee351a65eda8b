package preflight

import (
	"fmt"
	"strconv"
	"strings"
)

// Reading a DACL in SDDL, as ConvertSecurityDescriptorToStringSecurityDescriptor
// writes it (Security Descriptor String Format and ACE Strings,
// learn.microsoft.com/windows/win32/secauthz/security-descriptor-string-format
// and .../secauthz/ace-strings): "D:" then the DACL's flags, then one
// "(type;flags;rights;object;inherit object;SID)" per ACE.

// rightCodes are the access-right abbreviations of the ACE Strings page.
var rightCodes = map[string]uint32{
	"GA": 0x10000000, "GR": 0x80000000, "GW": 0x40000000, "GX": 0x20000000,
	"RC": 0x00020000, "SD": 0x00010000, "WD": 0x00040000, "WO": 0x00080000,
	"RP": 0x10, "WP": 0x20, "CC": 0x1, "DC": 0x2, "LC": 0x4, "SW": 0x8, "LO": 0x80, "DT": 0x40, "CR": 0x100,
	"FA": 0x001F01FF, "FR": 0x00120089, "FW": 0x00120116, "FX": 0x001200A0,
	"KA": 0x000F003F, "KR": 0x00020019, "KX": 0x00020019, "KW": 0x00020006,
	"NR": 0, "NW": 0, "NX": 0,
}

// writeRights are the rights that let a holder change the directory's
// contents or its security: FILE_WRITE_DATA/ADD_FILE, FILE_APPEND_DATA/
// ADD_SUBDIRECTORY, FILE_WRITE_EA, FILE_DELETE_CHILD,
// FILE_WRITE_ATTRIBUTES, DELETE, WRITE_DAC, WRITE_OWNER, GENERIC_WRITE and
// GENERIC_ALL (File Security and Access Rights,
// learn.microsoft.com/windows/win32/fileio/file-security-and-access-rights).
const writeRights = 0x2 | 0x4 | 0x10 | 0x40 | 0x100 | 0x10000 | 0x40000 | 0x80000 | 0x40000000 | 0x10000000

// broadSIDs are the accounts every local user or every caller belongs to,
// by SDDL abbreviation and SID string (Well-known SIDs,
// learn.microsoft.com/windows/win32/secauthz/well-known-sids).
var broadSIDs = map[string]string{
	"WD": "Everyone", "S-1-1-0": "Everyone",
	"AU": "Authenticated Users", "S-1-5-11": "Authenticated Users",
	"BU": "Users", "S-1-5-32-545": "Users",
	"IU": "Interactive", "S-1-5-4": "Interactive",
	"AN": "Anonymous", "S-1-5-7": "Anonymous",
	"BG": "Guests", "S-1-5-32-546": "Guests",
}

// ace is one entry of a DACL.
type ace struct {
	allow  bool
	rights uint32
	sid    string
}

// parseDACL returns the ACEs of the DACL in an SDDL string. A descriptor
// without a DACL part has none.
func parseDACL(sddl string) ([]ace, error) {
	i := strings.Index(sddl, "D:")
	if i < 0 {
		return nil, nil
	}
	rest := sddl[i+2:]
	// The DACL's flags come first (P, AI, AR, NO_ACCESS_CONTROL); then the
	// ACEs, until the SACL ("S:") or the end.
	j := strings.IndexByte(rest, '(')
	if j < 0 {
		return nil, nil
	}
	rest = rest[j:]
	var aces []ace
	for strings.HasPrefix(rest, "(") {
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return nil, fmt.Errorf("unterminated ACE in %q", sddl)
		}
		fields := strings.Split(rest[1:end], ";")
		if len(fields) < 6 {
			return nil, fmt.Errorf("ACE %q has %d fields, want 6", rest[:end+1], len(fields))
		}
		rights, err := parseRights(fields[2])
		if err != nil {
			return nil, fmt.Errorf("ACE %q: %w", rest[:end+1], err)
		}
		aces = append(aces, ace{allow: fields[0] == "A" || fields[0] == "OA", rights: rights, sid: fields[5]})
		rest = rest[end+1:]
	}
	return aces, nil
}

func parseRights(s string) (uint32, error) {
	if v, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, err := strconv.ParseUint(v, 16, 32)
		if err != nil {
			return 0, fmt.Errorf("access mask %q: %w", s, err)
		}
		return uint32(n), nil
	}
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("access mask %q: %w", s, err)
		}
		return uint32(n), nil
	}
	if len(s)%2 != 0 {
		return 0, fmt.Errorf("access rights %q are not two-letter codes", s)
	}
	var m uint32
	for k := 0; k < len(s); k += 2 {
		v, ok := rightCodes[s[k:k+2]]
		if !ok {
			return 0, fmt.Errorf("unknown access right %q", s[k:k+2])
		}
		m |= v
	}
	return m, nil
}

// broadWriters returns the broad accounts an allow ACE of the DACL lets
// write, in the order the DACL names them, each once.
func broadWriters(sddl string) ([]string, error) {
	aces, err := parseDACL(sddl)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range aces {
		name, broad := broadSIDs[strings.ToUpper(a.sid)]
		if a.allow && broad && a.rights&writeRights != 0 && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}
