package journal

import (
	"errors"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// Who may own the state directory and the files in it. On Windows the
// directory's mode (0o700) means nothing: it would inherit the kubelet
// directory's ACL, under which local users may create files, so a user
// could plant an entry that a clean-mode orphan sweep acts on. Open
// therefore gives the directory a protected DACL (SYSTEM and
// Administrators, full control, nothing else) and makes Administrators its
// owner (an owner may always change the DACL: Owner of a New Object,
// https://learn.microsoft.com/en-us/windows/win32/secauthz/owner-of-a-new-object),
// and every file read is refused unless SYSTEM, Administrators or the
// plugin's own token owner owns it (files the plugin writes are owned by
// its token's default owner, which is one of them).
//
// Off Windows there is no such ACL: the directory's mode is what protects
// it, and files are not checked (fileSecurity reports no owner).

// fileSecurity is what the journal asks of the operating system about the
// security of its directory and files (acl_windows.go, acl_other.go;
// tests inject their own).
type fileSecurity interface {
	// descriptor returns the self-relative security descriptor (owner and
	// DACL) of path, or nil where the system keeps none.
	descriptor(path string) ([]byte, error)
	// protect sets dir's owner and its DACL, protected from inheritance
	// (owner: a binary SID, dacl: a binary ACL).
	protect(dir string, owner, dacl []byte) error
	// read returns a file's contents and its owner's SID ("" where the
	// system has no owner to tell), both read through one handle.
	read(path string) ([]byte, string, error)
	// tokenOwner returns the SID new files of this process are owned by
	// ("" where the system has none).
	tokenOwner() (string, error)
}

// stateDirDescriptor is the owner and DACL Open gives the state directory:
// O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA).
func stateDirDescriptor() winacl.Descriptor {
	var acl winacl.ACL
	acl.Revision = winacl.ACLRevision
	for _, sid := range []string{winacl.SIDLocalSystem, winacl.SIDAdministrators} {
		a, err := winacl.AllowACE(sid, winacl.FullControl, winacl.ObjectInherit|winacl.ContainerInherit)
		if err != nil {
			panic(fmt.Sprintf("journal: the state directory's entry for %s: %v", sid, err)) // constants: cannot fail
		}
		acl.ACEs = append(acl.ACEs, a)
	}
	return winacl.Descriptor{Control: winacl.ControlDACLProtected, Owner: winacl.SIDAdministrators, DACL: &acl}
}

// systemOwner reports whether sid is SYSTEM or Administrators.
func systemOwner(sid string) bool {
	return sid == winacl.SIDLocalSystem || sid == winacl.SIDAdministrators
}

// isProtected reports whether d is the state directory's descriptor
// already: owned by SYSTEM or Administrators, its DACL protected and
// holding exactly the two entries of stateDirDescriptor.
func isProtected(d winacl.Descriptor) bool {
	if !systemOwner(d.Owner) || !d.Protected() || d.DACL == nil || len(d.DACL.ACEs) != 2 {
		return false
	}
	seen := map[string]bool{}
	for _, a := range d.DACL.ACEs {
		if a.Type != winacl.AccessAllowedType || a.Flags != winacl.ObjectInherit|winacl.ContainerInherit ||
			a.Mask != winacl.FullControl || !systemOwner(a.SID) {
			return false
		}
		seen[a.SID] = true
	}
	return len(seen) == 2
}

// protectDir gives dir the state directory's owner and DACL unless it has
// them already.
func protectDir(sec fileSecurity, dir string) error {
	b, err := sec.descriptor(dir)
	if err != nil {
		return fmt.Errorf("read the security descriptor of %s: %w", dir, err)
	}
	if b == nil {
		return nil // no ACLs here
	}
	d, err := winacl.ParseDescriptor(b)
	if err != nil {
		return fmt.Errorf("security descriptor of %s: %w", dir, err)
	}
	if isProtected(d) {
		return nil
	}
	want := stateDirDescriptor()
	acl, err := want.DACL.Bytes()
	if err != nil {
		return err
	}
	// Administrators as owner needs that group in the token as an owner
	// (or SeRestorePrivilege: SetNamedSecurityInfoW, psidOwner); should
	// the plugin's token not allow it, SYSTEM, the HostProcess user, is
	// the other owner the journal trusts.
	var errs []error
	for _, o := range []string{want.Owner, winacl.SIDLocalSystem} {
		owner, err := winacl.ParseSID(o)
		if err != nil {
			return err
		}
		err = sec.protect(dir, owner, acl)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("owner %s: %w", o, err))
	}
	return fmt.Errorf("set the owner and a protected DACL on %s (%s): %w", dir, want, errors.Join(errs...))
}

// Refused is a journal file the journal did not load because its owner is
// neither SYSTEM, Administrators nor the plugin's token owner: someone else
// put it there, and the plugin never acts on it.
type Refused struct {
	Path  string `json:"path"`
	Owner string `json:"owner"`
}

// errRefused marks a file refused for its owner.
var errRefused = errors.New("owned by neither SYSTEM nor Administrators")

// readOwned reads a journal file through sec and refuses it (errRefused)
// when its owner is not one the journal trusts.
func (j *Journal) readOwned(path string) ([]byte, error) {
	b, owner, err := j.sec.read(path)
	if err != nil {
		return nil, err
	}
	if owner != "" && !systemOwner(owner) && owner != j.tokenOwner {
		j.refused = append(j.refused, Refused{Path: path, Owner: owner})
		return nil, fmt.Errorf("journal file %s is owned by %s: %w", path, owner, errRefused)
	}
	return b, nil
}

// Refused returns the files Open refused for their owner (never loaded).
func (j *Journal) Refused() []Refused { return append([]Refused(nil), j.refused...) }

// TokenOwner returns the SID the plugin's files are owned by, "" off
// Windows.
func (j *Journal) TokenOwner() string { return j.tokenOwner }

// Security returns the state directory's owner and DACL in SDDL form with
// full SIDs (winacl.Descriptor.String), and "" where the system keeps no
// ACL (off Windows: the directory's mode protects it).
func (j *Journal) Security() (string, error) {
	b, err := j.sec.descriptor(j.dir)
	if err != nil || b == nil {
		return "", err
	}
	d, err := winacl.ParseDescriptor(b)
	if err != nil {
		return "", fmt.Errorf("security descriptor of %s: %w", j.dir, err)
	}
	return d.String(), nil
}

// osFileSecurity is the system's fileSecurity.
type osFileSecurity struct{}
