package winhost

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Security implements host.Security with Win32 calls: the DACL of a
// volume's root directory is read with GetSecurityInfo and, when an entry
// is missing, written with SetSecurityInfo, both on one handle of the root
// (Executor.UpdateFileDACL); account names are resolved with
// LookupAccountNameW. Everything between (parsing the descriptor, deciding
// what is missing, building the new DACL) is done here, in Go, byte for
// byte (pkg/winacl):
//
//   - The new DACL is the old one with the missing entries inserted at
//     DACL.InsertAt, every existing entry copied unchanged. SetEntriesInAcl
//     is not used: it puts new allow entries before the existing ones and
//     merges a trustee's existing entries into the new one (SetEntriesInAclW
//     and ACCESS_MODE GRANT_ACCESS,
//     https://learn.microsoft.com/en-us/windows/win32/api/aclapi/nf-aclapi-setentriesinaclw),
//     where the plugin must never remove, change or reorder an entry.
//     SetSecurityInfo "does not reorder access-allowed or access-denied
//     ACEs" (SetSecurityInfo,
//     https://learn.microsoft.com/en-us/windows/win32/api/aclapi/nf-aclapi-setsecurityinfo).
//   - SetSecurityInfo, not SetFileSecurityW, which its page calls obsolete
//     ("Use the SetNamedSecurityInfo function instead", SetFileSecurityW,
//     https://learn.microsoft.com/en-us/windows/win32/api/securitybaseapi/nf-securitybaseapi-setfilesecurityw),
//     nor SetKernelObjectSecurity, whose page says it "should not be used
//     when setting a security descriptor on file system objects"
//     (https://learn.microsoft.com/en-us/windows/win32/api/securitybaseapi/nf-securitybaseapi-setkernelobjectsecurity).
//     The consequence: setting a DACL through SetSecurityInfo propagates
//     its inheritable entries to the existing files and directories below
//     the root, synchronously (Automatic Propagation of Inheritable ACEs,
//     https://learn.microsoft.com/en-us/windows/win32/secauthz/automatic-propagation-of-inheritable-aces).
//     It happens only when an entry is added (a first stage, or the first
//     after the grant was asked for; never a restage); on a fresh volume
//     there is next to nothing below, on one that holds data the call
//     walks the tree and may outlast the RPC's deadline (the executor
//     returns at the deadline, the call runs on, and a retried stage finds
//     the entry on the root and writes nothing). What exists then gets the
//     grant too, as an inherited entry.
//   - One handle, opened for READ_CONTROL and WRITE_DAC, serves the read
//     and the write, so the DACL written is built from the one read of the
//     same object. The DACL alone is set (DACL_SECURITY_INFORMATION), so
//     the owner, group and SACL are not touched; a protected DACL is set
//     with PROTECTED_DACL_SECURITY_INFORMATION, as the ACL itself cannot
//     carry the bit.
//
// The root is named \\?\Volume{GUID}\: with the trailing backslash that
// path names the root directory of the volume's file system (CreateFileW,
// "Physical Disks and Volumes"), whether or not the volume is mounted
// anywhere. Uncertain, each with its experiment in docs/windows.md: that
// CreateFileW opens the root by that form for its security, and how
// SetSecurityInfo treats the inherited entries and the protection of a
// volume root's DACL (a root has no parent to inherit from).
type Security struct{ e Executor }

var _ host.Security = (*Security)(nil)

// NewSecurity returns the access control side of the Windows host.
func NewSecurity(e Executor) *Security { return &Security{e: e} }

// Win32 error codes of the security calls (winerror.h).
const (
	ErrorInsufficientBuffer        = 122  // ERROR_INSUFFICIENT_BUFFER
	ErrorNoneMapped                = 1332 // ERROR_NONE_MAPPED: no mapping between account names and SIDs was done
	ErrorNoLogonServers            = 1311 // ERROR_NO_LOGON_SERVERS
	ErrorTrustedDomainFailure      = 1788 // ERROR_TRUSTED_DOMAIN_FAILURE
	ErrorTrustedRelationshipFailed = 1789 // ERROR_TRUSTED_RELATIONSHIP_FAILURE
)

// SID_NAME_USE values (winnt.h,
// https://learn.microsoft.com/en-us/windows/win32/api/winnt/ne-winnt-sid_name_use)
// that name an account an entry may grant to.
const (
	sidTypeUser           = 1
	sidTypeGroup          = 2
	sidTypeAlias          = 4
	sidTypeWellKnownGroup = 5
)

// rootPath returns the path of a volume's root directory,
// \\?\Volume{guid}\, or ErrInvalid.
func rootPath(guidPath string) (string, error) {
	p, ok := winpath.VolumeGUIDPath(guidPath)
	if !ok {
		return "", fmt.Errorf("%q is not a volume GUID path: %w", guidPath, host.ErrInvalid)
	}
	return p, nil
}

// readRoot returns the root's descriptor with its DACL.
func (s *Security) readRoot(ctx context.Context, root string) (winacl.Descriptor, error) {
	b, err := s.e.FileSecurity(ctx, root, winacl.DACLSecurityInformation)
	if err != nil {
		return winacl.Descriptor{}, fmt.Errorf("read the security descriptor of %s: %w", root, mapHostErr(err))
	}
	return parseRoot(root, b)
}

func parseRoot(root string, b []byte) (winacl.Descriptor, error) {
	d, err := winacl.ParseDescriptor(b)
	if err != nil {
		return winacl.Descriptor{}, fmt.Errorf("security descriptor of %s: %w", root, err)
	}
	return d, nil
}

// hostDACL is the host form of a descriptor's DACL.
func hostDACL(d winacl.Descriptor) host.DACL {
	out := host.DACL{Null: d.NullDACL(), Protected: d.Protected()}
	if d.DACL != nil {
		for _, a := range d.DACL.ACEs {
			out.Entries = append(out.Entries, host.ACE{Type: a.Type, Flags: a.Flags, Mask: a.Mask, SID: a.SID})
		}
	}
	return out
}

// RootDACL implements host.Security.
func (s *Security) RootDACL(ctx context.Context, guidPath string) (host.DACL, error) {
	root, err := rootPath(guidPath)
	if err != nil {
		return host.DACL{}, err
	}
	d, err := s.readRoot(ctx, root)
	if err != nil {
		return host.DACL{}, err
	}
	return hostDACL(d), nil
}

// AddRootAllowEntries implements host.Security.
func (s *Security) AddRootAllowEntries(ctx context.Context, guidPath string, entries []host.ACE) ([]host.ACE, error) {
	root, err := rootPath(guidPath)
	if err != nil {
		return nil, err
	}
	// Every entry is built before anything is read, so a bad one fails
	// with nothing done.
	entries = slices.Clone(entries)
	built := make([]winacl.ACE, len(entries))
	for i, e := range entries {
		if e.Type != host.ACEAccessAllowed || e.Flags&host.ACEInherited != 0 {
			return nil, fmt.Errorf("entry %d for %s is not an explicit allow entry: %w", i, e.SID, host.ErrInvalid)
		}
		if built[i], err = winacl.AllowACE(e.SID, e.Mask, e.Flags); err != nil {
			return nil, fmt.Errorf("entry %d: %w: %w", i, err, host.ErrInvalid)
		}
		entries[i].SID = built[i].SID
	}
	var added []host.ACE
	var refused error // update's own refusal, returned as it is
	update := func(sd []byte) ([]byte, uint32, error) {
		d, err := parseRoot(root, sd)
		if err == nil {
			var acl []byte
			var info uint32
			if added, acl, info, err = withEntries(root, d, entries, built); err == nil {
				return acl, info, nil
			}
		}
		refused = err
		return nil, 0, err
	}
	if err := s.e.UpdateFileDACL(ctx, root, update); err != nil {
		if refused != nil && errors.Is(err, refused) {
			return nil, err
		}
		return nil, fmt.Errorf("update the DACL of %s: %w", root, mapHostErr(err))
	}
	return added, nil
}

// withEntries returns the entries d's DACL does not grant (each once, in
// entries' order), and that DACL with them inserted at DACL.InsertAt,
// every existing entry kept as it was, with the SECURITY_INFORMATION flags
// to set it with; no ACL when every entry is there. built are the entries
// in binary form.
func withEntries(root string, d winacl.Descriptor, entries []host.ACE, built []winacl.ACE) ([]host.ACE, []byte, uint32, error) {
	if d.NullDACL() {
		return nil, nil, 0, fmt.Errorf("the root of volume %s has a NULL DACL (everyone has full access); adding an entry would take access away: %w", root, host.ErrConflict)
	}
	have := hostDACL(d)
	var added []host.ACE
	var insert []winacl.ACE
	for i, e := range entries {
		// An entry asked for twice is added once.
		if have.Grants(e) || (host.DACL{Entries: added}).Grants(e) {
			continue
		}
		added, insert = append(added, e), append(insert, built[i])
	}
	if len(added) == 0 {
		return nil, nil, 0, nil
	}
	at := have.InsertAt()
	acl := winacl.ACL{Revision: d.DACL.Revision}
	acl.ACEs = append(acl.ACEs, d.DACL.ACEs[:at]...)
	acl.ACEs = append(acl.ACEs, insert...)
	acl.ACEs = append(acl.ACEs, d.DACL.ACEs[at:]...)
	b, err := acl.Bytes()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("the DACL of the root of volume %s: %w: %w", root, err, host.ErrOutOfRange)
	}
	info := winacl.DACLSecurityInformation
	if d.Protected() {
		info |= winacl.ProtectedDACLSecurityInformation
	}
	return added, b, info, nil
}

// LookupAccountName implements host.Security.
func (s *Security) LookupAccountName(ctx context.Context, name string) (string, error) {
	sid, use, err := s.e.LookupAccountName(ctx, name)
	if err != nil {
		return "", fmt.Errorf("look up account %q: %w", name, lookupErr(err))
	}
	switch use {
	case sidTypeUser, sidTypeGroup, sidTypeAlias, sidTypeWellKnownGroup:
	default:
		return "", fmt.Errorf("%q names %s, not a user or group: %w", name, sidUse(use), host.ErrInvalid)
	}
	canon, _, err := winacl.FormatSID(sid)
	if err != nil {
		return "", fmt.Errorf("look up account %q: %w", name, err)
	}
	return canon, nil
}

// lookupErr gives a LookupAccountNameW failure its host meaning: a name no
// one maps is ErrNotFound, a domain controller or trust that cannot be
// reached ErrUnreachable (retry later).
func lookupErr(err error) error {
	var we *Win32Error
	if errors.As(err, &we) {
		switch we.Code {
		case ErrorNoneMapped:
			return fmt.Errorf("%w: %w", err, host.ErrNotFound)
		case ErrorNoLogonServers, ErrorTrustedDomainFailure, ErrorTrustedRelationshipFailed:
			return fmt.Errorf("%w: %w", err, host.ErrUnreachable)
		}
	}
	return mapHostErr(err)
}

func sidUse(use uint32) string {
	switch use {
	case 3:
		return "a domain"
	case 6:
		return "a deleted account"
	case 7:
		return "an invalid account"
	case 9:
		return "a computer"
	case 10:
		return "an integrity label"
	case 11:
		return "a logon session"
	}
	return fmt.Sprintf("an account of unknown kind %d", use)
}
