package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// Default DACLs of a freshly formatted volume's root
// (WindowsAnswers.VolumeRootACL).
// Microsoft does not document what MSFT_Volume.Format (which takes no
// security descriptor) gives the root, and the public dumps of real
// machines disagree, so the simulated host offers both and the plugin must
// work with either:
const (
	// RootACLServer: the root of a volume formatted by Format-Volume on
	// Windows Server 2022, as the icacls dump in kubernetes/kubernetes#131341
	// (and kubernetes-csi/csi-proxy#382) shows it. Users may read, and
	// create directories (CI AD) but not files at the root, which is why a
	// container running as ContainerUser cannot write there. The default.
	RootACLServer = "server"
	// RootACLClient: the root of an NTFS data volume on Windows 11, as the
	// SDDL Zhaopudark/PSComputerManagementZp records for
	// NonSystemDisk[NTFS]\Root (Get-DefaultSddl): Authenticated Users may
	// modify the root itself.
	RootACLClient = "client"
)

// Generic rights as they appear in the client dump's inherit-only entries
// (ACCESS_MASK, winnt.h).
const (
	genericAll     = 0x10000000
	genericExecute = 0x20000000
	genericWrite   = 0x40000000
	genericRead    = 0x80000000
	rightDelete    = 0x00010000
)

// rootACLs are the entries of each default, in the dumps' order.
var rootACLs = map[string]DACLState{
	RootACLServer: {Entries: []ACEState{
		allowState(winacl.SIDAdministrators, winacl.FullControl, 0x03),
		allowState(winacl.SIDLocalSystem, winacl.FullControl, 0x03),
		allowState(winacl.SIDCreatorOwner, winacl.FullControl, 0x0b),
		allowState(winacl.SIDUsers, winacl.ReadExecute, 0x03),
		allowState(winacl.SIDUsers, 0x4, 0x02), // FILE_ADD_SUBDIRECTORY, CI
		allowState(winacl.SIDUsers, 0x2, 0x0a), // FILE_ADD_FILE, CI IO
		allowState(winacl.SIDEveryone, winacl.ReadExecute, 0),
	}},
	RootACLClient: {AutoInherited: true, Entries: []ACEState{
		allowState(winacl.SIDAuthenticatedUsers, rightDelete|genericExecute|genericWrite|genericRead, 0x0b),
		allowState(winacl.SIDAuthenticatedUsers, winacl.Modify, 0),
		allowState(winacl.SIDLocalSystem, winacl.FullControl, 0),
		allowState(winacl.SIDLocalSystem, genericAll, 0x0b),
		allowState(winacl.SIDAdministrators, genericAll, 0x0b),
		allowState(winacl.SIDAdministrators, winacl.FullControl, 0),
		allowState(winacl.SIDUsers, winacl.ReadExecute, 0),
		allowState(winacl.SIDUsers, genericExecute|genericRead, 0x0b),
	}},
}

func allowState(sid string, mask uint32, flags uint8) ACEState {
	return ACEState{Type: host.ACEAccessAllowed, Flags: flags, Mask: mask, SID: sid}
}

// ValidRootACL reports whether name is a default root DACL of the
// simulated host ("server" or "client").
func ValidRootACL(name string) bool {
	_, ok := rootACLs[name]
	return ok
}

// DACLState is the DACL of a volume's root directory.
type DACLState struct {
	Null          bool       `json:"null,omitempty"`
	Protected     bool       `json:"protected,omitempty"`
	AutoInherited bool       `json:"autoInherited,omitempty"`
	Entries       []ACEState `json:"entries"`
}

// ACEState is one entry of a DACL.
type ACEState struct {
	Type  uint8  `json:"type"`
	Flags uint8  `json:"flags"`
	Mask  uint32 `json:"mask"`
	SID   string `json:"sid"`
}

// AccountState is an account name the simulated host resolves besides the
// built-in ones (--sim-config accounts).
type AccountState struct {
	Name string `json:"name"`
	SID  string `json:"sid"`
}

// builtinAccounts are the names the simulated host resolves on its own: the
// built-in groups and service accounts with their English names, bare or
// qualified by their domain (BUILTIN, NT AUTHORITY), as LookupAccountName
// accepts both. ContainerUser and ContainerAdministrator are not among
// them: they exist only inside a container ("these identities only exist
// within the context of the container--not on the host", Persistent
// Storage in Containers,
// https://learn.microsoft.com/en-us/virtualization/windowscontainers/manage-containers/persistent-storage).
var builtinAccounts = []struct{ domain, name, sid string }{
	{"BUILTIN", "Administrators", winacl.SIDAdministrators},
	{"BUILTIN", "Users", winacl.SIDUsers},
	{"BUILTIN", "Backup Operators", "S-1-5-32-551"},
	{"NT AUTHORITY", "SYSTEM", winacl.SIDLocalSystem},
	{"NT AUTHORITY", "Authenticated Users", winacl.SIDAuthenticatedUsers},
	{"NT AUTHORITY", "LOCAL SERVICE", "S-1-5-19"},
	{"NT AUTHORITY", "NETWORK SERVICE", "S-1-5-20"},
	{"", "Everyone", winacl.SIDEveryone},
	{"", "CREATOR OWNER", winacl.SIDCreatorOwner},
}

// lookupAccount resolves a name: a built-in account, bare or qualified, or
// one the state declares.
func (st *State) lookupAccount(name string) (string, bool) {
	for _, a := range builtinAccounts {
		if strings.EqualFold(name, a.name) || a.domain != "" && strings.EqualFold(name, a.domain+`\`+a.name) {
			return a.sid, true
		}
	}
	for _, a := range st.Accounts {
		if strings.EqualFold(name, a.Name) {
			return a.SID, true
		}
	}
	return "", false
}

// root returns the DACL of a volume's root, materialising the default for
// a volume formatted before the simulated host kept one.
func (s *Sim) root(v *VolumeState) *DACLState {
	if v.Root == nil {
		d := s.defaultRoot()
		v.Root = &d
	}
	return v.Root
}

// defaultRoot is a copy of the DACL Format gives a root.
func (s *Sim) defaultRoot() DACLState {
	d := rootACLs[RootACLServer]
	if x, ok := rootACLs[s.cfg.Windows.VolumeRootACL]; ok {
		d = x
	}
	d.Entries = slices.Clone(d.Entries)
	return d
}

func (d *DACLState) host() host.DACL {
	out := host.DACL{Null: d.Null, Protected: d.Protected}
	for _, e := range d.Entries {
		out.Entries = append(out.Entries, host.ACE(e))
	}
	return out
}

// security implements host.Security.
type security struct{ s *Sim }

// rootVolume finds the formatted volume whose root a call names.
func (st *State) rootVolume(guidPath string) (*DiskState, *VolumeState, error) {
	d, p, err := st.volumeByPath(guidPath)
	if err != nil {
		return nil, nil, err
	}
	if p.Volume.FileSystem == "" {
		return nil, nil, fmt.Errorf("volume %s has no file system, so no root directory: %w", guidPath, host.ErrInvalid)
	}
	return d, p.Volume, nil
}

func (h security) RootDACL(ctx context.Context, guidPath string) (host.DACL, error) {
	// Not a write although a volume formatted before the simulated host
	// kept DACLs gets its default here: the default is what it had.
	return call(ctx, h.s, OpSecurityRootDACL, false, func(st *State) (host.DACL, error) {
		_, v, err := st.rootVolume(guidPath)
		if err != nil {
			return host.DACL{}, err
		}
		if v.Root == nil {
			d := h.s.defaultRoot()
			return d.host(), nil
		}
		return v.Root.host(), nil
	})
}

func (h security) AddRootAllowEntries(ctx context.Context, guidPath string, entries []host.ACE) ([]host.ACE, error) {
	return call(ctx, h.s, OpSecurityAddRootAllowEntries, true, func(st *State) ([]host.ACE, error) {
		want := slices.Clone(entries)
		for i, e := range want {
			sid, err := winacl.CanonicalSID(e.SID)
			if e.Type != host.ACEAccessAllowed || e.Flags&host.ACEInherited != 0 || err != nil {
				return nil, fmt.Errorf("entry %d for %q is not an explicit allow entry with a SID: %w", i, e.SID, host.ErrInvalid)
			}
			want[i].SID = sid
		}
		d, v, err := st.rootVolume(guidPath)
		if err != nil {
			return nil, err
		}
		if d.ReadOnly {
			return nil, fmt.Errorf("root of volume %s: disk %d is read-only: %w", guidPath, d.Number, host.ErrReadOnly)
		}
		root := h.s.root(v)
		if root.Null {
			return nil, fmt.Errorf("the root of volume %s has a NULL DACL: %w", guidPath, host.ErrConflict)
		}
		have := root.host()
		var added []host.ACE
		for _, e := range want {
			if have.Grants(e) || (host.DACL{Entries: added}).Grants(e) {
				continue
			}
			added = append(added, e)
		}
		at := have.InsertAt()
		ins := make([]ACEState, len(added))
		for i, e := range added {
			ins[i] = ACEState(e)
		}
		root.Entries = slices.Insert(root.Entries, at, ins...)
		return added, nil
	})
}

func (h security) LookupAccountName(ctx context.Context, name string) (string, error) {
	return call(ctx, h.s, OpSecurityLookupAccountName, false, func(st *State) (string, error) {
		sid, ok := st.lookupAccount(name)
		if !ok {
			return "", fmt.Errorf("account %q: no mapping between account names and security IDs was done: %w", name, host.ErrNotFound)
		}
		return sid, nil
	})
}

// SetRootDACL replaces the DACL of a volume's root (tests: a NULL DACL, a
// root someone changed by hand).
func (s *Sim) SetRootDACL(guidPath string, d DACLState) error {
	return s.control(func(st *State) error {
		_, v, err := st.rootVolume(guidPath)
		if err != nil {
			return err
		}
		d.Entries = slices.Clone(d.Entries)
		v.Root = &d
		return nil
	})
}
