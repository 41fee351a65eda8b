package winpath

import (
	"strings"
	"testing"
)

func TestLongPath(t *testing.T) {
	cases := []struct{ in, want string }{
		{in: `C:\x`, want: `\\?\C:\x`},
		{in: `c:\var\lib\kubelet\pods\x`, want: `\\?\c:\var\lib\kubelet\pods\x`},
		{in: `C:\`, want: `\\?\C:\`},
		{in: `C:/x/y`, want: `\\?\C:\x\y`},
		{in: `C:\x\\y\`, want: `\\?\C:\x\y\`},
		{in: `\\server\share\x`, want: `\\?\UNC\server\share\x`},
		{in: `//server/share`, want: `\\?\UNC\server\share`},
		{in: `\\\server\\share`, want: `\\?\UNC\server\share`},
		{in: `\\?\C:\x`, want: `\\?\C:\x`},
		{in: `\\?\UNC\server\share`, want: `\\?\UNC\server\share`},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`, want: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`},
		{in: `\??\C:\x`, want: `\??\C:\x`},
		{in: `\\.\PhysicalDrive0`, want: `\\.\PhysicalDrive0`},
		{in: `x\y`, want: `x\y`},
		{in: `\x`, want: `\x`},
		{in: `C:x`, want: `C:x`},
		{in: ``, want: ``},
	}
	for _, tc := range cases {
		if got := LongPath(tc.in); got != tc.want {
			t.Errorf("LongPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUNCLinkTarget(t *testing.T) {
	cases := []struct{ in, want string }{
		{in: `\\server\share\dir`, want: `\\?\UNC\server\share\dir\`},
		{in: `\\server\share`, want: `\\?\UNC\server\share\`},
		{in: `\\server\share\`, want: `\\?\UNC\server\share\`},
		{in: `//server/share/dir/`, want: `\\?\UNC\server\share\dir\`},
		{in: `\\?\UNC\server\share`, want: `\\?\UNC\server\share\`},
		{in: `\??\UNC\server\share\dir`, want: `\\?\UNC\server\share\dir\`},
		{in: `\\10.0.0.5\data\sub dir`, want: `\\?\UNC\10.0.0.5\data\sub dir\`},
		{in: `C:\x`, want: `\\?\C:\x\`},
	}
	for _, tc := range cases {
		got := UNCLinkTarget(tc.in)
		if got != tc.want {
			t.Errorf("UNCLinkTarget(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, `\\?\\\`) {
			t.Errorf("UNCLinkTarget(%q) = %q has the broken csi-proxy form", tc.in, got)
		}
	}
}

func TestCanonicalTarget(t *testing.T) {
	cases := []struct{ in, want string }{
		{in: `C:\Var\Lib\Kubelet\X`, want: `c:\var\lib\kubelet\x`},
		{in: `C:\x\`, want: `c:\x`},
		{in: `C:\`, want: `c:\`},
		{in: `C:/a//b/`, want: `c:\a\b`},
		{in: `\\?\C:\x`, want: `c:\x`},
		{in: `\??\C:\x\`, want: `c:\x`},
		{in: `\\?\UNC\Server\Share\`, want: `\\server\share`},
		{in: `\??\unc\server\share\dir`, want: `\\server\share\dir`},
		{in: `\\Server\Share\`, want: `\\server\share`},
		{in: `//server/share/`, want: `\\server\share`},
		{in: `\\?\Volume{0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9}\`, want: `\\?\volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`},
		{in: `\??\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`, want: `\\?\volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`},
		{in: `..\data\`, want: `..\data`},
		// A doubled separator after a single leading one: the collapse must
		// not look before the string.
		{in: `\a\\b`, want: `\a\b`},
		{in: `a\\\b`, want: `a\b`},
		{in: `\`, want: `\`},
		{in: ``, want: ``},
	}
	for _, tc := range cases {
		if got := CanonicalTarget(tc.in); got != tc.want {
			t.Errorf("CanonicalTarget(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	same := [][2]string{
		{`\\?\UNC\srv\share\dir\`, `\\srv\share\dir`},
		{`\??\C:\var\lib\kubelet\plugins\x\globalmount`, `c:\VAR\lib\kubelet\plugins\x\globalmount\`},
		{`\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`, `\??\VOLUME{0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9}`},
		{UNCLinkTarget(`\\srv\share`), `\\srv\share`},
	}
	for _, s := range same {
		if CanonicalTarget(s[0]) != CanonicalTarget(s[1]) {
			t.Errorf("CanonicalTarget(%q) = %q and CanonicalTarget(%q) = %q, want equal", s[0], CanonicalTarget(s[0]), s[1], CanonicalTarget(s[1]))
		}
	}
	different := [][2]string{
		{`C:\x`, `D:\x`},
		{`C:\`, `C:`},                   // root of C: vs current directory of C:
		{`\\srv\share`, `\\srv\share2`}, //
		{`\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`, `Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`},
		{"C:\\\u212Aubelet", `C:\kubelet`}, // NTFS does not fold the Kelvin sign to k
		{`C:\Ä`, `C:\ä`},                   // non-ASCII case differences are not claimed equal
	}
	for _, d := range different {
		if CanonicalTarget(d[0]) == CanonicalTarget(d[1]) {
			t.Errorf("CanonicalTarget(%q) == CanonicalTarget(%q) = %q, want different", d[0], d[1], CanonicalTarget(d[0]))
		}
	}
}

func TestVolumeGUIDPath(t *testing.T) {
	const canon = `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`
	cases := []struct {
		in   string
		want string // "" if not a volume GUID path
	}{
		{in: canon, want: canon},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`, want: canon},
		{in: `\\?\Volume{0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9}\`, want: canon},
		{in: `\\?\volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`, want: canon},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\\`},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\x`},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f}\`},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8fg}\`},
		{in: `\\?\Volume{0a1b2c3d04e5f-6071-8293-a4b5c6d7e8f9}\`},
		{in: `\\?\Volume0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9\`},
		{in: `\??\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`},
		{in: `Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`},
		{in: `//?/Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}/`},
		{in: `C:\`},
		{in: ``},
	}
	for _, tc := range cases {
		got, ok := VolumeGUIDPath(tc.in)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("VolumeGUIDPath(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
		if IsVolumeGUIDPath(tc.in) != ok {
			t.Errorf("IsVolumeGUIDPath(%q) = %v, VolumeGUIDPath says %v", tc.in, !ok, ok)
		}
	}
}

func TestWithTrailingSeparator(t *testing.T) {
	cases := []struct{ in, want string }{
		{in: `C:\x`, want: `C:\x\`},
		{in: `C:\x\`, want: `C:\x\`},
		{in: `C:/x/`, want: `C:/x\`},
		{in: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}`, want: `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`},
		{in: ``, want: `\`},
	}
	for _, tc := range cases {
		if got := WithTrailingSeparator(tc.in); got != tc.want {
			t.Errorf("WithTrailingSeparator(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func BenchmarkCanonicalTarget(b *testing.B) {
	const target = `\\?\UNC\fileserver.example.com\Share\pvc-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9\`
	b.ReportAllocs()
	for b.Loop() {
		if CanonicalTarget(target) == "" {
			b.Fatal("empty canonical target")
		}
	}
}
