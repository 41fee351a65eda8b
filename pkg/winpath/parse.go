package winpath

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPathLen is the longest path Windows accepts (in UTF-16 code units),
// with or without the \\?\ prefix ("Maximum Path Length Limitation",
// learn.microsoft.com/windows/win32/fileio/maximum-file-path-limitation).
// The POSIX style applies the same bound in bytes.
const maxPathLen = 32767

// parsed is a path broken into its parts. For the Windows style drive is
// "X:" for a drive-absolute path and "" for a root-relative one (\x\y);
// for POSIX it is always "". comps holds the components, with empty and
// "." components dropped; it never holds "..".
type parsed struct {
	drive string
	comps []string
}

// checkText rejects empty, over-long, non-UTF-8 and control-character
// paths. Both styles share it.
func checkText(p string, style Style) *Error {
	if p == "" {
		return reject(p, ErrEmpty, "is empty")
	}
	if len(p) > 4*maxPathLen {
		// Fast bound: more than 4 bytes per UTF-16 unit is impossible.
		return reject(p, ErrTooLong, "is longer than 32767 characters")
	}
	if pathLen(p, style) > maxPathLen {
		return reject(p, ErrTooLong, "is longer than 32767 characters")
	}
	for i, r := range p {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(p[i:]); size == 1 {
				return reject(p, ErrInvalidChars, "is not valid UTF-8")
			}
		}
		if unicode.IsControl(r) {
			return reject(p, ErrInvalidChars, "has a control character")
		}
	}
	return nil
}

// pathLen is the length Windows (UTF-16 code units) or Linux (bytes) sees.
func pathLen(p string, style Style) int {
	if style != Windows {
		return len(p)
	}
	n := 0
	for _, r := range p {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// parse applies the grammar of style to p. It does not know the root.
func parse(p string, style Style) (parsed, *Error) {
	if err := checkText(p, style); err != nil {
		return parsed{}, err
	}
	if style == Windows {
		return parseWindows(p)
	}
	return parsePOSIX(p)
}

func parsePOSIX(p string) (parsed, *Error) {
	s := strings.ReplaceAll(p, `\`, "/")
	if !strings.HasPrefix(s, "/") {
		return parsed{}, reject(p, ErrNotAbsolute, "does not start with '/'")
	}
	if strings.HasPrefix(s, "//") {
		return parsed{}, reject(p, ErrUNC, "starts with two separators")
	}
	var out parsed
	for _, c := range strings.Split(s, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return parsed{}, reject(p, ErrTraversal, `has a ".." component`)
		}
		out.comps = append(out.comps, c)
	}
	return out, nil
}

func parseWindows(p string) (parsed, *Error) {
	s := strings.ReplaceAll(p, "/", `\`)
	if strings.HasPrefix(s, `\\`) {
		if len(s) >= 3 && (s[2] == '?' || s[2] == '.') && (len(s) == 3 || s[3] == '\\') {
			return parsed{}, reject(p, ErrDevicePath, `uses the \\?\ or \\.\ namespace`)
		}
		return parsed{}, reject(p, ErrUNC, "names a network share")
	}
	if s == `\??` || strings.HasPrefix(s, `\??\`) {
		return parsed{}, reject(p, ErrDevicePath, `uses the \??\ object namespace`)
	}
	var out parsed
	rest := s
	switch {
	case len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]):
		if len(s) == 2 || s[2] != '\\' {
			return parsed{}, reject(p, ErrNotAbsolute, "is relative to the current directory of drive "+s[:2])
		}
		out.drive, rest = s[:2], s[2:]
	case s[0] == '\\':
		// Root-relative: the caller supplies the drive.
	default:
		return parsed{}, reject(p, ErrNotAbsolute, "has no drive letter and no leading separator")
	}
	for _, c := range strings.Split(rest, `\`) {
		switch c {
		case "", ".":
			continue
		case "..":
			return parsed{}, reject(p, ErrTraversal, `has a ".." component`)
		}
		if err := checkWindowsComponent(p, c); err != nil {
			return parsed{}, err
		}
		if out.drive == "" && len(out.comps) == 0 && equalFoldASCII(c, "Device") {
			return parsed{}, reject(p, ErrDevicePath, `starts with \Device\`)
		}
		out.comps = append(out.comps, c)
	}
	return out, nil
}

// checkWindowsComponent applies the per-name rules of the Windows style to
// one component c of path p (c is neither empty, "." nor "..").
func checkWindowsComponent(p, c string) *Error {
	if i := strings.IndexAny(c, `<>"|?*`); i >= 0 {
		return reject(p, ErrInvalidChars, "has the character "+quoteRune(c[i])+", which Windows forbids in names")
	}
	if strings.IndexByte(c, ':') >= 0 {
		return reject(p, ErrInvalidChars, "has a ':' outside the drive letter (alternate data stream)")
	}
	if last := c[len(c)-1]; last == '.' || last == ' ' {
		// Win32 path normalisation strips trailing dots and spaces, so
		// "kubelet." and "kubelet" name the same directory. Rejecting is
		// safer than emulating the stripping.
		return reject(p, ErrInvalidChars, "has a component ending in a dot or a space")
	}
	if isDOSDeviceName(c) {
		return reject(p, ErrDevicePath, "has a DOS device name as a component")
	}
	if equalFoldASCII(c, "GLOBALROOT") {
		return reject(p, ErrDevicePath, "has a GLOBALROOT component")
	}
	return nil
}

func quoteRune(b byte) string { return "'" + string(rune(b)) + "'" }

// isDOSDeviceName reports whether Win32 maps the name c to a device
// wherever it appears in a path: CON, PRN, AUX, NUL, CONIN$, CONOUT$,
// COM0-9, LPT0-9 and COM/LPT with a superscript 1, 2 or 3, in any case,
// with or without an extension and trailing spaces before it.
//
// Sources: "Naming Files, Paths, and Namespaces" (learn.microsoft.com/
// windows/win32/fileio/naming-a-file) lists the names, superscripts
// included; COM0 and LPT0 were added to that page later and golang/go#67245
// doubts that Windows reserves them, so we reject them to be safe. CONIN$
// and CONOUT$ open the console in CreateFile (fileapi CreateFileA,
// "Consoles").
func isDOSDeviceName(c string) bool {
	base := c
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimRight(base, " ")
	switch len(base) {
	case 3:
		for _, name := range []string{"CON", "PRN", "AUX", "NUL"} {
			if equalFoldASCII(base, name) {
				return true
			}
		}
	case 6:
		return equalFoldASCII(base, "CONIN$")
	case 7:
		return equalFoldASCII(base, "CONOUT$")
	}
	if len(base) < 4 || !(equalFoldASCII(base[:3], "COM") || equalFoldASCII(base[:3], "LPT")) {
		return false
	}
	switch n := base[3:]; n {
	case "\u00b9", "\u00b2", "\u00b3":
		return true
	default:
		return len(n) == 1 && '0' <= n[0] && n[0] <= '9'
	}
}

func isASCIILetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// equalFoldASCII compares a and b ignoring the case of ASCII letters only.
// Other characters must match exactly.
//
// Why not strings.EqualFold: it folds more than NTFS does. EqualFold says
// "\u212Aubelet" (KELVIN SIGN) equals "kubelet", but NTFS compares names by
// upcasing each UTF-16 unit with the volume's $UpCase table, and K (Kelvin)
// upcases to itself, so NTFS sees two different directories. Folding less
// than the file system only ever makes us reject (a path or link target
// that is really inside looks outside); folding more could let a link
// target outside the root look inside. The NTFS $UpCase table for
// non-ASCII letters depends on the Windows version that formatted the
// volume, so we do not try to emulate it.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}
