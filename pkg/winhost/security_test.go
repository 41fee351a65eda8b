package winhost_test

import (
	"context"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// dacl is DACL_SECURITY_INFORMATION, the only part of a root's descriptor
// the plugin reads and writes.
const dacl = uint32(4)

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The entries of a volume root's DACL on Windows Server 2022 after
// Format-Volume, one per line of the icacls dump in
// kubernetes/kubernetes#131341 (and kubernetes-csi/csi-proxy#382), written
// out byte by byte: ACE_HEADER (type, flags, size), the mask, the SID.
const (
	aceAdminsFull   = "00 03 1800 ff011f00 01 02 000000000005 20000000 20020000" // BUILTIN\Administrators:(OI)(CI)(F)
	aceSystemFull   = "00 03 1400 ff011f00 01 01 000000000005 12000000"          // NT AUTHORITY\SYSTEM:(OI)(CI)(F)
	aceCreatorOwner = "00 0b 1400 ff011f00 01 01 000000000003 00000000"          // CREATOR OWNER:(OI)(CI)(IO)(F)
	aceUsersRX      = "00 03 1800 a9001200 01 02 000000000005 20000000 21020000" // BUILTIN\Users:(OI)(CI)(RX)
	aceUsersAD      = "00 02 1800 04000000 01 02 000000000005 20000000 21020000" // BUILTIN\Users:(CI)(AD)
	aceUsersWD      = "00 0a 1800 02000000 01 02 000000000005 20000000 21020000" // BUILTIN\Users:(CI)(IO)(WD)
	aceEveryoneRX   = "00 00 1400 a9001200 01 01 000000000001 00000000"          // Everyone:(RX)
	serverEntries   = aceAdminsFull + aceSystemFull + aceCreatorOwner + aceUsersRX + aceUsersAD + aceUsersWD + aceEveryoneRX
	// The grant of ContainerUser:modify: an allow entry, OI|CI, mask
	// 0x1301bf, SID S-1-5-93-2-2.
	aceContainerUserModify = "00 03 1c00 bf011300 01 03 000000000005 5d000000 02000000 02000000"
)

// serverRoot is the root's descriptor as GetSecurityInfo returns it for
// DACL_SECURITY_INFORMATION: a self-relative descriptor (control
// SE_SELF_RELATIVE | SE_DACL_AUTO_INHERITED | SE_DACL_PRESENT) with the
// DACL at offset 20; the ACL header says revision 2, 164 bytes, 7 entries.
// Assumed: the control bits (the dump does not show them).
const serverRoot = "01 00 0484 00000000 00000000 00000000 14000000" + "02 00 a400 0700 0000" + serverEntries

// serverRootGrantedACL is the DACL the plugin sets to grant
// ContainerUser:modify on serverRoot: the ACL header now says 192 bytes and
// 8 entries, the seven entries unchanged and in order, then the new one
// (every entry is explicit, so it goes at the end).
const serverRootGrantedACL = "02 00 c000 0800 0000" + serverEntries + aceContainerUserModify

// serverRootGranted is the root's descriptor once it has the grant.
const serverRootGranted = "01 00 0484 00000000 00000000 00000000 14000000" + serverRootGrantedACL

var containerUserModify = host.ACE{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: winacl.Modify, SID: "S-1-5-93-2-2"}

func TestAddRootAllowEntriesServerRoot(t *testing.T) {
	e := scripted.New(t)
	e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRoot)})
	e.ExpectWin32("SetSecurityInfo", []any{guidA, dacl, hexBytes(t, serverRootGrantedACL)}, scripted.Reply{})
	added, err := winhost.NewSecurity(e).AddRootAllowEntries(context.Background(), guidA, []host.ACE{containerUserModify})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(added, []host.ACE{containerUserModify}) {
		t.Fatalf("added %+v", added)
	}
}

// TestAddRootAllowEntriesPresent: a restage reads the descriptor and writes
// nothing.
func TestAddRootAllowEntriesPresent(t *testing.T) {
	for name, want := range map[string]host.ACE{
		"the same entry":                       containerUserModify,
		"fewer rights":                         {Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: winacl.ReadExecute, SID: "S-1-5-93-2-2"},
		"SID in lower case with leading zeros": {Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: winacl.Modify, SID: "s-1-5-093-2-2"},
	} {
		t.Run(name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRootGranted)})
			added, err := winhost.NewSecurity(e).AddRootAllowEntries(context.Background(), guidA, []host.ACE{want})
			if err != nil || added != nil {
				t.Fatalf("AddRootAllowEntries = %v, %v; want nothing added", added, err)
			}
			if n := len(e.Calls()); n != 1 {
				t.Fatalf("%d calls, want the one open and read", n)
			}
		})
	}
}

// descriptor builds a root's descriptor from entries for the cases below.
func descriptor(t *testing.T, control uint16, revision uint8, entries ...winacl.ACE) []byte {
	t.Helper()
	d := winacl.Descriptor{Control: control, DACL: &winacl.ACL{Revision: revision, ACEs: entries}}
	b, err := d.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// aclBytes builds the binary ACL of entries.
func aclBytes(t *testing.T, revision uint8, entries ...winacl.ACE) []byte {
	t.Helper()
	b, err := winacl.ACL{Revision: revision, ACEs: entries}.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ace(t *testing.T, typ uint8, flags uint8, mask uint32, sid string) winacl.ACE {
	t.Helper()
	a, err := winacl.AllowACE(sid, mask, flags)
	if err != nil {
		t.Fatal(err)
	}
	a.Type, a.Raw[0] = typ, typ
	return a
}

// TestAddRootAllowEntriesWhere checks what counts as present and where a
// missing entry goes, with the exact descriptor written.
func TestAddRootAllowEntriesWhere(t *testing.T) {
	const cu = "S-1-5-93-2-2"
	allow, deny := host.ACEAccessAllowed, host.ACEAccessDenied
	oici := host.ACEInheritedBelow
	grant := ace(t, allow, oici, winacl.Modify, cu)
	admins := ace(t, allow, oici, winacl.FullControl, winacl.SIDAdministrators)
	inheritedUsers := ace(t, allow, oici|host.ACEInherited, winacl.ReadExecute, winacl.SIDUsers)
	denyCU := ace(t, deny, oici, 0x40, cu)
	// An object entry (ACCESS_ALLOWED_OBJECT_ACE_TYPE, 5) the plugin does
	// not interpret: it must come back byte for byte.
	object := winacl.ACE{Type: 5, Flags: 0, Raw: []byte{5, 0, 12, 0, 0xa9, 0, 0x12, 0, 0, 0, 0, 0}}
	for _, c := range []struct {
		name     string
		control  uint16
		revision uint8
		have     []winacl.ACE
		want     []winacl.ACE // the DACL written; nil: nothing written
	}{
		{name: "empty DACL", revision: 2, have: nil, want: []winacl.ACE{grant}},
		{name: "before inherited entries", revision: 2, have: []winacl.ACE{admins, inheritedUsers}, want: []winacl.ACE{admins, grant, inheritedUsers}},
		{name: "after an explicit deny out of order", revision: 2, have: []winacl.ACE{admins, denyCU, inheritedUsers}, want: []winacl.ACE{admins, denyCU, grant, inheritedUsers}},
		{name: "only inherited entries", revision: 2, have: []winacl.ACE{inheritedUsers}, want: []winacl.ACE{grant, inheritedUsers}},
		{name: "an uninterpreted entry kept", revision: 4, have: []winacl.ACE{object, admins}, want: []winacl.ACE{object, admins, grant}},
		{name: "protected and auto-inherited kept", control: winacl.ControlDACLProtected | winacl.ControlDACLAutoInherited | winacl.ControlDACLDefaulted, revision: 2,
			have: []winacl.ACE{admins}, want: []winacl.ACE{admins, grant}},
		{name: "more rights present", revision: 2, have: []winacl.ACE{ace(t, allow, oici, winacl.FullControl, cu)}},
		{name: "this folder only is not enough", revision: 2, have: []winacl.ACE{ace(t, allow, 0, winacl.Modify, cu)},
			want: []winacl.ACE{ace(t, allow, 0, winacl.Modify, cu), grant}},
		{name: "containers only is not enough", revision: 2, have: []winacl.ACE{ace(t, allow, host.ACEContainerInherit, winacl.Modify, cu)},
			want: []winacl.ACE{ace(t, allow, host.ACEContainerInherit, winacl.Modify, cu), grant}},
		{name: "no-propagate is not enough", revision: 2, have: []winacl.ACE{ace(t, allow, oici|host.ACENoPropagate, winacl.Modify, cu)},
			want: []winacl.ACE{ace(t, allow, oici|host.ACENoPropagate, winacl.Modify, cu), grant}},
		{name: "inherit-only is not enough", revision: 2, have: []winacl.ACE{ace(t, allow, oici|host.ACEInheritOnly, winacl.Modify, cu)},
			want: []winacl.ACE{ace(t, allow, oici|host.ACEInheritOnly, winacl.Modify, cu), grant}},
		{name: "an inherited grant is not enough", revision: 2, have: []winacl.ACE{ace(t, allow, oici|host.ACEInherited, winacl.FullControl, cu)},
			want: []winacl.ACE{grant, ace(t, allow, oici|host.ACEInherited, winacl.FullControl, cu)}},
		{name: "fewer rights are not enough", revision: 2, have: []winacl.ACE{ace(t, allow, oici, winacl.ReadExecute, cu)},
			want: []winacl.ACE{ace(t, allow, oici, winacl.ReadExecute, cu), grant}},
		{name: "a deny entry is no grant", revision: 2, have: []winacl.ACE{ace(t, deny, oici, winacl.Modify, cu)},
			want: []winacl.ACE{ace(t, deny, oici, winacl.Modify, cu), grant}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: descriptor(t, c.control, c.revision, c.have...)})
			if c.want != nil {
				// The DACL alone, and protected again when it was.
				info := dacl
				if c.control&winacl.ControlDACLProtected != 0 {
					info |= winacl.ProtectedDACLSecurityInformation
				}
				e.ExpectWin32("SetSecurityInfo", []any{guidA, info, aclBytes(t, c.revision, c.want...)}, scripted.Reply{})
			}
			added, err := winhost.NewSecurity(e).AddRootAllowEntries(context.Background(), guidA, []host.ACE{containerUserModify})
			if err != nil {
				t.Fatal(err)
			}
			if (len(added) == 1) != (c.want != nil) {
				t.Fatalf("added %+v", added)
			}
		})
	}
}

func TestAddRootAllowEntriesSeveral(t *testing.T) {
	users := host.ACE{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: winacl.ReadExecute, SID: winacl.SIDUsers}
	e := scripted.New(t)
	e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRoot)})
	// Users:(OI)(CI)(RX) is there already; ContainerUser is added once
	// although asked for twice.
	e.ExpectWin32("SetSecurityInfo", []any{guidA, dacl, hexBytes(t, serverRootGrantedACL)}, scripted.Reply{})
	added, err := winhost.NewSecurity(e).AddRootAllowEntries(context.Background(), guidA, []host.ACE{users, containerUserModify, containerUserModify})
	if err != nil || !reflect.DeepEqual(added, []host.ACE{containerUserModify}) {
		t.Fatalf("AddRootAllowEntries = %+v, %v", added, err)
	}
}

func TestAddRootAllowEntriesRefused(t *testing.T) {
	read := func(e *scripted.Executor, b []byte, err error) {
		e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: b, Err: err})
	}
	for _, c := range []struct {
		name    string
		path    string
		entries []host.ACE
		script  func(t *testing.T, e *scripted.Executor)
		want    error
	}{
		{name: "not a volume GUID path", path: `C:\data`, want: host.ErrInvalid},
		{name: "a deny entry", entries: []host.ACE{{Type: host.ACEAccessDenied, Flags: 3, Mask: 1, SID: "S-1-1-0"}}, want: host.ErrInvalid},
		{name: "an inherited entry", entries: []host.ACE{{Type: host.ACEAccessAllowed, Flags: host.ACEInherited, Mask: 1, SID: "S-1-1-0"}}, want: host.ErrInvalid},
		{name: "a SID alias", entries: []host.ACE{{Type: host.ACEAccessAllowed, Flags: 3, Mask: 1, SID: "BA"}}, want: host.ErrInvalid},
		{name: "NULL DACL", want: host.ErrConflict, script: func(t *testing.T, e *scripted.Executor) {
			read(e, hexBytes(t, "01 00 0480 00000000 00000000 00000000 00000000"), nil)
		}},
		{name: "no DACL", want: host.ErrConflict, script: func(t *testing.T, e *scripted.Executor) {
			read(e, hexBytes(t, "01 00 0080 00000000 00000000 00000000 00000000"), nil)
		}},
		{name: "volume gone", want: host.ErrNotFound, script: func(t *testing.T, e *scripted.Executor) {
			read(e, nil, w32("CreateFile", winhost.ErrorFileNotFound))
		}},
		{name: "read denied", want: host.ErrAccessDenied, script: func(t *testing.T, e *scripted.Executor) {
			read(e, nil, w32("CreateFile", winhost.ErrorAccessDenied))
		}},
		{name: "write-protected", want: host.ErrReadOnly, script: func(t *testing.T, e *scripted.Executor) {
			read(e, hexBytes(t, serverRoot), nil)
			e.ExpectWin32("SetSecurityInfo", []any{guidA, dacl, hexBytes(t, serverRootGrantedACL)},
				scripted.Reply{Err: w32("SetSecurityInfo", winhost.ErrorWriteProtect)})
		}},
		{name: "malformed descriptor", script: func(t *testing.T, e *scripted.Executor) {
			read(e, hexBytes(t, "01 00 0484 00000000 00000000 00000000 14000000 02 00 a400 0700 0000"), nil)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := scripted.New(t)
			if c.script != nil {
				c.script(t, e)
			}
			path, entries := c.path, c.entries
			if path == "" {
				path = guidA
			}
			if entries == nil {
				entries = []host.ACE{containerUserModify}
			}
			added, err := winhost.NewSecurity(e).AddRootAllowEntries(context.Background(), path, entries)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || added != nil {
				t.Fatalf("AddRootAllowEntries = %v, %v; want %v", added, err, c.want)
			}
			for _, call := range e.Calls() {
				if call.Kind == "SetSecurityInfo" && !errors.Is(c.want, host.ErrReadOnly) {
					t.Fatal("a descriptor was written")
				}
			}
		})
	}
}

func TestRootDACL(t *testing.T) {
	e := scripted.New(t)
	e.ExpectWin32("FileSecurity", []any{guidA, dacl}, scripted.Reply{Bytes: hexBytes(t, serverRootGranted)})
	d, err := winhost.NewSecurity(e).RootDACL(context.Background(), strings.ToUpper(guidA))
	if err != nil {
		t.Fatal(err)
	}
	if d.Null || d.Protected || len(d.Entries) != 8 || d.Entries[7] != containerUserModify ||
		d.Entries[2] != (host.ACE{Type: 0, Flags: 0x0b, Mask: winacl.FullControl, SID: winacl.SIDCreatorOwner}) {
		t.Fatalf("RootDACL = %+v", d)
	}
	e.ExpectWin32("FileSecurity", []any{guidB, dacl}, scripted.Reply{Err: w32("CreateFile", winhost.ErrorPathNotFound)})
	if _, err := winhost.NewSecurity(e).RootDACL(context.Background(), guidB); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("RootDACL of a missing volume = %v", err)
	}
}

func TestLookupAccountName(t *testing.T) {
	sid := func(s string) []byte {
		b, err := winacl.ParseSID(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// SID_NAME_USE: 1 user, 2 group, 3 domain, 4 alias, 5 well-known
	// group, 9 computer (winnt.h).
	for _, c := range []struct {
		name  string
		reply scripted.Reply
		want  string
		err   error
	}{
		{name: `CONTOSO\app`, reply: scripted.Reply{Bytes: sid("S-1-5-21-1-2-3-1107"), Uint32: 1}, want: "S-1-5-21-1-2-3-1107"},
		{name: `CONTOSO\Storage Users`, reply: scripted.Reply{Bytes: sid("S-1-5-21-1-2-3-1108"), Uint32: 2}, want: "S-1-5-21-1-2-3-1108"},
		{name: "Backup Operators", reply: scripted.Reply{Bytes: sid("S-1-5-32-551"), Uint32: 4}, want: "S-1-5-32-551"},
		{name: "NETWORK SERVICE", reply: scripted.Reply{Bytes: sid("S-1-5-20"), Uint32: 5}, want: "S-1-5-20"},
		{name: "CONTOSO", reply: scripted.Reply{Bytes: sid("S-1-5-21-1-2-3"), Uint32: 3}, err: host.ErrInvalid},
		{name: "NODE1$", reply: scripted.Reply{Bytes: sid("S-1-5-21-1-2-3-1000"), Uint32: 9}, err: host.ErrInvalid},
		{name: "nobody", reply: scripted.Reply{Err: w32("LookupAccountName", winhost.ErrorNoneMapped)}, err: host.ErrNotFound},
		{name: `OTHER\x`, reply: scripted.Reply{Err: w32("LookupAccountName", winhost.ErrorTrustedRelationshipFailed)}, err: host.ErrUnreachable},
		{name: "broken", reply: scripted.Reply{Bytes: []byte{1, 5}, Uint32: 1}},
	} {
		e := scripted.New(t)
		e.ExpectWin32("LookupAccountName", []any{c.name}, c.reply)
		got, err := winhost.NewSecurity(e).LookupAccountName(context.Background(), c.name)
		switch {
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %s", c.name, got, err, c.want)
		case c.want == "" && (err == nil || c.err != nil && !errors.Is(err, c.err)):
			t.Errorf("%s: %q, %v; want %v", c.name, got, err, c.err)
		}
	}
}

// TestAddRootAllowEntriesDoesNotChangeItsArgument: the caller's entries
// are not rewritten (a SID is canonicalised in a copy).
func TestAddRootAllowEntriesDoesNotChangeItsArgument(t *testing.T) {
	e := scripted.New(t)
	e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRootGranted)})
	in := []host.ACE{{Type: host.ACEAccessAllowed, Flags: 3, Mask: winacl.Modify, SID: "s-1-5-93-2-2"}}
	if _, err := winhost.NewSecurity(e).AddRootAllowEntries(context.Background(), guidA, in); err != nil {
		t.Fatal(err)
	}
	if in[0].SID != "s-1-5-93-2-2" {
		t.Fatalf("argument changed: %+v", in)
	}
}
