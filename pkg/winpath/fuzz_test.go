package winpath

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeeds are added with f.Add and also checked in under
// testdata/fuzz/FuzzResolve (TestFuzzCorpusHasSeeds keeps the two in step).
var fuzzSeeds = []string{
	`\var\lib\kubelet\plugins\kubernetes.io\csi\drv.example.com\` + sha + `\globalmount`,
	`c:\var\lib\kubelet\pods\` + podUID + `\volumes\kubernetes.io~csi\pv-1\mount`,
	`C:\var\lib\kubelet/pods/x`,
	`/var/lib/kubelet/csi-mount/target`,
	`C:\var\lib\kubelet/..\..\Windows`,
	`/var/lib/kubelet\..\..\etc`,
	`\\?\C:\var\lib\kubelet\x`,
	`\\.\PhysicalDrive0`,
	`\\?\GLOBALROOT\Device\HarddiskVolume1`,
	`\\server\share`,
	`//var/lib/kubelet/x`,
	`C:\var\lib\kubelet2\x`,
	`C:\VAR\LIB\KUBELET\pods\x`,
	`C:\var\lib\kubelet`,
	`C:\var\lib\kubelet\x:stream`,
	`C:\var\lib\kubelet\con`,
	`C:\var\lib\kubelet\COM¹.txt`,
	`C:\var\lib\kubelet.\x`,
	`C:foo`,
	"C:\\var\\lib\\kubelet\\a\x00b",
	"C:\\var\\lib\\\u212Aubelet\\x",
	`\??\C:\var\lib\kubelet\x`,
	`\var\\lib\.\kubelet\\\x\`,
	"",
}

// sentinels are the errors an *Error may wrap.
var sentinels = []error{ErrEmpty, ErrNotAbsolute, ErrOutsideRoot, ErrTraversal, ErrUNC, ErrDevicePath, ErrInvalidChars, ErrTooLong, ErrLinkEscapes}

func FuzzResolve(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	roots := []*Root{mustRoot(f, winRootDir, Windows), mustRoot(f, posixRootDir, POSIX)}
	f.Fuzz(func(t *testing.T, p string) {
		for _, r := range roots {
			checkResolve(t, r, p)
		}
	})
}

func checkResolve(t *testing.T, r *Root, p string) {
	got, err := r.Resolve(p)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%v: Resolve(%q) error %v is not an *Error", r.Style(), p, err)
		}
		if e.Path != p {
			t.Fatalf("%v: Resolve(%q) error names %q", r.Style(), p, e.Path)
		}
		known := false
		for _, s := range sentinels {
			if errors.Is(e.Err, s) {
				known = true
			}
		}
		if !known || e.Reason == "" || e.Error() == "" {
			t.Fatalf("%v: Resolve(%q) error %#v wraps no sentinel or has no reason", r.Style(), p, e)
		}
		// CheckLinks resolves first and must fail the same way.
		if cerr := r.CheckLinks(p, newFakeFS(r.Style())); !errors.Is(cerr, e.Err) {
			t.Fatalf("%v: CheckLinks(%q) = %v, Resolve said %v", r.Style(), p, cerr, err)
		}
		return
	}
	sep := r.Style().separator()
	prefix := r.Dir() + sep
	if !strings.HasPrefix(got, prefix) || len(got) == len(prefix) {
		t.Fatalf("%v: Resolve(%q) = %q, not strictly below %q", r.Style(), p, got, r.Dir())
	}
	for _, c := range strings.FieldsFunc(got, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." || c == "." {
			t.Fatalf("%v: Resolve(%q) = %q has a %q component", r.Style(), p, got, c)
		}
	}
	other := "/"
	if r.Style() == POSIX {
		other = `\`
	}
	if strings.Contains(got, other) || strings.Contains(got, sep+sep) || strings.HasSuffix(got, sep) {
		t.Fatalf("%v: Resolve(%q) = %q is not clean", r.Style(), p, got)
	}
	// Nothing but the root's spelling changes: the input's components
	// (drive dropped) are the result's components.
	in := p
	if r.Style() == Windows && len(in) >= 2 && in[1] == ':' {
		in = in[2:]
	}
	inComps, gotComps := splitComps(in), splitComps(got)
	if r.Style() == Windows {
		gotComps = gotComps[1:] // the drive
	}
	if len(inComps) != len(gotComps) {
		t.Fatalf("%v: Resolve(%q) = %q changed the components", r.Style(), p, got)
	}
	rootLen := len(splitComps(r.Dir()))
	if r.Style() == Windows {
		rootLen--
	}
	for i := range inComps {
		same := inComps[i] == gotComps[i] || i < rootLen && r.Style() == Windows && strings.EqualFold(inComps[i], gotComps[i])
		if !same {
			t.Fatalf("%v: Resolve(%q) = %q changed component %q to %q", r.Style(), p, got, inComps[i], gotComps[i])
		}
		if r.Style() == Windows {
			c := gotComps[i]
			if isDOSDeviceName(c) || strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") || strings.ContainsAny(c, `:<>"|?*`) {
				t.Fatalf("%v: Resolve(%q) = %q kept the component %q", r.Style(), p, got, c)
			}
		}
	}
	again, err := r.Resolve(got)
	if err != nil || again != got {
		t.Fatalf("%v: Resolve(%q) = %q but Resolve(%q) = %q, %v", r.Style(), p, got, got, again, err)
	}
	if err := r.CheckLinks(p, newFakeFS(r.Style())); err != nil {
		t.Fatalf("%v: CheckLinks(%q) on an empty file system: %v", r.Style(), p, err)
	}
}

// splitComps splits at both separators, dropping empty and "." components.
func splitComps(s string) []string {
	var out []string
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c != "." {
			out = append(out, c)
		}
	}
	return out
}

// FuzzCheckLinks puts a link with a fuzzed target just below the root and
// checks that CheckLinks only lets it through when the target, read the
// way the style's system reads it, stays in the root.
func FuzzCheckLinks(f *testing.F) {
	for _, s := range []string{
		`C:\var\lib\kubelet\data`, `C:\Windows`, `..\x`, `data\..\..\x`, `\\?\UNC\srv\share\`,
		`\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`, `\??\C:\var\lib\kubelet\x`, `\var\lib\kubelet`,
		"/var/lib/kubelet/data", "../kubelet/x", "/etc", "./x/../..", `C:/var/lib/kubelet/./x/`, "",
	} {
		f.Add(s)
	}
	win, posix := mustRoot(f, winRootDir, Windows), mustRoot(f, posixRootDir, POSIX)
	f.Fuzz(func(t *testing.T, target string) {
		for _, r := range []*Root{win, posix} {
			sep := r.Style().separator()
			fsys := newFakeFS(r.Style()).symlink(r.Dir()+sep+"a", target)
			err := r.CheckLinks(r.Dir()+sep+"a"+sep+"b"+sep+"c", fsys)
			if err != nil {
				if !errors.Is(err, ErrLinkEscapes) {
					t.Fatalf("%v: target %q: %v, want nil or ErrLinkEscapes", r.Style(), target, err)
				}
				continue
			}
			if !targetInside(r, target) {
				t.Fatalf("%v: CheckLinks let a link to %q through", r.Style(), target)
			}
		}
	})
}

// targetInside is an independent, simpler model of where a link at
// <root>/a pointing to target leads: inside the root (or the root) or not.
// It only needs to be right for targets without inner ".." components,
// the only ones CheckLinks follows.
func targetInside(r *Root, target string) bool {
	if r.Style() == POSIX {
		p := target
		if !strings.HasPrefix(p, "/") {
			p = r.Dir() + "/" + p
		}
		p = path.Clean(p) // lexical
		return p == r.Dir() || strings.HasPrefix(p, r.Dir()+"/")
	}
	c := CanonicalTarget(target)
	if strings.HasPrefix(c, `\\?\volume{`) {
		return true // a mount point: the directory stays in place
	}
	root := CanonicalTarget(r.Dir())
	switch {
	case strings.HasPrefix(c, `\\`):
		return false
	case len(c) >= 2 && c[1] == ':':
	case strings.HasPrefix(c, `\`):
		c = root[:2] + c
	default:
		c = root + `\` + c
	}
	parts := []string{}
	for _, s := range strings.Split(c, `\`) {
		switch s {
		case "", ".":
		case "..":
			if len(parts) == 0 {
				return false
			}
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, s)
		}
	}
	c = strings.Join(parts, `\`)
	return c == root || strings.HasPrefix(c, root+`\`)
}

// TestFuzzCorpusHasSeeds checks that every f.Add seed is also in the
// checked-in corpus, in Go's corpus file format.
func TestFuzzCorpusHasSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzResolve")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	inCorpus := map[string]bool{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "string(") || !strings.HasSuffix(lines[1], ")") {
			t.Fatalf("%s: not a one-string corpus file: %q", e.Name(), data)
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		inCorpus[s] = true
	}
	for _, s := range fuzzSeeds {
		if !inCorpus[s] {
			t.Errorf("seed %q is missing from %s", s, dir)
		}
	}
	if len(inCorpus) < 15 {
		t.Errorf("%s holds %d inputs, want at least 15", dir, len(inCorpus))
	}
}
