package contract

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseRootAccess(t *testing.T) {
	cu := RootGrant{Principal: "ContainerUser", SID: "S-1-5-93-2-2", Right: RightModify}
	for _, c := range []struct {
		in   string
		want []RootGrant
	}{
		{"ContainerUser:modify", []RootGrant{cu}},
		{"  containeruser : MODIFY ; ", nil}, // an empty entry after the ';'
		{"containeruser : MODIFY", []RootGrant{cu}},
		{"S-1-5-93-2-2:modify", []RootGrant{{Principal: "S-1-5-93-2-2", SID: "S-1-5-93-2-2", Right: RightModify}}},
		{"s-1-05-93-2-2:read", []RootGrant{{Principal: "S-1-5-93-2-2", SID: "S-1-5-93-2-2", Right: RightRead}}},
		{"Users:read;Authenticated Users:modify;ContainerAdministrator:full", []RootGrant{
			{Principal: "Users", SID: "S-1-5-32-545", Right: RightRead},
			{Principal: "Authenticated Users", SID: "S-1-5-11", Right: RightModify},
			{Principal: "ContainerAdministrator", SID: "S-1-5-93-2-1", Right: RightFull},
		}},
		{`BUILTIN\Users:read;NT AUTHORITY\SYSTEM:full`, []RootGrant{
			{Principal: `BUILTIN\Users`, SID: "S-1-5-32-545", Right: RightRead},
			{Principal: `NT AUTHORITY\SYSTEM`, SID: "S-1-5-18", Right: RightFull},
		}},
		// An account name is resolved by Windows at stage.
		{`CONTOSO\app-writers:modify;app@contoso.com:read`, []RootGrant{
			{Principal: `CONTOSO\app-writers`, Right: RightModify},
			{Principal: "app@contoso.com", Right: RightRead},
		}},
		// The same principal twice with the same right is one entry,
		// whether named or given by SID.
		{"ContainerUser:modify;S-1-5-93-2-2:modify;containeruser:modify", []RootGrant{cu}},
		{"none", nil},
		{"NONE", nil},
	} {
		a, err := ParseRootAccess("volumeRootAccess", c.in)
		if c.want == nil && strings.Contains(c.in, ";") && !strings.EqualFold(strings.TrimSpace(c.in), "none") {
			assertErrKey(t, err, "volumeRootAccess")
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(a.Grants, c.want) {
			t.Errorf("%q: %+v, want %+v", c.in, a.Grants, c.want)
		}
		// The canonical string reads back the same.
		again, err := ParseRootAccess("volumeRootAccess", orNone(a.String()))
		if err != nil || !reflect.DeepEqual(again.Grants, a.Grants) {
			t.Errorf("%q: String %q reads back as %+v, %v", c.in, a.String(), again.Grants, err)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// TestParseRootAccessBad: every bad input is an *Error naming the key and
// the entry.
func TestParseRootAccessBad(t *testing.T) {
	for _, c := range []struct{ in, entry string }{
		{"ContainerUser:write", `"ContainerUser:write"`},
		{"ContainerUser", `"ContainerUser"`},
		{"ContainerUser:", `"ContainerUser:"`},
		{":modify", `":modify"`},
		{"S-1-5-x:modify", `"S-1-5-x:modify"`},
		{"S-1-5:modify", `"S-1-5:modify"`},
		{"S-2-5-18:modify", `"S-2-5-18:modify"`},
		{"Users:read;;Everyone:read", "empty entry"},
		{"Users:read;", "empty entry"},
		{";Users:read", "empty entry"},
		{"Users:read;users:modify", `"users:modify"`},
		{"ContainerUser:read;S-1-5-93-2-2:full", `"S-1-5-93-2-2:full"`},
		{`CONTOSO\a:read;contoso\A:modify`, `"contoso\A:modify"`},
		{"a|b:read", `"a|b:read"`},
		{"a\x01b:read", `"a\x01b:read"`},
		{"a:b:read", `"a:b:read"`},
		{"  ", "is empty"},
	} {
		_, err := ParseRootAccess("VolumeRootAccess", c.in)
		assertErrKey(t, err, "VolumeRootAccess")
		if !strings.Contains(err.Error(), c.entry) {
			t.Errorf("%q: %v does not name %s", c.in, err, c.entry)
		}
	}
}

func TestRootAccessResolved(t *testing.T) {
	a, err := ParseRootAccess("volumeRootAccess", `CONTOSO\app:modify;ContainerUser:modify;BUILTIN\Backup Operators:read`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Resolved(map[string]string{`CONTOSO\app`: "S-1-5-21-1-2-3-1107", `BUILTIN\Backup Operators`: "S-1-5-32-551"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"S-1-5-21-1-2-3-1107", "S-1-5-93-2-2", "S-1-5-32-551"}
	for i, g := range r.Grants {
		if g.SID != want[i] || g.ACE().SID != want[i] || g.ACE().Flags != 3 {
			t.Errorf("grant %d: %+v", i, g)
		}
	}
	// A name that resolves to the SID of another entry with another right.
	b, _ := ParseRootAccess("volumeRootAccess", `app:full;S-1-5-21-1-2-3-1107:modify`)
	if _, err := b.Resolved(map[string]string{"app": "S-1-5-21-1-2-3-1107"}); err == nil || !strings.Contains(err.Error(), `"app:full"`) {
		t.Errorf("two rights for one SID: %v", err)
	}
	var ce *Error
	if _, err := b.Resolved(nil); !errors.As(err, &ce) {
		t.Errorf("unresolved name: %v", err)
	}
	// The same right twice is kept once.
	c, _ := ParseRootAccess("volumeRootAccess", `app:modify;S-1-5-21-1-2-3-1107:modify`)
	if r, err := c.Resolved(map[string]string{"app": "S-1-5-21-1-2-3-1107"}); err != nil || len(r.Grants) != 1 {
		t.Errorf("same right twice: %+v, %v", r, err)
	}
}

func TestParseVolumeRootAccess(t *testing.T) {
	cu := RootAccess{Key: "volumeRootAccess", Grants: []RootGrant{{Principal: "ContainerUser", SID: "S-1-5-93-2-2", Right: RightModify}}}
	node := Options{DefaultRootAccess: "Authenticated Users:modify"}
	runParseCases(t, []parseCase{
		{
			name:  "disk volume",
			req:   Request{VolumeContext: m("diskSerial", "s", "volumeRootAccess", "ContainerUser:modify")},
			check: func(t *testing.T, v Volume) { eqAccess(t, v.RootAccess, cu) },
		},
		{
			name: "iscsi volume",
			req: Request{VolumeContext: m("targetPortal", "192.0.2.1", "iqn", "iqn.2026-01.io.example:t", "lun", "1",
				"volumeRootAccess", "ContainerUser:modify")},
			check: func(t *testing.T, v Volume) { eqAccess(t, v.RootAccess, cu) },
		},
		{
			name:    "smb volume",
			req:     Request{VolumeContext: m("source", `\\s\share`, "volumeRootAccess", "ContainerUser:modify")},
			wantKey: "volumeRootAccess",
		},
		{
			name:    "bad entry",
			req:     Request{VolumeContext: m("diskSerial", "s", "volumeRootAccess", "ContainerUser:write")},
			wantKey: "volumeRootAccess",
		},
		{
			name: "node default",
			req:  Request{VolumeContext: m("diskSerial", "s")},
			opts: node,
			check: func(t *testing.T, v Volume) {
				eqAccess(t, v.RootAccess, RootAccess{Key: "--volume-root-access", Grants: []RootGrant{{Principal: "Authenticated Users", SID: "S-1-5-11", Right: RightModify}}})
			},
		},
		{
			name:  "the volume's own wins over the node default",
			req:   Request{VolumeContext: m("diskSerial", "s", "volumeRootAccess", "ContainerUser:modify")},
			opts:  node,
			check: func(t *testing.T, v Volume) { eqAccess(t, v.RootAccess, cu) },
		},
		{
			name:  "none overrides the node default",
			req:   Request{VolumeContext: m("diskSerial", "s", "volumeRootAccess", "none")},
			opts:  node,
			check: func(t *testing.T, v Volume) { eqAccess(t, v.RootAccess, RootAccess{Key: "volumeRootAccess"}) },
		},
		{
			name:  "the node default does not apply to smb volumes",
			req:   Request{VolumeContext: m("source", `\\s\share`), Secrets: m("username", "u", "password", "p")},
			opts:  node,
			check: func(t *testing.T, v Volume) { eqAccess(t, v.RootAccess, RootAccess{}) },
		},
	})
	var ce *Error
	err := Options{DefaultRootAccess: "Users:rw"}.Validate()
	if !errors.As(err, &ce) || ce.Key != "--volume-root-access" {
		t.Fatalf("Validate of a bad default = %v", err)
	}
}

func eqAccess(t *testing.T, got, want RootAccess) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RootAccess = %+v, want %+v", got, want)
	}
}

func TestSMBRootAccessMessage(t *testing.T) {
	_, err := Parse(Request{VolumeID: "v", VolumeContext: m("source", `\\s\share`, "volumeRootAccess", "Users:read")}, Options{})
	if err == nil || !strings.Contains(err.Error(), "the SMB server owns a share's ACL") {
		t.Fatalf("Parse = %v", err)
	}
}

// FuzzParseRootAccess: any value either fails with a contract error or
// parses into grants whose canonical form reads back the same.
func FuzzParseRootAccess(f *testing.F) {
	for _, s := range []string{"ContainerUser:modify", "S-1-5-93-2-2:read;Users:full", `CONTOSO\a:read`, "none", ";", "a:b:c", "S-1-0x00FFFFFFFFF0-1:full"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseRootAccess("volumeRootAccess", s)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != "volumeRootAccess" {
				t.Fatalf("%q: %v is not a contract error naming the key", s, err)
			}
			return
		}
		again, err := ParseRootAccess("volumeRootAccess", orNone(a.String()))
		if err != nil || !reflect.DeepEqual(again.Grants, a.Grants) {
			t.Fatalf("%q: %q reads back as %+v, %v", s, a.String(), again.Grants, err)
		}
	})
}
