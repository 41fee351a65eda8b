package winacl

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSID(t *testing.T) {
	for _, c := range []struct {
		in, hex string
	}{
		// The layout of [MS-DTYP] 2.4.2.2: revision, count, the authority
		// big-endian, the subauthorities little-endian.
		{"S-1-5-93-2-2", "01 03 000000000005 5d000000 02000000 02000000"},
		{"S-1-5-18", "01 01 000000000005 12000000"},
		{"S-1-5-32-544", "01 02 000000000005 20000000 20020000"},
		{"S-1-1-0", "01 01 000000000001 00000000"},
		{"s-1-5-11", "01 01 000000000005 0b000000"},
		{"S-1-0x00FFFFFFFFF0-4294967295", "01 01 00fffffffff0 ffffffff"},
		// The largest authority written in decimal, and the smallest in
		// hex ([MS-DTYP] 2.4.2.1: hex from 2^32 on).
		{"S-1-4294967295-1", "01 01 0000ffffffff 01000000"},
		{"S-1-0x000100000000-1", "01 01 000100000000 01000000"},
		// No subauthority: the binary form allows it ([MS-DTYP] 2.4.2.2),
		// and what FormatSID writes ParseSID reads.
		{"S-1-5", "01 00 000000000005"},
		// SID_MAX_SUB_AUTHORITIES.
		{"S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15", "01 0f 000000000005" +
			"01000000 02000000 03000000 04000000 05000000 06000000 07000000 08000000" +
			"09000000 0a000000 0b000000 0c000000 0d000000 0e000000 0f000000"},
	} {
		got, err := ParseSID(c.in)
		if err != nil {
			t.Errorf("ParseSID(%q): %v", c.in, err)
			continue
		}
		if want := unhex(t, c.hex); !bytes.Equal(got, want) {
			t.Errorf("ParseSID(%q) = % x, want % x", c.in, got, want)
		}
		for _, b := range [][]byte{got, append(got, 0xaa)} { // trailing bytes are not the SID's
			s, n, err := FormatSID(b)
			if err != nil || n != len(got) || !strings.EqualFold(s, c.in) {
				t.Errorf("FormatSID(% x) = %q, %d, %v; want %s", b, s, n, err, c.in)
			}
		}
	}
}

func TestParseSIDMalformed(t *testing.T) {
	for _, in := range []string{
		"", "S", "S-1", "S-1-", "BA", "SY", "S-2-5-18", "X-1-5-18", "S-1-5-x", "S-1-5--1", "S-1--5-18",
		"S-1-5-18-", "S-1-4294967296-1", "S-1-5-4294967296", "S-1-0x1-1", "S-1-5-+1", "S-1-5- 1",
		"S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16",
	} {
		if _, err := ParseSID(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseSID(%q) = %v, want ErrMalformed", in, err)
		}
	}
	if got, err := CanonicalSID("s-1-05-032-0544"); err != nil || got != "S-1-5-32-544" {
		t.Errorf("CanonicalSID = %q, %v", got, err)
	}
}

func TestFormatSIDMalformed(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{1, 1, 0, 0, 0, 0, 0, 5}, // one subauthority announced, none there
		{2, 0, 0, 0, 0, 0, 0, 5}, // revision 2
		append([]byte{1, 16}, make([]byte, 6+64)...), // sixteen subauthorities
	} {
		if _, _, err := FormatSID(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("FormatSID(% x) = %v, want ErrMalformed", b, err)
		}
	}
}

func TestAllowACE(t *testing.T) {
	a, err := AllowACE("S-1-5-93-2-2", Modify, ObjectInherit|ContainerInherit)
	if err != nil {
		t.Fatal(err)
	}
	// ACE_HEADER (type 0, flags OI|CI, size 28), the mask, then the SID.
	want := unhex(t, "00 03 1c00 bf011300 01 03 000000000005 5d000000 02000000 02000000")
	if !bytes.Equal(a.Raw, want) {
		t.Fatalf("AllowACE = % x, want % x", a.Raw, want)
	}
	if a.String() != "(A;OICI;0x1301bf;;;S-1-5-93-2-2)" {
		t.Fatalf("String = %s", a)
	}
	if _, err := AllowACE("BA", FullControl, 0); !errors.Is(err, ErrMalformed) {
		t.Fatalf("AllowACE(BA) = %v", err)
	}
}

// serverRoot is a volume root's DACL as the Windows Server 2022 dump in
// kubernetes/kubernetes#131341 shows it, one entry per icacls line.
func serverRoot(t *testing.T) ACL {
	t.Helper()
	var acl ACL
	for _, e := range []struct {
		sid   string
		mask  uint32
		flags uint8
	}{
		{SIDAdministrators, FullControl, ObjectInherit | ContainerInherit},
		{SIDLocalSystem, FullControl, ObjectInherit | ContainerInherit},
		{SIDCreatorOwner, FullControl, ObjectInherit | ContainerInherit | InheritOnly},
		{SIDUsers, ReadExecute, ObjectInherit | ContainerInherit},
		{SIDUsers, 0x4, ContainerInherit},
		{SIDUsers, 0x2, ContainerInherit | InheritOnly},
		{SIDEveryone, ReadExecute, 0},
	} {
		a, err := AllowACE(e.sid, e.mask, e.flags)
		if err != nil {
			t.Fatal(err)
		}
		acl.ACEs = append(acl.ACEs, a)
	}
	acl.Revision = ACLRevision
	return acl
}

func TestACLRoundTrip(t *testing.T) {
	acl := serverRoot(t)
	// An entry of a type this package does not interpret (an object ACE,
	// type 5, made up) survives byte for byte.
	other := ACE{Type: 5, Flags: 0x12, Raw: []byte{5, 0x12, 12, 0, 1, 2, 3, 4, 5, 6, 7, 8}}
	// An entry that is a header only, last in the ACL: the smallest an
	// ACE can be.
	bare := ACE{Type: 0x11, Raw: []byte{0x11, 0, 4, 0}}
	acl.ACEs = append(acl.ACEs, other, bare)
	b, err := acl.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 2 || int(b[2])|int(b[3])<<8 != len(b) || int(b[4])|int(b[5])<<8 != 9 {
		t.Fatalf("header % x for %d bytes", b[:8], len(b))
	}
	got, err := ParseACL(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ACEs) != len(acl.ACEs) {
		t.Fatalf("%d entries, want %d", len(got.ACEs), len(acl.ACEs))
	}
	for i := range acl.ACEs {
		if !bytes.Equal(got.ACEs[i].Raw, acl.ACEs[i].Raw) || got.ACEs[i].SID != acl.ACEs[i].SID ||
			got.ACEs[i].Mask != acl.ACEs[i].Mask || got.ACEs[i].Flags != acl.ACEs[i].Flags {
			t.Errorf("entry %d: %+v, want %+v", i, got.ACEs[i], acl.ACEs[i])
		}
	}
	if got.ACEs[7].Interpreted() || got.ACEs[7].String() != "(type 0x05;CIID;12 bytes)" {
		t.Errorf("uninterpreted entry: %s", got.ACEs[7])
	}
	if got.ACEs[8].String() != "(type 0x11;;4 bytes)" {
		t.Errorf("header-only entry: %s", got.ACEs[8])
	}
	again, err := got.Bytes()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("Bytes(ParseACL(b)) differs: %v", err)
	}
}

// TestACLRevisionZero: an ACL built without a revision is written as
// ACL_REVISION; one read keeps its own.
func TestACLRevisionZero(t *testing.T) {
	for rev, want := range map[uint8]byte{0: 2, ACLRevision: 2, ACLRevisionDS: 4} {
		b, err := ACL{Revision: rev}.Bytes()
		if err != nil || !bytes.Equal(b, []byte{want, 0, 8, 0, 0, 0, 0, 0}) {
			t.Errorf("ACL{Revision: %d}.Bytes() = % x, %v; want revision %d", rev, b, err, want)
		}
	}
}

func TestParseACLMalformed(t *testing.T) {
	good, err := serverRoot(t).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, b := range map[string][]byte{
		"short header":         good[:7],
		"size past the buffer": good[:len(good)-1],
		"size below a header":  mutate(func(b []byte) []byte { b[2], b[3] = 4, 0; return b }),
		"count past the size":  mutate(func(b []byte) []byte { b[4] = 8; return b }),
		"ACE size zero":        mutate(func(b []byte) []byte { b[10], b[11] = 0, 0; return b }),
		"ACE size past ACL":    mutate(func(b []byte) []byte { b[10], b[11] = 0xff, 0; return b }),
		"SID past the ACE":     mutate(func(b []byte) []byte { b[10] = 12; return b }),
		"SID count too large":  mutate(func(b []byte) []byte { b[17] = 9; return b }),
		// An allow entry that is a header only, last in the ACL: no mask,
		// no SID.
		"allow entry without a mask": unhex(t, "02 00 0c00 0100 0000 00 00 0400"),
	} {
		if _, err := ParseACL(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseACL = %v, want ErrMalformed", name, err)
		}
	}
}

// TestACLBytesMalformed: an entry whose Raw is not an ACE is never written.
func TestACLBytesMalformed(t *testing.T) {
	for name, raw := range map[string][]byte{
		"empty":                 nil,
		"short of a header":     {5, 0, 3},
		"size says more":        {5, 0, 8, 0},
		"size says less":        {5, 0, 4, 0, 0, 0, 0, 0},
		"a zero size in header": {5, 0, 0, 0},
	} {
		if _, err := (ACL{ACEs: []ACE{{Type: 5, Raw: raw}}}).Bytes(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Bytes = %v, want ErrMalformed", name, err)
		}
	}
}

// TestACLLargest: 0xfffc bytes is the largest ACL Bytes writes (AclSize is
// 16 bits, and a multiple of 4); four more are ErrTooLarge.
func TestACLLargest(t *testing.T) {
	entry := func(n int) ACE {
		raw := make([]byte, n)
		raw[0], raw[2], raw[3] = 5, byte(n), byte(n>>8)
		return ACE{Type: 5, Raw: raw}
	}
	b, err := ACL{ACEs: []ACE{entry(0xfffc - 8)}}.Bytes()
	if err != nil || len(b) != 0xfffc || b[2] != 0xfc || b[3] != 0xff {
		t.Fatalf("an ACL of 0xfffc bytes: %d bytes, %v", len(b), err)
	}
	if _, err := (ACL{ACEs: []ACE{entry(0xfffc - 8), entry(4)}}).Bytes(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an ACL of 0x10000 bytes: %v, want ErrTooLarge", err)
	}
}

func TestACLTooLarge(t *testing.T) {
	a, err := AllowACE("S-1-5-21-1-2-3-1001", Modify, 3)
	if err != nil {
		t.Fatal(err)
	}
	acl := ACL{Revision: ACLRevision}
	for len(acl.ACEs)*len(a.Raw) < 0x10000 {
		acl.ACEs = append(acl.ACEs, a)
	}
	if _, err := acl.Bytes(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an ACL over 64 KiB: %v, want ErrTooLarge", err)
	}
	d := Descriptor{DACL: &acl}
	if _, err := d.Bytes(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a descriptor with an ACL over 64 KiB: %v, want ErrTooLarge", err)
	}
}

func TestDescriptorRoundTrip(t *testing.T) {
	acl := serverRoot(t)
	d := Descriptor{Control: ControlDACLAutoInherited, Owner: SIDAdministrators, Group: SIDLocalSystem, DACL: &acl}
	b, err := d.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// Header: revision 1, control SE_SELF_RELATIVE|SE_DACL_AUTO_INHERITED|
	// SE_DACL_PRESENT, owner at 20 (16 bytes), group at 36 (12 bytes), no
	// SACL, DACL at 48.
	if want := unhex(t, "01 00 0484 14000000 24000000 00000000 30000000"); !bytes.Equal(b[:20], want) {
		t.Fatalf("header % x, want % x", b[:20], want)
	}
	got, err := ParseDescriptor(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner != SIDAdministrators || got.Group != SIDLocalSystem || got.NullDACL() || got.Protected() || len(got.DACL.ACEs) != 7 {
		t.Fatalf("ParseDescriptor = %+v", got)
	}
	if s := got.String(); s != "O:S-1-5-32-544G:S-1-5-18D:AI(A;OICI;0x1f01ff;;;S-1-5-32-544)(A;OICI;0x1f01ff;;;S-1-5-18)"+
		"(A;OICIIO;0x1f01ff;;;S-1-3-0)(A;OICI;0x1200a9;;;S-1-5-32-545)(A;CI;0x4;;;S-1-5-32-545)(A;CIIO;0x2;;;S-1-5-32-545)(A;;0x1200a9;;;S-1-1-0)" {
		t.Fatalf("String = %s", s)
	}
	again, err := got.Bytes()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("Bytes(ParseDescriptor(b)) differs: %v", err)
	}
}

func TestDescriptorNullDACL(t *testing.T) {
	for name, b := range map[string][]byte{
		// SE_DACL_PRESENT with a zero offset: a NULL DACL.
		"present, no ACL": unhex(t, "01 00 0480 00000000 00000000 00000000 00000000"),
		// SE_DACL_PRESENT clear: no DACL, which also means full access.
		"absent": unhex(t, "01 00 0080 00000000 00000000 00000000 00000000"),
	} {
		d, err := ParseDescriptor(b)
		if err != nil || !d.NullDACL() || d.String() != "D:NO_ACCESS_CONTROL" {
			t.Errorf("%s: %+v, %v", name, d, err)
		}
	}
	// An empty DACL is not a NULL one: it grants nothing.
	empty := Descriptor{DACL: &ACL{Revision: ACLRevision}}
	b, err := empty.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ParseDescriptor(b); err != nil || d.NullDACL() || len(d.DACL.ACEs) != 0 {
		t.Fatalf("empty DACL: %+v, %v", d, err)
	}
}

func TestParseDescriptorMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"short":              make([]byte, 19),
		"revision 2":         unhex(t, "02 00 0480 00000000 00000000 00000000 00000000"),
		"absolute":           unhex(t, "01 00 0400 00000000 00000000 00000000 00000000"),
		"owner past the end": unhex(t, "01 00 0080 40000000 00000000 00000000 00000000"),
		"owner in header":    unhex(t, "01 00 0080 04000000 00000000 00000000 00000000"),
		"DACL truncated":     unhex(t, "01 00 0480 00000000 00000000 00000000 14000000 02 00 2000 0100 0000"),
	} {
		if _, err := ParseDescriptor(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseDescriptor = %v, want ErrMalformed", name, err)
		}
	}
}

func TestFlagString(t *testing.T) {
	for f, want := range map[uint8]string{0: "", 3: "OICI", 0x0b: "OICIIO", 0x10: "ID", 0x13: "OICIID", 0x44: "NP0x40"} {
		if got := FlagString(f); got != want {
			t.Errorf("FlagString(%#x) = %q, want %q", f, got, want)
		}
	}
}

func FuzzParseDescriptor(f *testing.F) {
	acl := ACL{Revision: ACLRevision}
	a, _ := AllowACE("S-1-5-93-2-2", Modify, 3)
	acl.ACEs = append(acl.ACEs, a, ACE{Type: 9, Raw: []byte{9, 0, 8, 0, 0, 0, 0, 0}})
	seed, _ := Descriptor{Owner: SIDLocalSystem, DACL: &acl}.Bytes()
	f.Add(seed)
	f.Add([]byte{1, 0, 4, 0x80, 0, 0, 0, 0})
	// Owned by S-1-5, a SID without subauthorities: it parses, so it must
	// build again.
	f.Add(unhex(f, "01 00 0080 14000000 00000000 00000000 00000000 01 00 000000000005"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDescriptor(b)
		if err != nil {
			return
		}
		// What parses builds again, and what that builds parses to the
		// same entries.
		out, err := d.Bytes()
		if errors.Is(err, ErrTooLarge) {
			return // larger than an ACL may be once rebuilt
		}
		if err != nil {
			t.Fatalf("a descriptor that parses does not build: %v", err)
		}
		d2, err := ParseDescriptor(out)
		if err != nil {
			t.Fatalf("rebuilt descriptor does not parse: %v", err)
		}
		if d.String() != d2.String() {
			t.Fatalf("%s != %s", d, d2)
		}
	})
}
