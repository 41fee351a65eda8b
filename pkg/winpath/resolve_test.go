package winpath

import (
	"errors"
	"strings"
	"testing"
)

const (
	winRootDir   = `C:\var\lib\kubelet`
	posixRootDir = "/var/lib/kubelet"
	sha          = "4f1e0b3c9d2a7e6f5b8c1d0e9f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
	podUID       = "7c9d3e2a-5b1f-4d6e-8a0b-2c3d4e5f6a7b"
)

func mustRoot(t testing.TB, dir string, style Style) *Root {
	t.Helper()
	r, err := NewRoot(dir, style)
	if err != nil {
		t.Fatalf("NewRoot(%q, %v): %v", dir, style, err)
	}
	return r
}

type resolveCase struct {
	name string
	in   string
	want string // expected result when err is nil
	err  error  // expected sentinel
}

func runResolveCases(t *testing.T, r *Root, cases []resolveCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %v", tc.in, got, err, tc.err)
				}
				var e *Error
				if !errors.As(err, &e) || e.Path != tc.in {
					t.Fatalf("Resolve(%q) error %#v is not an *Error naming the path", tc.in, err)
				}
				if got != "" {
					t.Fatalf("Resolve(%q) returned %q with an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): unexpected error %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
			}
			again, err := r.Resolve(got)
			if err != nil || again != got {
				t.Fatalf("Resolve(Resolve(%q)) = %q, %v; want %q (idempotent)", tc.in, again, err, got)
			}
		})
	}
}

func TestResolveWindows(t *testing.T) {
	r := mustRoot(t, winRootDir, Windows)
	staging := `\plugins\kubernetes.io\csi\drv.example.com\` + sha + `\globalmount`
	target := `\pods\` + podUID + `\volumes\kubernetes.io~csi\pv-1\mount`
	long := `\pods\` + strings.Repeat(`abcdefghij\`, 40) + "mount" // > 260 characters
	runResolveCases(t, r, []resolveCase{
		// Accepted.
		{name: "staging root-relative", in: `\var\lib\kubelet` + staging, want: winRootDir + staging},
		{name: "staging with drive", in: `C:\var\lib\kubelet` + staging, want: winRootDir + staging},
		{name: "target lower-case drive", in: `c:\var\lib\kubelet` + target, want: winRootDir + target},
		{name: "mixed separators", in: `C:\var\lib\kubelet/pods/x`, want: `C:\var\lib\kubelet\pods\x`},
		{name: "forward slashes", in: `C:/var/lib/kubelet/pods/x`, want: `C:\var\lib\kubelet\pods\x`},
		{name: "csi-sanity style", in: winRootDir + `/csi-mount/target`, want: `C:\var\lib\kubelet\csi-mount\target`},
		{name: "root in other case keeps root spelling", in: `C:\VAR\LIB\KUBELET\pods\x`, want: `C:\var\lib\kubelet\pods\x`},
		{name: "caller case kept below root", in: `C:\var\lib\kubelet\Pods\X`, want: `C:\var\lib\kubelet\Pods\X`},
		{name: "repeated separators and dots", in: `C:\var\\lib\.\kubelet\\pods\.\x\`, want: `C:\var\lib\kubelet\pods\x`},
		{name: "longer than MAX_PATH", in: winRootDir + long, want: winRootDir + long},
		{name: "component named device", in: winRootDir + `\pods\u\volumes\kubernetes.io~csi\device\mount`, want: winRootDir + `\pods\u\volumes\kubernetes.io~csi\device\mount`},
		{name: "not a device name", in: winRootDir + `\com10\console\lpt\nul0`, want: winRootDir + `\com10\console\lpt\nul0`},
		{name: "leading space and dot", in: winRootDir + `\ x\.y`, want: winRootDir + `\ x\.y`},
		{name: "non-ASCII", in: winRootDir + `\pods\données`, want: winRootDir + `\pods\données`},

		// Empty, characters.
		{name: "empty", in: "", err: ErrEmpty},
		{name: "NUL", in: winRootDir + "\\a\x00b", err: ErrInvalidChars},
		{name: "tab", in: winRootDir + "\\a\tb", err: ErrInvalidChars},
		{name: "DEL", in: winRootDir + "\\a\x7fb", err: ErrInvalidChars},
		{name: "C1 control", in: winRootDir + "\\a\u0085b", err: ErrInvalidChars},
		{name: "invalid UTF-8", in: winRootDir + "\\a\xffb", err: ErrInvalidChars},
		{name: "less than", in: winRootDir + `\a<b`, err: ErrInvalidChars},
		{name: "greater than", in: winRootDir + `\a>b`, err: ErrInvalidChars},
		{name: "double quote", in: winRootDir + `\a"b`, err: ErrInvalidChars},
		{name: "pipe", in: winRootDir + `\a|b`, err: ErrInvalidChars},
		{name: "question mark", in: winRootDir + `\a?b`, err: ErrInvalidChars},
		{name: "asterisk", in: winRootDir + `\a*b`, err: ErrInvalidChars},
		{name: "alternate data stream", in: winRootDir + `\x:stream`, err: ErrInvalidChars},
		{name: "default stream", in: winRootDir + `\x::$DATA`, err: ErrInvalidChars},
		// A component starting with ':' names an alternate data stream of
		// its parent directory (pods\:stream is a stream of pods).
		{name: "stream of the parent directory", in: winRootDir + `\pods\:stream`, err: ErrInvalidChars},
		{name: "stream of the parent directory, last", in: winRootDir + `\pods\:stream\x`, err: ErrInvalidChars},
		// A forbidden character as the first character of a name.
		{name: "leading less than", in: winRootDir + `\<a`, err: ErrInvalidChars},
		{name: "leading asterisk", in: winRootDir + `\pods\*`, err: ErrInvalidChars},
		{name: "leading question mark", in: winRootDir + `\?x`, err: ErrInvalidChars},
		{name: "trailing dot in root component", in: `C:\var\lib\kubelet.\x`, err: ErrInvalidChars},
		{name: "trailing dot below root", in: winRootDir + `\pods.\x`, err: ErrInvalidChars},
		{name: "trailing space", in: winRootDir + `\x `, err: ErrInvalidChars},
		{name: "three dots", in: winRootDir + `\...\x`, err: ErrInvalidChars},

		// Traversal.
		{name: "dotdot escaping", in: winRootDir + `\..\..\Windows`, err: ErrTraversal},
		{name: "dotdot staying inside", in: winRootDir + `\x\..\y`, err: ErrTraversal},
		{name: "dotdot back into root", in: winRootDir + `\..\kubelet\x`, err: ErrTraversal},
		{name: "mixed separator traversal", in: `C:\var\lib\kubelet/..\..\Windows`, err: ErrTraversal},
		{name: "forward slash traversal", in: `C:/var/lib/kubelet/../../Windows`, err: ErrTraversal},
		{name: "trailing dotdot", in: `\var\lib\kubelet\x\..`, err: ErrTraversal},

		// UNC and device paths.
		{name: "UNC share", in: `\\server\share`, err: ErrUNC},
		{name: "UNC with root path", in: `\\server\share\var\lib\kubelet\x`, err: ErrUNC},
		{name: "UNC forward slashes", in: `//server/share/x`, err: ErrUNC},
		{name: "UNC mixed", in: `\/server\share`, err: ErrUNC},
		{name: "long path prefix", in: `\\?\C:\var\lib\kubelet\x`, err: ErrDevicePath},
		{name: "long UNC prefix", in: `\\?\UNC\server\share\x`, err: ErrDevicePath},
		{name: "device namespace", in: `\\.\PhysicalDrive0`, err: ErrDevicePath},
		{name: "device namespace drive", in: `\\.\C:\var\lib\kubelet\x`, err: ErrDevicePath},
		{name: "GLOBALROOT", in: `\\?\GLOBALROOT\Device\HarddiskVolume1`, err: ErrDevicePath},
		{name: "forward slash long prefix", in: `//?/C:/var/lib/kubelet/x`, err: ErrDevicePath},
		{name: "forward slash device", in: `//./pipe/x`, err: ErrDevicePath},
		{name: "bare device prefix", in: `\\.`, err: ErrDevicePath},
		{name: "NT object namespace", in: `\??\C:\var\lib\kubelet\x`, err: ErrDevicePath},
		{name: "NT object namespace slashes", in: `/??/C:/var/lib/kubelet/x`, err: ErrDevicePath},
		{name: "NT device path", in: `\Device\HarddiskVolume1\var\lib\kubelet\x`, err: ErrDevicePath},
		{name: "GLOBALROOT component", in: winRootDir + `\GlobalRoot\x`, err: ErrDevicePath},
		{name: "con", in: winRootDir + `\con`, err: ErrDevicePath},
		{name: "CON with extension", in: winRootDir + `\CON.txt`, err: ErrDevicePath},
		{name: "nul inside", in: winRootDir + `\nul\x`, err: ErrDevicePath},
		{name: "prn", in: winRootDir + `\Prn`, err: ErrDevicePath},
		{name: "aux space extension", in: winRootDir + `\aux .log`, err: ErrDevicePath},
		{name: "com1", in: winRootDir + `\com1`, err: ErrDevicePath},
		{name: "COM9 extension", in: winRootDir + `\COM9.tar.gz`, err: ErrDevicePath},
		// COM0 and LPT0 are rejected on purpose (isDOSDeviceName).
		{name: "com0", in: winRootDir + `\COM0`, err: ErrDevicePath},
		{name: "lpt0 extension", in: winRootDir + `\lpt0.log`, err: ErrDevicePath},
		{name: "lpt5", in: winRootDir + `\LpT5`, err: ErrDevicePath},
		{name: "com superscript", in: winRootDir + `\COM¹`, err: ErrDevicePath},
		{name: "lpt superscript", in: winRootDir + `\lpt³.txt`, err: ErrDevicePath},
		{name: "conin$", in: winRootDir + `\conin$`, err: ErrDevicePath},
		{name: "CONOUT$", in: winRootDir + `\CONOUT$`, err: ErrDevicePath},

		// Not absolute.
		{name: "drive-relative", in: `C:foo`, err: ErrNotAbsolute},
		{name: "drive-relative root path", in: `C:var\lib\kubelet\x`, err: ErrNotAbsolute},
		{name: "bare drive", in: `C:`, err: ErrNotAbsolute},
		{name: "relative", in: `some/path`, err: ErrNotAbsolute},
		{name: "relative dot", in: `.\var\lib\kubelet\x`, err: ErrNotAbsolute},
		{name: "digit drive", in: `1:\var\lib\kubelet\x`, err: ErrNotAbsolute},

		// Outside the root.
		{name: "prefix trick", in: `C:\var\lib\kubelet2\x`, err: ErrOutsideRoot},
		{name: "root itself", in: `C:\var\lib\kubelet`, err: ErrOutsideRoot},
		{name: "root with separator", in: `c:\VAR\lib\kubelet\`, err: ErrOutsideRoot},
		{name: "root root-relative dot", in: `\var\lib\kubelet\.`, err: ErrOutsideRoot},
		{name: "parent of root", in: `C:\var\lib`, err: ErrOutsideRoot},
		{name: "drive root", in: `C:\`, err: ErrOutsideRoot},
		{name: "separator only", in: `\`, err: ErrOutsideRoot},
		{name: "other drive", in: `D:\var\lib\kubelet\x`, err: ErrOutsideRoot},
		{name: "elsewhere", in: `C:\Windows\System32`, err: ErrOutsideRoot},
		{name: "kelvin sign", in: "C:\\var\\lib\\\u212Aubelet\\x", err: ErrOutsideRoot},

		// Length.
		{name: "too long", in: winRootDir + strings.Repeat(`\abcdefghi`, 3300), err: ErrTooLong},
		{name: "too long once drive added", in: `\var\lib\kubelet\` + strings.Repeat("a", maxPathLen-len(`\var\lib\kubelet\`)), err: ErrTooLong},
	})
}

func TestResolveWindowsLengthLimit(t *testing.T) {
	r := mustRoot(t, winRootDir, Windows)
	fill := func(n int) string { return winRootDir + `\` + strings.Repeat("a", n-len(winRootDir)-1) }
	if _, err := r.Resolve(fill(maxPathLen)); err != nil {
		t.Fatalf("Resolve of a %d-character path: %v", maxPathLen, err)
	}
	if _, err := r.Resolve(fill(maxPathLen + 1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Resolve of a %d-character path: %v, want ErrTooLong", maxPathLen+1, err)
	}
	// Characters outside the BMP take two UTF-16 units, from U+10000 on.
	wide := winRootDir + `\` + strings.Repeat("😀", (maxPathLen-len(winRootDir))/2+1)
	if _, err := r.Resolve(wide); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Resolve of a path with %d UTF-16 units: %v, want ErrTooLong", pathLen(wide, Windows), err)
	}
	first := winRootDir + `\` + strings.Repeat("\U00010000", (maxPathLen-len(winRootDir))/2+1)
	if _, err := r.Resolve(first); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Resolve of a path of U+10000 with %d UTF-16 units: %v, want ErrTooLong", pathLen(first, Windows), err)
	}
	// Characters of the BMP take one unit however many bytes they take.
	bmp := winRootDir + `\` + strings.Repeat("\u20ac", maxPathLen-len(winRootDir)-1)
	if _, err := r.Resolve(bmp); err != nil {
		t.Fatalf("Resolve of a path of %d UTF-16 units (%d bytes): %v", pathLen(bmp, Windows), len(bmp), err)
	}
}

// TestResolvePOSIXLengthLimit: the POSIX style counts bytes, as Linux does,
// not UTF-16 units.
func TestResolvePOSIXLengthLimit(t *testing.T) {
	r := mustRoot(t, posixRootDir, POSIX)
	p := posixRootDir + "/" + strings.Repeat("é", (maxPathLen-len(posixRootDir))/2+1)
	if _, err := r.Resolve(p); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Resolve of a POSIX path of %d bytes: %v, want ErrTooLong", len(p), err)
	}
}

// TestASCIILetters pins the edges of the ASCII letter ranges the drive
// letter and the case-insensitive comparisons rely on.
func TestASCIILetters(t *testing.T) {
	for _, b := range []byte("azAZ") {
		if !isASCIILetter(b) {
			t.Errorf("isASCIILetter(%q) = false", b)
		}
	}
	for _, b := range []byte("@[`{09:") {
		if isASCIILetter(b) {
			t.Errorf("isASCIILetter(%q) = true", b)
		}
	}
	for in, want := range map[byte]byte{'A': 'a', 'Z': 'z', 'a': 'a', '@': '@', '[': '['} {
		if got := lowerASCII(in); got != want {
			t.Errorf("lowerASCII(%q) = %q, want %q", in, got, want)
		}
	}
	for _, drive := range []string{`a:\k`, `Z:\k`} {
		if _, err := NewRoot(drive, Windows); err != nil {
			t.Errorf("NewRoot(%s): %v", drive, err)
		}
	}
}

func TestResolvePOSIX(t *testing.T) {
	r := mustRoot(t, posixRootDir, POSIX)
	staging := "/plugins/kubernetes.io/csi/drv.example.com/" + sha + "/globalmount"
	target := "/pods/" + podUID + "/volumes/kubernetes.io~csi/pv-1/mount"
	runResolveCases(t, r, []resolveCase{
		{name: "staging", in: posixRootDir + staging, want: posixRootDir + staging},
		{name: "target", in: posixRootDir + target, want: posixRootDir + target},
		{name: "backslashes are separators", in: `/var/lib/kubelet\pods\x`, want: "/var/lib/kubelet/pods/x"},
		{name: "csi-sanity style", in: posixRootDir + "/csi-mount/target", want: posixRootDir + "/csi-mount/target"},
		{name: "repeated separators and dots", in: "/var//lib/./kubelet/pods/./x/", want: "/var/lib/kubelet/pods/x"},
		{name: "colon allowed", in: posixRootDir + "/x:stream", want: posixRootDir + "/x:stream"},
		{name: "windows device names are plain", in: posixRootDir + "/con/nul.txt", want: posixRootDir + "/con/nul.txt"},
		{name: "trailing dot and windows chars allowed", in: posixRootDir + "/x./a*b?", want: posixRootDir + "/x./a*b?"},
		{name: "GLOBALROOT is a plain name", in: posixRootDir + "/GLOBALROOT", want: posixRootDir + "/GLOBALROOT"},

		{name: "empty", in: "", err: ErrEmpty},
		{name: "NUL", in: posixRootDir + "/a\x00b", err: ErrInvalidChars},
		{name: "newline", in: posixRootDir + "/a\nb", err: ErrInvalidChars},
		{name: "invalid UTF-8", in: posixRootDir + "/a\xc3", err: ErrInvalidChars},
		{name: "relative", in: "var/lib/kubelet/x", err: ErrNotAbsolute},
		{name: "windows path", in: `C:\var\lib\kubelet\x`, err: ErrNotAbsolute},
		{name: "dotdot escaping", in: posixRootDir + "/../../etc", err: ErrTraversal},
		{name: "dotdot staying inside", in: posixRootDir + "/x/../y", err: ErrTraversal},
		{name: "backslash traversal", in: `/var/lib/kubelet\..\..\etc`, err: ErrTraversal},
		{name: "mixed traversal", in: `/var/lib/kubelet/..\..\etc`, err: ErrTraversal},
		{name: "double leading separator", in: "//var/lib/kubelet/x", err: ErrUNC},
		{name: "triple leading separator", in: "///var/lib/kubelet/x", err: ErrUNC},
		{name: "UNC backslashes", in: `\\server\share`, err: ErrUNC},
		{name: "long path prefix", in: `\\?\C:\x`, err: ErrUNC},
		{name: "prefix trick", in: "/var/lib/kubelet2/x", err: ErrOutsideRoot},
		{name: "other case is another directory", in: "/VAR/LIB/KUBELET/pods/x", err: ErrOutsideRoot},
		{name: "root itself", in: posixRootDir, err: ErrOutsideRoot},
		{name: "root with separator", in: posixRootDir + "/", err: ErrOutsideRoot},
		{name: "slash", in: "/", err: ErrOutsideRoot},
		{name: "elsewhere", in: "/etc/passwd", err: ErrOutsideRoot},
		{name: "too long", in: posixRootDir + strings.Repeat("/abcdefghi", 3300), err: ErrTooLong},
	})
}

func TestResolveDriveRoot(t *testing.T) {
	r := mustRoot(t, `d:/`, Windows)
	runResolveCases(t, r, []resolveCase{
		{name: "root-relative takes root drive", in: `\x\y`, want: `d:\x\y`},
		{name: "drive spelling of root", in: `D:\x`, want: `d:\x`},
		{name: "drive root itself", in: `D:\`, err: ErrOutsideRoot},
		{name: "other drive", in: `C:\x`, err: ErrOutsideRoot},
	})
	p := mustRoot(t, "/", POSIX)
	runResolveCases(t, p, []resolveCase{
		{name: "anything absolute", in: "/etc", want: "/etc"},
		{name: "slash itself", in: "/", err: ErrOutsideRoot},
	})
}

func TestNewRoot(t *testing.T) {
	cases := []struct {
		name  string
		dir   string
		style Style
		want  string
		err   error
	}{
		{name: "windows clean", dir: `C:\var\lib\kubelet`, style: Windows, want: `C:\var\lib\kubelet`},
		{name: "windows slashes and trailing separator", dir: `c:/var//lib/./kubelet/`, style: Windows, want: `c:\var\lib\kubelet`},
		{name: "windows drive root", dir: `C:\`, style: Windows, want: `C:\`},
		{name: "posix clean", dir: "/var/lib/kubelet/", style: POSIX, want: "/var/lib/kubelet"},
		{name: "posix slash", dir: "/", style: POSIX, want: "/"},
		{name: "empty", dir: "", style: Windows, err: ErrEmpty},
		{name: "windows no drive", dir: `\var\lib\kubelet`, style: Windows, err: ErrNotAbsolute},
		{name: "windows relative", dir: `var\lib\kubelet`, style: Windows, err: ErrNotAbsolute},
		{name: "windows bare drive", dir: `C:`, style: Windows, err: ErrNotAbsolute},
		{name: "windows traversal", dir: `C:\var\..\kubelet`, style: Windows, err: ErrTraversal},
		{name: "windows UNC", dir: `\\server\share\kubelet`, style: Windows, err: ErrUNC},
		{name: "windows long path", dir: `\\?\C:\var\lib\kubelet`, style: Windows, err: ErrDevicePath},
		{name: "windows trailing dot", dir: `C:\var\lib\kubelet.`, style: Windows, err: ErrInvalidChars},
		{name: "posix relative", dir: "var/lib/kubelet", style: POSIX, err: ErrNotAbsolute},
		{name: "posix double separator", dir: "//var/lib/kubelet", style: POSIX, err: ErrUNC},
		{name: "posix traversal", dir: "/var/lib/../kubelet", style: POSIX, err: ErrTraversal},
		{name: "too long to hold anything", dir: "/" + strings.Repeat("a", maxPathLen-1), style: POSIX, err: ErrTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRoot(tc.dir, tc.style)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || r != nil {
					t.Fatalf("NewRoot(%q) = %v, %v; want error %v", tc.dir, r, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRoot(%q): %v", tc.dir, err)
			}
			if r.Dir() != tc.want || r.Style() != tc.style {
				t.Fatalf("NewRoot(%q) = %q (%v), want %q (%v)", tc.dir, r.Dir(), r.Style(), tc.want, tc.style)
			}
		})
	}
}

func TestNewRootUnknownStyle(t *testing.T) {
	r, err := NewRoot(posixRootDir, Style(7))
	if err == nil || r != nil {
		t.Fatalf("NewRoot with style 7 = %v, %v; want an error", r, err)
	}
}

func TestErrorRendering(t *testing.T) {
	r := mustRoot(t, winRootDir, Windows)
	in := `C:\x\..\y`
	_, err := r.Resolve(in)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Resolve(%q) error %v is not an *Error", in, err)
	}
	// The message quotes the path without doubling backslashes, then gives
	// the reason; the reason itself is free text.
	if want := `path "C:\x\..\y": `; !strings.HasPrefix(e.Error(), want) || e.Reason == "" {
		t.Fatalf("Error() = %q, want prefix %q and a reason", e.Error(), want)
	}

	quoted := []struct{ in, want string }{
		{in: `C:\a\b`, want: `"C:\a\b"`},
		{in: "a\"b", want: `"a\"b"`},
		{in: "a\x00b\nc", want: `"a\x00b\nc"`},
		{in: "a\xffb", want: `"a\xffb"`},
		{in: "données\u200b", want: `"données\u200b"`},
		{in: strings.Repeat("a", maxQuoted+10), want: `"` + strings.Repeat("a", maxQuoted) + `"... (522 bytes)`},
		{in: strings.Repeat("a", maxQuoted-1) + "é", want: `"` + strings.Repeat("a", maxQuoted-1) + `"... (513 bytes)`},
	}
	for _, q := range quoted {
		if got := quotePath(q.in); got != q.want {
			t.Errorf("quotePath(%q) = %s, want %s", q.in, got, q.want)
		}
	}
}

func TestStyleString(t *testing.T) {
	for s, want := range map[Style]string{Windows: "windows", POSIX: "posix", Style(9): "Style(9)"} {
		if got := s.String(); got != want {
			t.Errorf("Style(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	benches := []struct {
		name string
		root string
		sty  Style
		path string
	}{
		{name: "windows", root: winRootDir, sty: Windows, path: `\var\lib\kubelet\plugins\kubernetes.io\csi\drv.example.com\` + sha + `\globalmount`},
		{name: "posix", root: posixRootDir, sty: POSIX, path: posixRootDir + "/plugins/kubernetes.io/csi/drv.example.com/" + sha + "/globalmount"},
	}
	for _, bc := range benches {
		b.Run(bc.name, func(b *testing.B) {
			r := mustRoot(b, bc.root, bc.sty)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Resolve(bc.path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
