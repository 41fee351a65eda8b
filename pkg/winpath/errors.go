package winpath

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every *Error wraps exactly one of them.
var (
	// ErrEmpty: the path is the empty string.
	ErrEmpty = errors.New("empty path")
	// ErrNotAbsolute: the path is relative or drive-relative ("C:foo").
	ErrNotAbsolute = errors.New("path is not absolute")
	// ErrOutsideRoot: the path does not lie strictly below the root.
	ErrOutsideRoot = errors.New("path is outside the root")
	// ErrTraversal: the path has a ".." component.
	ErrTraversal = errors.New("path traversal")
	// ErrUNC: the path names a network share (\\server\share, //server/share).
	ErrUNC = errors.New("UNC path")
	// ErrDevicePath: the path uses a device or object namespace (\\?\, \\.\,
	// \??\, GLOBALROOT, \Device\) or names a DOS device (CON, NUL, COM1, ...).
	ErrDevicePath = errors.New("device path")
	// ErrInvalidChars: the path has control characters, invalid UTF-8,
	// characters Windows forbids in names, an alternate data stream, or a
	// component ending in a dot or a space.
	ErrInvalidChars = errors.New("invalid characters in path")
	// ErrTooLong: the path is longer than 32767 characters.
	ErrTooLong = errors.New("path too long")
	// ErrLinkEscapes: an ancestor of the path is a link (symlink, junction,
	// other reparse point) that leads outside the root, or whose target
	// cannot be read or understood.
	ErrLinkEscapes = errors.New("link escapes the root")
)

// Error describes a rejected path. It wraps one of the sentinels above.
type Error struct {
	// Path is the path as the caller passed it.
	Path string
	// Reason says what is wrong, in lower case, without the path.
	Reason string
	// Err is the sentinel.
	Err error
}

// maxQuoted bounds how much of a path Error() prints.
const maxQuoted = 512

// Error renders `path "C:\x\..\y": reason`. Backslashes are printed as they
// are (Windows paths stay readable); quotes, control characters and
// invalid UTF-8 are escaped so the message is safe to log. Very long paths
// are cut short; the Path field keeps the whole path.
func (e *Error) Error() string {
	return "path " + quotePath(e.Path) + ": " + e.Reason
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func reject(path string, sentinel error, reason string) *Error {
	return &Error{Path: path, Reason: reason, Err: sentinel}
}

// quotePath quotes p like %q, except that backslashes are not doubled.
func quotePath(p string) string {
	s := p
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > maxQuoted-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == '"':
			b.WriteString(`\"`)
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRuneToASCII(r) // 'x' with escapes
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	b.WriteByte('"')
	if len(s) < len(p) {
		b.WriteString("... (" + strconv.Itoa(len(p)) + " bytes)")
	}
	return b.String()
}
