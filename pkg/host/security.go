package host

import "context"

// ACE types the plugin interprets (ACE_HEADER.AceType). Entries of other
// types are kept as they are and never interpreted.
const (
	ACEAccessAllowed uint8 = 0 // ACCESS_ALLOWED_ACE_TYPE
	ACEAccessDenied  uint8 = 1 // ACCESS_DENIED_ACE_TYPE
)

// ACE flags (ACE_HEADER.AceFlags).
const (
	ACEObjectInherit    uint8 = 0x01 // OBJECT_INHERIT_ACE (OI): files below inherit the entry
	ACEContainerInherit uint8 = 0x02 // CONTAINER_INHERIT_ACE (CI): directories below inherit it
	ACENoPropagate      uint8 = 0x04 // NO_PROPAGATE_INHERIT_ACE (NP): inherited one level down only
	ACEInheritOnly      uint8 = 0x08 // INHERIT_ONLY_ACE (IO): it does not apply to the object itself
	ACEInherited        uint8 = 0x10 // INHERITED_ACE (ID): a copy of a parent's inheritable entry
)

// ACEInheritedBelow is OI|CI: the entry applies to the directory, and to
// every file and directory created below it, at every depth.
const ACEInheritedBelow = ACEObjectInherit | ACEContainerInherit

// ACE is one entry of a discretionary access control list.
type ACE struct {
	Type  uint8
	Flags uint8
	// Mask and SID ("S-1-5-93-2-2") are set for ACEAccessAllowed and
	// ACEAccessDenied entries only.
	Mask uint32
	SID  string
}

// DACL is a directory's discretionary access control list, in order.
type DACL struct {
	// Null is set when the directory has no DACL or a NULL one: everyone
	// has full access, and Entries is empty.
	Null bool
	// Protected: the DACL does not inherit from the parent
	// (SE_DACL_PROTECTED).
	Protected bool
	Entries   []ACE
}

// Grants reports whether the DACL has an entry that gives want: an
// explicit (not inherited) allow entry for want's SID, applying to the
// directory itself (not inherit-only), with at least want's inheritance
// flags among OI and CI (and inherited at every depth, not NP, when want
// is inherited at all) and at least want's rights. Entries that give the
// same access in another shape (split in two, generic rights) are not
// recognised: at worst an equivalent entry is added once.
func (d DACL) Grants(want ACE) bool {
	for _, e := range d.Entries {
		if e.Type == ACEAccessAllowed && e.SID == want.SID &&
			e.Flags&(ACEInherited|ACEInheritOnly) == 0 &&
			e.Flags&want.Flags&ACEInheritedBelow == want.Flags&ACEInheritedBelow &&
			(want.Flags&ACEInheritedBelow == 0 || e.Flags&ACENoPropagate == 0) &&
			e.Mask&want.Mask == want.Mask {
			return true
		}
	}
	return false
}

// InsertAt is where an explicit entry is added to the DACL: after the last
// explicit entry, so before the inherited ones, as the canonical order
// wants (Order of ACEs in a DACL,
// https://learn.microsoft.com/en-us/windows/win32/secauthz/order-of-aces-in-a-dacl),
// and after every explicit deny entry, so that an added allow entry never
// overrides one.
func (d DACL) InsertAt() int {
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if d.Entries[i].Flags&ACEInherited == 0 {
			return i + 1
		}
	}
	return 0
}

// Missing returns the entries of want the DACL does not grant (Grants), in
// want's order.
func (d DACL) Missing(want []ACE) []ACE {
	var out []ACE
	for _, w := range want {
		if !d.Grants(w) {
			out = append(out, w)
		}
	}
	return out
}

// Security is the access control of volume roots: the DACL of the root
// directory of a volume's file system, the allow entries the plugin adds
// there (volumeRootAccess), and the accounts those entries name.
type Security interface {
	// RootDACL returns the DACL of the root directory of the volume
	// (\\?\Volume{GUID}\). ErrNotFound when the volume does not exist or
	// is not visible (its disk is offline).
	RootDACL(ctx context.Context, guidPath string) (DACL, error)

	// AddRootAllowEntries adds to the DACL of the volume's root directory
	// each entry of entries that it does not grant yet (DACL.Grants),
	// in entries' order at DACL.InsertAt, and returns those it added: none
	// when every entry was there, and then nothing is written. Existing
	// entries are never removed, changed or reordered. Each entry must be
	// an ACEAccessAllowed entry without ACEInherited (ErrInvalid). The
	// entries apply to what is created below the root from now on; on
	// Windows, setting the DACL also gives the files and directories
	// already below the root the new entries as inherited ones (automatic
	// propagation, which takes as long as the tree is large and may go on
	// after ctx ends). The simulated host keeps no ACL below the root. A
	// root with a NULL DACL (everyone has full access) is refused with
	// ErrConflict: adding an entry would take access away.
	AddRootAllowEntries(ctx context.Context, guidPath string, entries []ACE) ([]ACE, error)

	// LookupAccountName returns the SID of the account (user, group or
	// alias) a name names on this host, in string form: a name Windows
	// cannot map is ErrNotFound, one that names a domain or a computer
	// rather than an account ErrInvalid, and a failure to reach the
	// domain that would know the name ErrUnreachable.
	LookupAccountName(ctx context.Context, name string) (string, error)
}
