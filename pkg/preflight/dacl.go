package preflight

import (
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// writeRights are the rights that let a holder change a directory's
// contents or its security: FILE_WRITE_DATA/ADD_FILE, FILE_APPEND_DATA/
// ADD_SUBDIRECTORY, FILE_WRITE_EA, FILE_DELETE_CHILD,
// FILE_WRITE_ATTRIBUTES, DELETE, WRITE_DAC, WRITE_OWNER, GENERIC_WRITE and
// GENERIC_ALL (File Security and Access Rights,
// learn.microsoft.com/windows/win32/fileio/file-security-and-access-rights).
const writeRights = 0x2 | 0x4 | 0x10 | 0x40 | 0x100 | 0x10000 | 0x40000 | 0x80000 | 0x40000000 | 0x10000000

// broadSIDs are the accounts every local user or every caller belongs to
// (Well-known SIDs, learn.microsoft.com/windows/win32/secauthz/well-known-sids).
var broadSIDs = map[string]string{
	"S-1-1-0":      "Everyone",
	"S-1-5-11":     "Authenticated Users",
	"S-1-5-32-545": "Users",
	"S-1-5-4":      "Interactive",
	"S-1-5-7":      "Anonymous",
	"S-1-5-32-546": "Guests",
}

// broadWriters returns the broad accounts an allow entry of the DACL lets
// write, in the order the DACL names them, each once. An entry that is
// inherit-only still counts: the journal's files below inherit it. A NULL
// DACL lets everyone do anything.
func broadWriters(d host.DACL) []string {
	if d.Null {
		return []string{"Everyone (a NULL DACL)"}
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range d.Entries {
		name, broad := broadSIDs[e.SID]
		if e.Type == host.ACEAccessAllowed && broad && e.Mask&writeRights != 0 && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}
