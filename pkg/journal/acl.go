package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wincsi/csi-windows-node/internal/durable"
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
// its token's default owner, which is one of them) and it has one name: a
// hard link planted to a file elsewhere (one a user may write, owned by
// SYSTEM) would pass the owner check. The decision is made from the
// file's security alone, read through a handle that needs no right to the
// contents, so a planted file whose DACL denies the plugin its contents,
// or even its owner, is refused like any other and never stops the plugin
// from starting.
//
// Off Windows there is no such ACL: the directory's mode is what protects
// it, and files are not checked (fileSecurity reports nothing to check).

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
	// read returns what the journal needs to know of one of its files:
	// its owner and links, read through a handle opened for them only,
	// then its contents, read through a second handle that must reach the
	// same file. It fails when the file cannot be opened for its security
	// (an error wrapping fs.ErrNotExist when it is gone, fs.ErrPermission
	// when its DACL denies the plugin even that).
	read(path string) (fileRead, error)
	// tokenOwner returns the SID new files of this process are owned by
	// ("" where the system has none).
	tokenOwner() (string, error)
}

// fileRead is what fileSecurity.read learns of a file.
type fileRead struct {
	// checked: the system keeps owners and links (Windows), and owner and
	// links are the file's; off Windows they say nothing.
	checked bool
	owner   string // the owner's SID; "" when the file has none
	links   uint32 // the number of names the file has
	// data is the file's contents; dataErr says why they could not be
	// read (the file's DACL denies them to the plugin, it changed while
	// read, it is larger than any journal file).
	data    []byte
	dataErr error
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

// Refused is a journal file the journal did not load because the plugin
// did not write it: its owner is neither SYSTEM, Administrators nor the
// plugin's token owner, it has no owner, more than one name, or a DACL
// that denies the plugin its owner. The plugin never acts on it.
type Refused struct {
	Path string `json:"path"`
	// Owner is its owner's SID; "" when it has none or it could not be
	// read.
	Owner string `json:"owner"`
	// Reason says why it was refused.
	Reason string `json:"reason"`
	// VolumeID and ResourceKey are those of the entry the file holds,
	// when it could be read and parses as an entry that names a shared
	// resource: that resource is kept while the file is there
	// (ByResource).
	VolumeID    string `json:"volumeID,omitempty"`
	ResourceKey string `json:"resourceKey,omitempty"`
}

// retryRead retries a read of a journal file that another process holds
// (durable.RetryRead); tests replace it.
var retryRead = durable.RetryRead

// readFile reads a journal file through j.sec and refuses it unless its
// owner is one the journal trusts and it has one name. The decision rests
// on the file's security alone, never on its contents, and a file refused
// never fails the read otherwise: a file planted with a DACL that denies
// the plugin everything is refused like the others. For a refused file it
// returns the refusal and what could be read of its contents (nil when
// nothing could), which are never trusted. A file another process holds
// open without sharing it (a scanner, for a moment: the open for its
// contents, at least, is refused) is read again, as long as the writes
// wait for one (retryRead).
func (j *Journal) readFile(path string) ([]byte, *Refused, error) {
	var (
		f   fileRead
		err error
	)
	_ = retryRead(func() error { // f and err are the last try's
		if f, err = j.sec.read(path); err != nil {
			return err
		}
		return f.dataErr
	})
	if errors.Is(err, fs.ErrPermission) {
		return nil, &Refused{Path: path, Reason: "its DACL denies the plugin even its owner"}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var why string
	switch {
	case !f.checked:
	case f.owner == "":
		why = "it has no owner"
	case !systemOwner(f.owner) && f.owner != j.tokenOwner:
		why = "owned by neither SYSTEM, Administrators nor the plugin"
	case f.links != 1:
		why = fmt.Sprintf("it has %d names (a hard link to a file elsewhere)", f.links)
	}
	if why != "" {
		if f.dataErr != nil {
			f.data = nil
		}
		return f.data, &Refused{Path: path, Owner: f.owner, Reason: why}, nil
	}
	if f.dataErr != nil {
		return nil, nil, f.dataErr
	}
	return f.data, nil, nil
}

// refusedEntry notes what a refused entry file holds, when it parses as an
// entry that names a shared resource: the plugin never acts on the entry,
// but its resource counts as used by it (ByResource), so a volume of the
// plugin's own that was refused (the DaemonSet's account changed, and with
// it the owner of new files) never has its SMB mapping or iSCSI session
// released under it. A planted file can then only keep a resource; it can
// never make the plugin remove one. The caller holds j.mu (or owns j).
func (j *Journal) refusedEntry(r *Refused, b []byte) {
	var e Entry
	if json.Unmarshal(b, &e) != nil || e.ResourceKey == "" {
		return
	}
	if e.VolumeID == "" {
		e.VolumeID = filepath.Base(r.Path)
	}
	r.VolumeID, r.ResourceKey = e.VolumeID, e.ResourceKey
	e.Refused, e.Attrs = true, nil
	j.blocking = append(j.blocking, refusedUser{path: r.Path, entry: e})
}

// refusedUser is a refused entry file's claim on a shared resource.
type refusedUser struct {
	path  string
	entry Entry
}

// Refused returns the files Open refused (never loaded), less the entry
// files the plugin has replaced or removed since (a stage or unstage of
// the volume they name).
func (j *Journal) Refused() []Refused {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return append([]Refused(nil), j.refused...)
}

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

// ErrUntrustedOwner is a directory ProtectDir would act on that exists
// already with an owner other than SYSTEM or Administrators: anyone may
// have put anything in it.
var ErrUntrustedOwner = errors.New("owned by neither SYSTEM nor Administrators")

// ProtectDir gives dir, a directory whose contents a tool other than the
// journal acts on (the selftest's work directory, whose leftover sweep
// detaches and deletes what it finds), the protection of the state
// directory: it creates dir (and its parents), refuses a dir that is not
// a plain directory (a junction or symbolic link to elsewhere) or that
// existed already with an owner other than SYSTEM or Administrators
// (ErrUntrustedOwner), then sets the state directory's owner and
// protected DACL unless dir has them. A dir it creates itself is owned by
// the process's token owner until then. Off Windows it only creates dir:
// its mode (0o700) protects it.
func ProtectDir(dir string) error { return protectOwnDir(osFileSecurity{}, dir) }

func protectOwnDir(sec fileSecurity, dir string) error {
	dir = filepath.Clean(dir) // without a trailing separator, which Lstat would follow
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return protectDir(sec, dir)
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := plainDir(dir); err != nil {
		return err
	}
	b, err := sec.descriptor(dir)
	if err != nil {
		return fmt.Errorf("read the security descriptor of %s: %w", dir, err)
	}
	if b != nil {
		d, err := winacl.ParseDescriptor(b)
		if err != nil {
			return fmt.Errorf("security descriptor of %s: %w", dir, err)
		}
		if !systemOwner(d.Owner) {
			owner := d.Owner
			if owner == "" {
				owner = "none"
			}
			return fmt.Errorf("%s: %w (owner %s)", dir, ErrUntrustedOwner, owner)
		}
	}
	return protectDir(sec, dir)
}

// plainDir fails unless dir itself is a directory, not a link, junction or
// other reparse point to one: the DACL the journal sets, the leftovers it
// deletes and the files it writes would land wherever a link points (a
// junction planted by a local user could make the plugin, running as
// SYSTEM, replace the ACL of any directory). os.Lstat reports a symbolic
// link as ModeSymlink and, since Go 1.23 (GODEBUG winsymlink=1, the
// default), a junction or any other reparse point as ModeIrregular; with
// winsymlink=0 a junction is ModeSymlink (golang/go#61893,
// https://go.dev/doc/go1.23#ospkgos): either way it fails the check.
func plainDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeDir {
		return fmt.Errorf("%s is not a directory (mode %s): a link or junction is never followed; remove it", dir, fi.Mode())
	}
	return nil
}
