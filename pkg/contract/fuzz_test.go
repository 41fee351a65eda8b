package contract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// fuzzSecretMark prefixes every secret value FuzzParse builds; when no
// other input carries it, it must never appear in an error.
const fuzzSecretMark = "\u2603"

// parseSeed is one FuzzParse input. mode bits: 0-1 base map (none, disk,
// smb, iscsi); 2 fuzzed pairs go to publish_context; 3 presets, aliases
// and VolumeIDDisk; 4 no secrets; 5 domain secret; 6-7 DefaultKind (auto,
// disk, smb, iscsi).
type parseSeed struct {
	volumeID               string
	mode                   uint16
	k1, v1, k2, v2, k3, v3 string
	sec1, sec2, fsType     string
}

var parseSeeds = []parseSeed{
	{"vol-1", 1, "diskLUN", "3", "fsType", "refs", "fsLabel", "data", "", "", ""},
	{"vol-0123456789abcdef0", 8, "x", "y", "", "", "", "", "", "", ""},
	{"projects/p/zones/z/disks/d", 8, "allocationUnitSize", "64K", "", "", "", "", "", "", "ntfs"},
	{"v", 2, "subDir", "${pvc.metadata.name}/x", "csi.storage.k8s.io/pvc/name", "claim", "requirePrivacy", "false", "bob", "password12", ""},
	{"v", 2 | 32, "source", `//srv/share/dir`, "subDir", "a/../b", "", "", `corp\bob`, "pw", "cifs"},
	{"v", 3, "portals", `["10.0.0.2","[fe80::1]:3261"]`, "sessionCHAPAuth", "true", "multipath", "false", "init", "twelvebyte", ""},
	{"v", 3 | 4, "sessionCHAPAuth", "1", "discoveryCHAPAuth", "1", "initiatorPortal", "10.1.1.1", "u", "0123456789ab", ""},
	{"v", 3, "iqn", "IQN.2001-04.COM.EXAMPLE:X", "lun", "65535", "persistent", "0", "", "", "refs"},
	{"v", 0, "backend", "smb", "source", `C:\x`, "", "", "", "", ""},
	{"v", 8, "LUN", "7", "iscsiTargetIqn", "eui.0123456789abcdef", "targetPortal", "h:3260", "", "", ""},
	{"", 0, "", "", "", "", "", "", "", "", ""},
	{"v", 1 | 16, "DISKSERIAL", "a", "diskserial", "b", "", "", "", "", ""},
	{"v", 64 | 128, "targetPortal", "[::1]", "iqn", "naa.0123456789abcdef", "lun", "1", "", "", "xfs"},
	{"v", 2, "csi.storage.k8s.io/ephemeral", "true", "", "", "", "", "", "", ""},
	{"v", 1, "diskNVMeNSID", "4", "diskAdapterSerial", "SN: 000001", "diskNGUID", "E6D8_6642_50D8_47BD_916E_AF1B_0A1B_2C3D.", "", "", ""},
	{"local-ebs://dev/xvdbz", 8 | 4, "volumeID", "vol-0abcdef0123456789", "devicePath", "/dev/xvdbz", "diskEUI", "eui.000c2968595e0d8d", "", "", ""},
	{"v", 8 | 4, "diskUUID", "6000C298-595e-0d8d-2f3e-2e3c1e9d6b1a", "LUN", "254", "", "", "", "", ""},
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s.volumeID, s.mode, s.k1, s.v1, s.k2, s.v2, s.k3, s.v3, s.sec1, s.sec2, s.fsType)
	}
	f.Fuzz(func(t *testing.T, volumeID string, mode uint16, k1, v1, k2, v2, k3, v3, sec1, sec2, fsType string) {
		vc := map[string]string{}
		switch mode & 3 {
		case 1:
			vc["diskSerial"] = "serial-1"
		case 2:
			vc["source"] = `\\srv\share`
		case 3:
			vc["targetPortal"] = "10.0.0.1"
			vc["iqn"] = "iqn.2001-04.com.example:t"
			vc["lun"] = "0"
		}
		pc := map[string]string{}
		dst := vc
		if mode&4 != 0 {
			dst = pc
		}
		dst[k1], dst[k2], dst[k3] = v1, v2, v3

		var o Options
		if mode&8 != 0 {
			o = Options{
				Presets:      []string{"azure-disk", "aws-ebs", "gce-pd", "vsphere"},
				Aliases:      map[string]string{"iscsiTargetIqn": "iqn", "smbPath": "source"},
				VolumeIDDisk: VolumeIDDiskSerial,
			}
		}
		o.DefaultKind = [...]Kind{"", KindDisk, KindSMB, KindISCSI}[mode>>6&3]

		var sec map[string]string
		if mode&16 == 0 {
			s1, s2 := fuzzSecretMark+sec1, fuzzSecretMark+sec2
			sec = map[string]string{
				"username": s1, "password": s2,
				"node.session.auth.username": s1, "node.session.auth.password": s2,
				"node.session.auth.password_in":  s2 + sec1,
				"node.sendtargets.auth.username": s1, "node.sendtargets.auth.password": s2,
			}
			if mode&32 != 0 {
				sec["domain"] = fuzzSecretMark + sec1
			}
		}

		r := Request{VolumeID: volumeID, VolumeContext: vc, PublishContext: pc, Secrets: sec, FsType: fsType}
		v, err := Parse(r, o)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Key == "" || ce.Reason == "" {
				t.Fatalf("error %#v is not a *Error with key and reason", err)
			}
			public := strings.Join([]string{volumeID, k1, v1, k2, v2, k3, v3, fsType}, "\x00")
			if sec != nil && !strings.Contains(public, fuzzSecretMark) && strings.Contains(err.Error(), fuzzSecretMark) {
				t.Fatalf("error leaks a secret: %v", err)
			}
			return
		}
		checkVolume(t, v)
	})
}

// checkVolume asserts what every parsed Volume guarantees.
func checkVolume(t *testing.T, v Volume) {
	t.Helper()
	if !sort.StringsAreSorted(v.Ignored) {
		t.Fatalf("Ignored not sorted: %q", v.Ignored)
	}
	for _, k := range v.Ignored {
		// Another backend's key is ignored when it comes in
		// publish_context (the user cannot change it); a key of this
		// volume's backend never is.
		if kd, ok := contextKeys[fold(k)]; (ok && appliesTo(kd.Backends, v.Kind)) || strings.HasPrefix(fold(k), csiPrefix) {
			t.Fatalf("known key %q in Ignored", k)
		}
	}
	specs := 0
	for _, set := range []bool{v.Disk != nil, v.SMB != nil, v.ISCSI != nil} {
		if set {
			specs++
		}
	}
	if specs != 1 {
		t.Fatalf("%d specs set", specs)
	}
	switch v.Kind {
	case KindDisk, KindISCSI:
		if v.FS.Type != FSNTFS && v.FS.Type != FSReFS {
			t.Fatalf("FS type %q", v.FS.Type)
		}
		if len(v.FS.Label) > 0 && checkLabel(entry{key: "fsLabel", val: v.FS.Label}) != nil {
			t.Fatalf("invalid label %q", v.FS.Label)
		}
		if a := v.FS.AllocationUnitSize; a&(a-1) != 0 {
			t.Fatalf("allocation unit %d", a)
		}
	case KindSMB:
		if v.FS != (FileSystem{}) {
			t.Fatalf("smb FS %+v", v.FS)
		}
	default:
		t.Fatalf("kind %q", v.Kind)
	}
	switch v.Kind {
	case KindDisk:
		s := v.Disk.Selector
		if s.IsZero() {
			t.Fatal("empty disk selector")
		}
		if (s.Target != nil || s.Bus != nil) && s.LUN == nil {
			t.Fatalf("target or bus without LUN: %+v", s)
		}
		if s.NVMeNSID != nil && (*s.NVMeNSID == 0 || *s.NVMeNSID > maxNSID) {
			t.Fatalf("namespace ID %d", *s.NVMeNSID)
		}
		if s.AzureLUN != nil && *s.AzureLUN > maxAzureLUN {
			t.Fatalf("Azure LUN %d", *s.AzureLUN)
		}
		for _, id := range []struct {
			v      string
			digits int
		}{{s.EUI, 16}, {s.NGUID, 32}, {s.VSphereUUID, 32}} {
			if id.v != "" && (len(id.v) != id.digits || !isHex(id.v) || strings.ToLower(id.v) != id.v) {
				t.Fatalf("identifier %q is not %d lower-case hex digits", id.v, id.digits)
			}
		}
		if s.EBSVolumeID != "" && !isEBSVolumeID(s.EBSVolumeID) {
			t.Fatalf("EBS volume ID %q", s.EBSVolumeID)
		}
	case KindSMB:
		s := v.SMB
		if s.Server == "" || s.Share == "" {
			t.Fatalf("smb %+v", *s)
		}
		server, share, dir, err := ParseSMBSource(s.UNC())
		if err != nil || server != s.Server || share != s.Share || dir != s.Dir {
			t.Fatalf("UNC %q does not round-trip: %q %q %q %v", s.UNC(), server, share, dir, err)
		}
		for _, c := range strings.Split(s.UNC()[2:], `\`) {
			if c == ".." || c == "." || c == "" {
				t.Fatalf("UNC %q has component %q", s.UNC(), c)
			}
		}
		if strings.Contains(s.Credential.User, fuzzSecretMark) != !s.Credential.Password.IsZero() {
			// user and password come together from the secret
			t.Fatalf("credential user/password mismatch: %q", s.Credential.User)
		}
	case KindISCSI:
		s := v.ISCSI
		if s.IQN != strings.ToLower(s.IQN) {
			t.Fatalf("IQN %q not lower case", s.IQN)
		}
		if again, err := ValidateIQN(s.IQN); err != nil || again != s.IQN {
			t.Fatalf("IQN %q does not validate again: %v", s.IQN, err)
		}
		if len(s.Portals) == 0 {
			t.Fatal("no portals")
		}
		seen := map[host.Portal]bool{}
		for _, p := range s.Portals {
			if p.Port == 0 || p.Address == "" || seen[p] {
				t.Fatalf("portals %+v", s.Portals)
			}
			seen[p] = true
		}
		if s.LUN > maxLUN {
			t.Fatalf("LUN %d", s.LUN)
		}
		chapOK := func(c host.CHAP) bool {
			return c.User != "" && c.Secret.Len() >= host.MinCHAPSecret && c.Secret.Len() <= host.MaxCHAPSecret
		}
		switch s.SessionAuth {
		case host.AuthNone:
			if s.SessionCHAP != (host.CHAP{}) || !s.InitiatorSecret.IsZero() {
				t.Fatal("CHAP set without session auth")
			}
		case host.AuthMutual:
			if s.InitiatorSecret.Len() < host.MinCHAPSecret || s.InitiatorSecret.Len() > host.MaxCHAPSecret || s.InitiatorSecret.Equal(s.SessionCHAP.Secret) {
				t.Fatal("bad initiator secret")
			}
			fallthrough
		case host.AuthOneWay:
			if !chapOK(s.SessionCHAP) {
				t.Fatal("bad session CHAP")
			}
		}
		if s.DiscoveryCHAP != nil && !chapOK(*s.DiscoveryCHAP) {
			t.Fatal("bad discovery CHAP")
		}
	}
}

var smbSourceSeeds = []string{
	`\\srv\share`, `//srv/share/a/b`, `\\srv\share\`, `\\10.0.0.1\d$\x`,
	`\\fe80--1s2.ipv6-literal.net\s`, `C:\x`, `\\?\UNC\srv\s`, `\\srv\share\..\x`,
	`\\srv\sh*re`, `\\[::1]\s`, "\\\\srv\\s\x00", `//srv//share`, `\\999.0.0.1\s`, `\\a_b.example.com\s\ü`,
}

func FuzzParseSMBSource(f *testing.F) {
	for _, s := range smbSourceSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		server, share, dir, err := ParseSMBSource(s)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != keySource {
				t.Fatalf("error %#v", err)
			}
			return
		}
		if server == "" || share == "" || hasControl(server+share+dir) {
			t.Fatalf("parsed %q into %q %q %q", s, server, share, dir)
		}
		if strings.HasPrefix(dir, `\`) || strings.HasSuffix(dir, `\`) || strings.Contains(dir, "/") {
			t.Fatalf("dir %q", dir)
		}
		if dir != "" {
			for _, c := range strings.Split(dir, `\`) {
				if c == "" || c == "." || c == ".." {
					t.Fatalf("dir %q has component %q", dir, c)
				}
			}
		}
		unc := `\\` + server + `\` + share
		if dir != "" {
			unc += `\` + dir
		}
		s2, sh2, d2, err := ParseSMBSource(unc)
		if err != nil || s2 != server || sh2 != share || d2 != dir {
			t.Fatalf("%q does not round-trip: %q %q %q %v", unc, s2, sh2, d2, err)
		}
	})
}

var portalSeeds = []string{
	"10.0.0.1", "10.0.0.1:3261", "[fe80::1]:3260", "[fe80::1]", "fe80::1", "san.example.com:860",
	"10.0.0.1:0", "10.0.0.1:65536", "[fe80::1%eth0]", "host_name", "999.1.1.1", ":1", "[::ffff:1.2.3.4]:1",
}

func FuzzParsePortal(f *testing.F) {
	for _, s := range portalSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePortal(s)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != keyTargetPortal {
				t.Fatalf("error %#v", err)
			}
			return
		}
		if p.Address == "" || p.Port == 0 {
			t.Fatalf("parsed %q into %+v", s, p)
		}
		again, err := ParsePortal(p.String())
		if err != nil || again != p {
			t.Fatalf("%q (from %q) does not round-trip: %+v %v", p.String(), s, again, err)
		}
	})
}

var iqnSeeds = []string{
	"iqn.2001-04.com.example", "iqn.2001-04.com.example:storage.disk1", "IQN.1991-05.COM.MICROSOFT:X",
	"eui.0123456789ABCDEF", "naa.0123456789abcdef", "naa.0123456789abcdef0123456789abcdef",
	"iqn.2001-13.com.example", "iqn.2001-04.com..x", "iqn.2001-04.com.example:", "eui.0123", "wwn.1", "iqn.2001-04.com.ex:a_b",
}

func FuzzValidateIQN(f *testing.F) {
	for _, s := range iqnSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ValidateIQN(s)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != keyIQN {
				t.Fatalf("error %#v", err)
			}
			return
		}
		if v != strings.ToLower(v) || len(v) > 223 /* RFC 3720 §3.2.6.1 */ || strings.ContainsAny(v, " \t\r\n") {
			t.Fatalf("%q validated as %q", s, v)
		}
		if again, err := ValidateIQN(v); err != nil || again != v {
			t.Fatalf("%q is not stable: %q %v", v, again, err)
		}
	})
}

// TestFuzzCorpusMatchesSeeds checks that testdata/fuzz/<Name>/seed-* holds
// exactly the seed tables above (the f.Add seeds). With
// WRITE_FUZZ_CORPUS=1 it rewrites the files instead.
func TestFuzzCorpusMatchesSeeds(t *testing.T) {
	str := func(s string) string { return "string(" + strconv.Quote(s) + ")\n" }
	want := map[string]string{} // path -> content
	add := func(name string, i int, body string) {
		want[filepath.Join("testdata", "fuzz", name, fmt.Sprintf("seed-%02d", i))] = "go test fuzz v1\n" + body
	}
	for i, s := range parseSeeds {
		body := str(s.volumeID) + fmt.Sprintf("uint16(%d)\n", s.mode)
		for _, x := range []string{s.k1, s.v1, s.k2, s.v2, s.k3, s.v3, s.sec1, s.sec2, s.fsType} {
			body += str(x)
		}
		add("FuzzParse", i, body)
	}
	for name, seeds := range map[string][]string{
		"FuzzParseSMBSource": smbSourceSeeds, "FuzzParsePortal": portalSeeds, "FuzzValidateIQN": iqnSeeds,
	} {
		for i, s := range seeds {
			add(name, i, str(s))
		}
	}
	write := os.Getenv("WRITE_FUZZ_CORPUS") == "1"
	for path, content := range want {
		if write {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Errorf("%s is missing or stale (err %v); run WRITE_FUZZ_CORPUS=1 go test -run TestFuzzCorpusMatchesSeeds", path, err)
		}
	}
	if n := len(parseSeeds); n < 10 || len(smbSourceSeeds) < 10 || len(portalSeeds) < 10 || len(iqnSeeds) < 10 {
		t.Errorf("fewer than 10 seeds for a fuzz target (FuzzParse has %d)", n)
	}
}
