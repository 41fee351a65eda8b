package journal

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
	token    string
	protects [][2][]byte // owner and DACL of each protect call
}

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

func (f *fakeSecurity) read(path string) ([]byte, string, error) {
	b, err := os.ReadFile(path)
	owner, ok := f.owners[filepath.Base(path)]
	if !ok {
		owner = winacl.SIDAdministrators
	}
	return b, owner, err
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
	for name, d := range map[string]winacl.Descriptor{
		"not protected":      bad(func(d *winacl.Descriptor) { d.Control = 0 }),
		"owned by a user":    bad(func(d *winacl.Descriptor) { d.Owner = "S-1-5-21-1-2-3-1001" }),
		"no owner":           bad(func(d *winacl.Descriptor) { d.Owner = "" }),
		"a third entry":      bad(func(d *winacl.Descriptor) { d.DACL.ACEs = append(d.DACL.ACEs, users) }),
		"Users instead":      bad(func(d *winacl.Descriptor) { d.DACL.ACEs[1] = users }),
		"SYSTEM twice":       bad(func(d *winacl.Descriptor) { d.DACL.ACEs[1] = d.DACL.ACEs[0] }),
		"SYSTEM less rights": bad(func(d *winacl.Descriptor) { d.DACL.ACEs[0] = sysRX }),
		"NULL DACL":          bad(func(d *winacl.Descriptor) { d.DACL = nil }),
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
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"vol-admins", "vol-system", "vol-token", "vol-planted"} {
		if err := j.Put(ctx, Entry{VolumeID: id, StagingPath: "/k/" + id, Backend: "iscsi", ResourceKey: "iscsi:iqn.2026-01.io.example:t"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"smb-mapping:\\\\srv\\share", "smb-mapping:\\\\evil\\share"} {
		if err := j.PutNote(ctx, k, "u"); err != nil {
			t.Fatal(err)
		}
	}
	const user, service = "S-1-5-21-1-2-3-1001", "S-1-5-80-1-2-3-4-5"
	sec := &fakeSecurity{token: service, owners: map[string]string{
		fileName("vol-system"):                  winacl.SIDLocalSystem,
		fileName("vol-token"):                   service,
		fileName("vol-planted"):                 user,
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
	if es, _ := j.ByResource(ctx, "iscsi:iqn.2026-01.io.example:t"); len(es) != 3 {
		t.Fatalf("the planted entry counts as a user of the target: %v", volumeIDs(es))
	}
	notes, _ := j.Notes(ctx, "smb-mapping:")
	if _, ok := notes["smb-mapping:\\\\evil\\share"]; ok || len(notes) != 1 {
		t.Fatalf("notes loaded: %v", notes)
	}
	want := []Refused{
		{Path: filepath.Join(dir, notesDir, fileName("smb-mapping:\\\\evil\\share")), Owner: user},
		{Path: filepath.Join(dir, fileName("vol-planted")), Owner: user},
	}
	if got := j.Refused(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Refused = %+v, want %+v", got, want)
	}
	// The read-only view diagnose opens refuses them as well.
	ro, err := load(dir, true, sec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ro.Get(ctx, "vol-planted"); ok || len(ro.Refused()) != 2 {
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
