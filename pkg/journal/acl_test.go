package journal

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// fakeSecurity stands for Windows: a descriptor for the directory, an
// owner per file, the calls made.
type fakeSecurity struct {
	dirSD    []byte            // what descriptor returns for the directory
	refuse   map[string]bool   // owners protect refuses (by SID)
	owners   map[string]string // by file name; the rest are owned by Administrators
	links    map[string]uint32 // by file name; the rest have one name
	denied   map[string]bool   // files whose DACL denies the plugin their owner
	noData   map[string]bool   // files whose DACL denies the plugin their contents
	token    string
	protects [][2][]byte // owner and DACL of each protect call
	// held fails the reads of the contents of files, by name, with
	// errHeld, as many times as it says (another process holding them
	// open without sharing them).
	held map[string]int
}

// errHeld stands for ERROR_SHARING_VIOLATION: a scanner holds the file
// open without sharing it.
var errHeld = errors.New("the process cannot access the file because it is being used by another process")

func (f *fakeSecurity) descriptor(string) ([]byte, error) { return f.dirSD, nil }

func (f *fakeSecurity) protect(_ string, owner, dacl []byte) error {
	f.protects = append(f.protects, [2][]byte{owner, dacl})
	d := winacl.Descriptor{Control: winacl.ControlDACLProtected}
	var err error
	if d.Owner, _, err = winacl.FormatSID(owner); err != nil {
		return err
	}
	if f.refuse[d.Owner] {
		return errors.New("ERROR_INVALID_OWNER")
	}
	acl, err := winacl.ParseACL(dacl)
	if err != nil {
		return err
	}
	d.DACL = &acl
	f.dirSD, err = d.Bytes()
	return err
}

func (f *fakeSecurity) read(path string) (fileRead, error) {
	name := filepath.Base(path)
	if _, err := os.Stat(path); err != nil {
		return fileRead{}, err
	}
	if f.denied[name] {
		return fileRead{}, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
	}
	r := fileRead{checked: true, owner: winacl.SIDAdministrators, links: 1}
	if o, ok := f.owners[name]; ok {
		r.owner = o
	}
	if n, ok := f.links[name]; ok {
		r.links = n
	}
	if f.noData[name] {
		r.dataErr = &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
		return r, nil
	}
	if f.held[name] > 0 {
		f.held[name]--
		r.dataErr = &fs.PathError{Op: "open", Path: path, Err: errHeld}
		return r, nil
	}
	r.data, r.dataErr = os.ReadFile(path)
	return r, nil
}

func (f *fakeSecurity) tokenOwner() (string, error) { return f.token, nil }

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kubeletInherited is a state directory as MkdirAll leaves it below the
// kubelet directory on Windows Server: owned by whoever made it, its DACL
// inherited from C:\ (Users may add files and folders).
func kubeletInherited(t *testing.T, owner string) []byte {
	t.Helper()
	var acl winacl.ACL
	for _, e := range []struct {
		sid   string
		mask  uint32
		flags uint8
	}{
		{winacl.SIDAdministrators, winacl.FullControl, 0x13},
		{winacl.SIDLocalSystem, winacl.FullControl, 0x13},
		{winacl.SIDUsers, winacl.ReadExecute, 0x13},
		{winacl.SIDUsers, 0x4, 0x12},
		{winacl.SIDUsers, 0x2, 0x12},
	} {
		a, err := winacl.AllowACE(e.sid, e.mask, e.flags)
		if err != nil {
			t.Fatal(err)
		}
		acl.ACEs = append(acl.ACEs, a)
	}
	b, err := winacl.Descriptor{Control: winacl.ControlDACLAutoInherited, Owner: owner, DACL: &acl}.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenProtectsTheStateDirectory: Open sets owner Administrators and
// the DACL D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA) on a directory that has
// anything else, exactly these bytes, and leaves a protected one alone.
func TestOpenProtectsTheStateDirectory(t *testing.T) {
	for name, owner := range map[string]string{
		"made by a user": "S-1-5-21-1-2-3-1001",
		"made by SYSTEM": winacl.SIDLocalSystem,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sec := &fakeSecurity{dirSD: kubeletInherited(t, owner)}
			if _, err := open(dir, sec); err != nil {
				t.Fatal(err)
			}
			wantOwner := unhex(t, "01 02 000000000005 20000000 20020000") // S-1-5-32-544
			wantDACL := unhex(t, "02 00 3400 0200 0000"+                  // revision 2, 52 bytes, 2 entries
				"00 03 1400 ff011f00 01 01 000000000005 12000000"+ // (A;OICI;FA;;;SY)
				"00 03 1800 ff011f00 01 02 000000000005 20000000 20020000") // (A;OICI;FA;;;BA)
			if len(sec.protects) != 1 || !bytes.Equal(sec.protects[0][0], wantOwner) || !bytes.Equal(sec.protects[0][1], wantDACL) {
				t.Fatalf("protect calls % x, want one with owner % x and DACL % x", sec.protects, wantOwner, wantDACL)
			}
			// A restart finds it protected and writes nothing.
			j, err := open(dir, sec)
			if err != nil {
				t.Fatal(err)
			}
			if len(sec.protects) != 1 {
				t.Fatalf("a second Open protected the directory again")
			}
			if s, err := j.Security(); err != nil || s != "O:S-1-5-32-544D:P(A;OICI;0x1f01ff;;;S-1-5-18)(A;OICI;0x1f01ff;;;S-1-5-32-544)" {
				t.Fatalf("Security = %q, %v", s, err)
			}
		})
	}
}

// TestOpenProtectsWithSystemAsOwner: a token that may not make
// Administrators the owner makes SYSTEM the owner; when neither is
// possible Open fails, naming both.
func TestOpenProtectsWithSystemAsOwner(t *testing.T) {
	sec := &fakeSecurity{dirSD: kubeletInherited(t, "S-1-5-21-1-2-3-1001"), refuse: map[string]bool{winacl.SIDAdministrators: true}}
	j, err := open(t.TempDir(), sec)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := j.Security(); len(sec.protects) != 2 || !strings.HasPrefix(s, "O:S-1-5-18D:P(") {
		t.Fatalf("%d protect calls, directory %s", len(sec.protects), s)
	}
	sec = &fakeSecurity{dirSD: kubeletInherited(t, "S-1-5-21-1-2-3-1001"),
		refuse: map[string]bool{winacl.SIDAdministrators: true, winacl.SIDLocalSystem: true}}
	if _, err := open(t.TempDir(), sec); err == nil || !strings.Contains(err.Error(), "owner S-1-5-32-544") || !strings.Contains(err.Error(), "owner S-1-5-18") {
		t.Fatalf("open = %v, want both owners named", err)
	}
}

func TestIsProtected(t *testing.T) {
	good := stateDirDescriptor()
	if !isProtected(good) {
		t.Fatal("the state directory's own descriptor is not protected")
	}
	bad := func(f func(d *winacl.Descriptor)) winacl.Descriptor {
		d := stateDirDescriptor()
		acl := *d.DACL
		acl.ACEs = append([]winacl.ACE(nil), acl.ACEs...)
		d.DACL = &acl
		f(&d)
		return d
	}
	users, _ := winacl.AllowACE(winacl.SIDUsers, winacl.ReadExecute, 3)
	sysRX, _ := winacl.AllowACE(winacl.SIDLocalSystem, winacl.ReadExecute, 3)
	sysIO, _ := winacl.AllowACE(winacl.SIDLocalSystem, winacl.FullControl, winacl.ObjectInherit|winacl.ContainerInherit|winacl.InheritOnly)
	sysOI, _ := winacl.AllowACE(winacl.SIDLocalSystem, winacl.FullControl, winacl.ObjectInherit)
	for name, d := range map[string]winacl.Descriptor{
		"not protected":      bad(func(d *winacl.Descriptor) { d.Control = 0 }),
		"owned by a user":    bad(func(d *winacl.Descriptor) { d.Owner = "S-1-5-21-1-2-3-1001" }),
		"no owner":           bad(func(d *winacl.Descriptor) { d.Owner = "" }),
		"a third entry":      bad(func(d *winacl.Descriptor) { d.DACL.ACEs = append(d.DACL.ACEs, users) }),
		"Users instead":      bad(func(d *winacl.Descriptor) { d.DACL.ACEs[1] = users }),
		"SYSTEM twice":       bad(func(d *winacl.Descriptor) { d.DACL.ACEs[1] = d.DACL.ACEs[0] }),
		"SYSTEM less rights": bad(func(d *winacl.Descriptor) { d.DACL.ACEs[0] = sysRX }),
		// Inherit-only: the entry gives SYSTEM nothing on the directory.
		"SYSTEM inherit-only": bad(func(d *winacl.Descriptor) { d.DACL.ACEs[0] = sysIO }),
		"SYSTEM files only":   bad(func(d *winacl.Descriptor) { d.DACL.ACEs[0] = sysOI }),
		"owned by Users":      bad(func(d *winacl.Descriptor) { d.Owner = winacl.SIDUsers }),
		"NULL DACL":           bad(func(d *winacl.Descriptor) { d.DACL = nil }),
	} {
		if isProtected(d) {
			t.Errorf("%s: %s counts as protected", name, d)
		}
	}
	if d := bad(func(d *winacl.Descriptor) {
		d.Owner = winacl.SIDLocalSystem
		d.DACL.ACEs[0], d.DACL.ACEs[1] = d.DACL.ACEs[1], d.DACL.ACEs[0]
	}); !isProtected(d) {
		t.Errorf("owner SYSTEM, entries swapped: %s does not count as protected", d)
	}
}

// TestOpenRefusesFilesOfOtherOwners is issue 23 item 7's test: an entry or
// note planted in the state directory by another user is never loaded (so
// no sweep acts on it), it is listed by Refused, and the plugin's own files
// (owned by SYSTEM, Administrators or the plugin's token owner) are loaded.
// Before the owner check the planted entry was loaded like any other.
func TestOpenRefusesFilesOfOtherOwners(t *testing.T) {
	const target = "iscsi:iqn.2026-01.io.example:t"
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"vol-admins", "vol-system", "vol-token", "vol-planted", "vol-users"} {
		if err := j.Put(ctx, Entry{VolumeID: id, StagingPath: "/k/" + id, Backend: "iscsi", ResourceKey: target}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"smb-mapping:\\\\srv\\share", "smb-mapping:\\\\evil\\share"} {
		if err := j.PutNote(ctx, k, "u"); err != nil {
			t.Fatal(err)
		}
	}
	const user, service = "S-1-5-21-1-2-3-1001", "S-1-5-80-1-2-3-4-5"
	const notOurs = "owned by neither SYSTEM, Administrators nor the plugin"
	sec := &fakeSecurity{token: service, owners: map[string]string{
		fileName("vol-system"):  winacl.SIDLocalSystem,
		fileName("vol-token"):   service,
		fileName("vol-planted"): user,
		// A built-in group other than Administrators: any local user is in
		// Users.
		fileName("vol-users"):                   winacl.SIDUsers,
		fileName("smb-mapping:\\\\evil\\share"): user,
	}}
	sec.dirSD, _ = stateDirDescriptor().Bytes()
	j, err = open(dir, sec)
	if err != nil {
		t.Fatal(err)
	}
	if got := volumeIDs(j.List(ctx)); !reflect.DeepEqual(got, []string{"vol-admins", "vol-system", "vol-token"}) {
		t.Fatalf("entries loaded: %v", got)
	}
	notes, _ := j.Notes(ctx, "smb-mapping:")
	if _, ok := notes["smb-mapping:\\\\evil\\share"]; ok || len(notes) != 1 {
		t.Fatalf("notes loaded: %v", notes)
	}
	want := []Refused{
		{Path: filepath.Join(dir, notesDir, fileName("smb-mapping:\\\\evil\\share")), Owner: user, Reason: notOurs},
		{Path: filepath.Join(dir, fileName("vol-planted")), Owner: user, Reason: notOurs, VolumeID: "vol-planted", ResourceKey: target},
		{Path: filepath.Join(dir, fileName("vol-users")), Owner: winacl.SIDUsers, Reason: notOurs, VolumeID: "vol-users", ResourceKey: target},
	}
	slices.SortFunc(want[1:], func(a, b Refused) int { return strings.Compare(a.Path, b.Path) })
	if got := j.Refused(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Refused = %+v, want %+v", got, want)
	}
	// The read-only view diagnose opens refuses them as well.
	ro, err := load(dir, true, sec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ro.Get(ctx, "vol-planted"); ok || len(ro.Refused()) != 3 {
		t.Fatalf("read-only view: planted entry loaded, or refused %+v", ro.Refused())
	}
	// With the system's own view (the plugin wrote every file; off Windows
	// there is no owner to check), everything loads.
	plain, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Get(ctx, "vol-planted"); !ok || len(plain.Refused()) != 0 {
		t.Fatal("without owners a file was refused")
	}
}

// TestCredentialKeyOfAnotherOwnerIsRefused: a key file someone else
// planted is never used (its owner could check recorded MACs against
// guessed passwords); one made by the plugin or an administrator is.
func TestCredentialKeyOfAnotherOwnerIsRefused(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.CredentialKey(); err != nil {
		t.Fatal(err)
	}
	const user, service = "S-1-5-21-1-2-3-1001", "S-1-5-80-1-2-3-4-5"
	for owner, ok := range map[string]bool{user: false, service: true, winacl.SIDAdministrators: true} {
		sec := &fakeSecurity{token: service, owners: map[string]string{keyFile: owner}}
		sec.dirSD, _ = stateDirDescriptor().Bytes()
		j, err := open(dir, sec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = j.CredentialKey()
		if got := err == nil; got != ok {
			t.Fatalf("key owned by %s: err = %v, want used: %v", owner, err, ok)
		}
		if !ok && !strings.Contains(err.Error(), user) {
			t.Fatalf("the refusal does not name the owner: %v", err)
		}
	}
}

// TestOpenRefusesFilesItCannotTrust is the second half of the owner check:
// a file whose DACL denies the plugin its owner made Open fail (the plugin
// could not start), a hard link to a SYSTEM-owned file elsewhere passed
// the check, and a file without an owner failed Open too. Each is refused
// now, from its security alone, and Open loads the rest; only a file the
// plugin wrote and cannot read still fails it.
func TestOpenRefusesFilesItCannotTrust(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"vol-ok", "vol-denied", "vol-linked", "vol-ownerless", "vol-planted-unreadable"} {
		if err := j.Put(ctx, Entry{VolumeID: id, StagingPath: "/k/" + id, Backend: "disk"}); err != nil {
			t.Fatal(err)
		}
	}
	sec := &fakeSecurity{
		owners: map[string]string{fileName("vol-ownerless"): "", fileName("vol-planted-unreadable"): "S-1-5-21-1-2-3-1001",
			fileName("vol-linked"): winacl.SIDLocalSystem},
		links:  map[string]uint32{fileName("vol-linked"): 2},
		denied: map[string]bool{fileName("vol-denied"): true},
		noData: map[string]bool{fileName("vol-planted-unreadable"): true},
	}
	sec.dirSD, _ = stateDirDescriptor().Bytes()
	j, err = open(dir, sec)
	if err != nil {
		t.Fatalf("Open failed over files it should refuse: %v", err)
	}
	if got := volumeIDs(j.List(ctx)); !reflect.DeepEqual(got, []string{"vol-ok"}) {
		t.Fatalf("entries loaded: %v", got)
	}
	reasons := map[string]Refused{}
	for _, r := range j.Refused() {
		reasons[filepath.Base(r.Path)] = r
	}
	for id, want := range map[string]Refused{
		"vol-denied":             {Reason: "its DACL denies the plugin even its owner"},
		"vol-linked":             {Owner: winacl.SIDLocalSystem, Reason: "it has 2 names (a hard link to a file elsewhere)"},
		"vol-ownerless":          {Reason: "it has no owner"},
		"vol-planted-unreadable": {Owner: "S-1-5-21-1-2-3-1001", Reason: "owned by neither SYSTEM, Administrators nor the plugin"},
	} {
		want.Path = filepath.Join(dir, fileName(id))
		if got := reasons[fileName(id)]; got != want {
			t.Errorf("%s: refused as %+v, want %+v", id, got, want)
		}
	}
	if len(reasons) != 4 {
		t.Errorf("refused %+v, want 4 files", j.Refused())
	}
	// A file the plugin wrote that it cannot read is not refused: it
	// fails Open, since dropping it could hide a user of a resource.
	sec = &fakeSecurity{noData: map[string]bool{fileName("vol-ok"): true}}
	sec.dirSD, _ = stateDirDescriptor().Bytes()
	if _, err := open(dir, sec); err == nil {
		t.Fatalf("Open with an unreadable entry of the plugin's = %v, want a failure", err)
	}
}

// TestRefusedEntriesKeepTheirResource: an entry refused for its owner is
// never acted on, but the resource it names counts as used by it. Before,
// ByResource did not see it, so a legitimate entry refused after the
// DaemonSet's account changed let the unstage of another volume of the
// same target log out under it; now a planted file can only keep a
// resource. Once the plugin replaces the file (a stage of that volume ID)
// or removes it, the claim goes.
func TestRefusedEntriesKeepTheirResource(t *testing.T) {
	const target, share = "iscsi:iqn.2026-01.io.example:t", `smb:\\srv\data`
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{
		{VolumeID: "vol-ours", StagingPath: "/k/ours", Backend: "iscsi", ResourceKey: target},
		{VolumeID: "vol-old-account", StagingPath: "/k/old", Backend: "iscsi", ResourceKey: target, Staged: true},
		{VolumeID: "vol-unreadable", StagingPath: "/k/u", Backend: "smb", ResourceKey: share},
		{VolumeID: "vol-no-resource", StagingPath: "/k/n", Backend: "disk"},
	} {
		if err := j.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	const former = "S-1-5-21-1-2-3-1001"
	if err := os.WriteFile(filepath.Join(dir, fileName("vol-garbage")), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	sec := &fakeSecurity{owners: map[string]string{
		fileName("vol-old-account"): former, fileName("vol-unreadable"): former,
		fileName("vol-no-resource"): former, fileName("vol-garbage"): former,
	}, noData: map[string]bool{fileName("vol-unreadable"): true}}
	sec.dirSD, _ = stateDirDescriptor().Bytes()
	if j, err = open(dir, sec); err != nil {
		t.Fatal(err)
	}
	es, err := j.ByResource(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].VolumeID != "vol-old-account" || !es[0].Refused || es[0].Attrs != nil ||
		es[1].VolumeID != "vol-ours" || es[1].Refused {
		t.Fatalf("ByResource(%s) = %+v, want vol-old-account (refused) and vol-ours", target, es)
	}
	// Never acted on otherwise: not listed, not found, not the backend's.
	if _, ok := j.Get(ctx, "vol-old-account"); ok || !reflect.DeepEqual(volumeIDs(j.List(ctx)), []string{"vol-ours"}) {
		t.Fatalf("a refused entry is loaded: %v", volumeIDs(j.List(ctx)))
	}
	if bs, _ := j.ByBackend(ctx, "iscsi"); len(bs) != 1 {
		t.Fatalf("ByBackend(iscsi) = %v", volumeIDs(bs))
	}
	// A file whose contents cannot be read or do not parse claims nothing.
	if es, _ := j.ByResource(ctx, share); len(es) != 0 {
		t.Fatalf("ByResource(%s) = %+v", share, es)
	}
	if len(j.Refused()) != 4 {
		t.Fatalf("Refused = %+v", j.Refused())
	}
	// The plugin stages vol-old-account again: its file is the plugin's now.
	if err := j.Put(ctx, Entry{VolumeID: "vol-old-account", StagingPath: "/k/old", Backend: "iscsi", ResourceKey: target}); err != nil {
		t.Fatal(err)
	}
	if es, _ := j.ByResource(ctx, target); len(es) != 2 || es[0].Refused || len(j.Refused()) != 3 {
		t.Fatalf("after the plugin rewrote the file: %+v, refused %+v", es, j.Refused())
	}
	if err := j.Delete(ctx, "vol-no-resource"); err != nil {
		t.Fatal(err)
	}
	if len(j.Refused()) != 2 {
		t.Fatalf("after the plugin removed a refused file: refused %+v", j.Refused())
	}
}

// TestOpenWaitsForAHeldFile: a journal file another process holds open
// without sharing it (a scanner that opened it just after the write) fails
// the read of its contents for a while; Open reads it again as the writes
// retry theirs (durable.RetryRead), instead of failing the plugin's start.
// The retry is the test's: it passes errHeld, which off Windows nothing
// does.
func TestOpenWaitsForAHeldFile(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v", StagingPath: "/k/v", Backend: "disk"}); err != nil {
		t.Fatal(err)
	}
	saved := retryRead
	t.Cleanup(func() { retryRead = saved })
	tries := 0
	retryRead = func(read func() error) error {
		for {
			tries++
			if err := read(); !errors.Is(err, errHeld) || tries == 10 {
				return err
			}
		}
	}
	sec := &fakeSecurity{held: map[string]int{fileName("v"): 2}}
	sec.dirSD, _ = stateDirDescriptor().Bytes()
	j, err = open(dir, sec)
	if err != nil {
		t.Fatalf("Open with a journal file held for two reads: %v", err)
	}
	if _, ok := j.Get(ctx, "v"); !ok || tries != 3 {
		t.Fatalf("entry loaded %t after %d tries; want it loaded on the third", ok, tries)
	}
}

// TestProtectDir: ProtectDir protects a directory it makes whoever its
// token makes the owner, and one that existed when SYSTEM or
// Administrators own it; it refuses one another account owns, or a link
// to elsewhere, and then changes nothing.
func TestProtectDir(t *testing.T) {
	user := "S-1-5-21-1-2-3-1001"
	for _, tc := range []struct {
		name    string
		exists  bool
		owner   string
		refused error
	}{
		{name: "made now", owner: user},
		{name: "existed, SYSTEM's", exists: true, owner: winacl.SIDLocalSystem},
		{name: "existed, Administrators'", exists: true, owner: winacl.SIDAdministrators},
		{name: "existed, a user's", exists: true, owner: user, refused: ErrUntrustedOwner},
		{name: "existed, no owner", exists: true, owner: "", refused: ErrUntrustedOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ProgramData", "selftest")
			if tc.exists {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			sec := &fakeSecurity{dirSD: kubeletInherited(t, tc.owner)}
			err := protectOwnDir(sec, dir)
			if !errors.Is(err, tc.refused) || (tc.refused != nil) == (err == nil) {
				t.Fatalf("ProtectDir = %v, want %v", err, tc.refused)
			}
			if tc.refused != nil {
				if owner := tc.owner; owner != "" && !strings.Contains(err.Error(), owner) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("error %q names neither the directory nor its owner", err)
				}
				if len(sec.protects) != 0 {
					t.Fatalf("a refused directory was protected")
				}
				return
			}
			if d, err := winacl.ParseDescriptor(sec.dirSD); err != nil || !isProtected(d) || len(sec.protects) != 1 {
				t.Fatalf("after %d protect calls the directory is %v (%v)", len(sec.protects), d, err)
			}
		})
	}
	t.Run("link", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "selftest")
		if err := os.Symlink(t.TempDir(), dir); err != nil {
			t.Skip(err)
		}
		sec := &fakeSecurity{dirSD: kubeletInherited(t, winacl.SIDAdministrators)}
		if err := protectOwnDir(sec, dir); err == nil || !strings.Contains(err.Error(), "not a directory") || len(sec.protects) != 0 {
			t.Fatalf("ProtectDir of a link = %v after %d protect calls", err, len(sec.protects))
		}
	})
}

// TestOpenRefusesALinkedStateDirectory: a state directory that is a link
// (a junction on Windows) is refused before anything is protected, read
// or deleted through it.
func TestOpenRefusesALinkedStateDirectory(t *testing.T) {
	target := t.TempDir()
	leftover := filepath.Join(target, "vol-1.json.tmp")
	if err := os.WriteFile(leftover, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(target, dir); err != nil {
		t.Skip(err)
	}
	for _, given := range []string{dir, dir + string(filepath.Separator)} {
		sec := &fakeSecurity{dirSD: kubeletInherited(t, winacl.SIDAdministrators)}
		_, err := open(given, sec)
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("open(%q) of a linked state directory = %v, want a refusal naming %s", given, err, dir)
		}
		if len(sec.protects) != 0 {
			t.Errorf("open(%q): the link's target was protected", given)
		}
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Errorf("a leftover in the link's target was touched: %v", err)
	}
}
