package winpath

import "testing"

func TestParent(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
		root   bool // IsRoot(in)
	}{
		// POSIX style.
		{in: "/var/lib/kubelet/x", want: "/var/lib/kubelet", wantOK: true},
		{in: "/var/lib/kubelet/x/", want: "/var/lib/kubelet", wantOK: true},
		{in: "/var/lib//kubelet//x//", want: "/var/lib//kubelet", wantOK: true},
		{in: "/x", want: "/", wantOK: true},
		{in: "/x///", want: "/", wantOK: true},
		{in: "/", root: true},
		{in: "///", root: true},
		// Drive paths, both separators.
		{in: `C:\var\x`, want: `C:\var`, wantOK: true},
		{in: `C:\var\x\\`, want: `C:\var`, wantOK: true},
		{in: `C:/var/x/`, want: `C:/var`, wantOK: true},
		{in: `C:\var/x`, want: `C:\var`, wantOK: true},
		{in: `C:\x`, want: `C:\`, wantOK: true},
		{in: `c:/x/`, want: `c:/`, wantOK: true},
		{in: `C:\`, root: true},
		{in: `C:/`, root: true},
		{in: `C:\\`, root: true},
		{in: `C:`, root: true},
		{in: `C:x`, want: `C:`, wantOK: true}, // drive-relative: the drive's current directory
		// UNC paths: the share root is the top.
		{in: `\\srv\share\dir\x`, want: `\\srv\share\dir`, wantOK: true},
		{in: `\\srv\share\dir\x\`, want: `\\srv\share\dir`, wantOK: true},
		{in: `\\srv\share\x`, want: `\\srv\share`, wantOK: true},
		{in: `\\srv\share\\x`, want: `\\srv\share`, wantOK: true},
		{in: `//srv/share/dir/x`, want: `//srv/share/dir`, wantOK: true},
		{in: `\\srv\share`, root: true},
		{in: `\\srv\share\`, root: true},
		{in: `\\srv`, root: true},
		{in: `\\srv\`, root: true},
		{in: `\\`, root: true},
		// Device paths.
		{in: `\\?\C:\x\y`, want: `\\?\C:\x`, wantOK: true},
		{in: `\\?\C:\x`, want: `\\?\C:\`, wantOK: true},
		{in: `\\?\C:\`, root: true},
		{in: `\??\C:\x`, want: `\??\C:\`, wantOK: true},
		{in: `\\?\UNC\srv\share\x\y`, want: `\\?\UNC\srv\share\x`, wantOK: true},
		{in: `\\?\unc\srv\share\x`, want: `\\?\unc\srv\share`, wantOK: true},
		{in: `\\?\UNC\srv\share\`, root: true},
		{in: `\\?\Volume{0a1b2c3d-0000-0000-0000-000000000000}\dir`, want: `\\?\Volume{0a1b2c3d-0000-0000-0000-000000000000}\`, wantOK: true},
		{in: `\\?\Volume{0a1b2c3d-0000-0000-0000-000000000000}\`, root: true},
		{in: `\\.\PhysicalDrive0`, root: true},
		// Root-relative and relative.
		{in: `\x\y`, want: `\x`, wantOK: true},
		{in: `\x`, want: `\`, wantOK: true},
		{in: `\`, root: true},
		{in: "a/b/c", want: "a/b", wantOK: true},
		{in: `a\b\`, want: "a", wantOK: true},
		{in: "a"},
		{in: "a/"},
		{in: ""},
	}
	for _, tt := range tests {
		got, ok := Parent(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Parent(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
		if r := IsRoot(tt.in); r != tt.root {
			t.Errorf("IsRoot(%q) = %v, want %v", tt.in, r, tt.root)
		}
		if tt.root && ok {
			t.Errorf("Parent(%q): a root has no parent", tt.in)
		}
	}
}

// FuzzParent checks Parent's invariants on any input: the parent is a
// strictly shorter prefix of the path (so walking up ends), and a root
// has no parent.
func FuzzParent(f *testing.F) {
	for _, s := range []string{"/a/b", `C:\a\b\`, `\\srv\share\a`, `\\?\UNC\s\h\x`, `\\?\C:\x`, "a/b", `C:x`, "//", `\??\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		for {
			parent, ok := Parent(p)
			if !ok {
				if parent != "" {
					t.Fatalf("Parent(%q) = %q without ok", p, parent)
				}
				return
			}
			if IsRoot(p) {
				t.Fatalf("Parent(%q) = %q, but it is a root", p, parent)
			}
			if len(parent) >= len(p) || p[:len(parent)] != parent {
				t.Fatalf("Parent(%q) = %q, not a shorter prefix", p, parent)
			}
			p = parent
		}
	})
}
