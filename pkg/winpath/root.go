package winpath

import (
	"fmt"
	"strconv"
	"strings"
)

// Style selects the path grammar.
type Style int

const (
	// Windows: drive-letter paths, '\' and '/' both separators, names
	// compared case-insensitively (ASCII letters; see equalFoldASCII).
	Windows Style = iota
	// POSIX: absolute '/'-rooted paths; '\' in a request path is treated
	// as a separator too (as Windows would), names compared
	// case-sensitively.
	POSIX
)

// String returns "windows" or "posix".
func (s Style) String() string {
	switch s {
	case Windows:
		return "windows"
	case POSIX:
		return "posix"
	}
	return "Style(" + strconv.Itoa(int(s)) + ")"
}

// separator returns the separator the style writes.
func (s Style) separator() string {
	if s == Windows {
		return `\`
	}
	return "/"
}

// Root is a confinement root: the kubelet directory. It is immutable and
// safe for concurrent use.
type Root struct {
	dir   string   // cleaned form, e.g. C:\var\lib\kubelet, C:\, /var/lib/kubelet, /
	style Style    //
	drive string   // "C:" (Windows), "" (POSIX)
	comps []string // components below the drive or '/'
}

// NewRoot returns the root dir, which must be absolute in style: "C:\..."
// for Windows (a drive letter is required, since root-relative request
// paths take the root's drive), "/..." for POSIX. It applies the same
// rules as Resolve (no "..", no UNC or device paths, ...) and stores the
// cleaned form: separators normalised and collapsed, "." components and a
// trailing separator removed, the caller's case kept. A rejected dir gives
// an *Error; an unknown style a plain error.
func NewRoot(dir string, style Style) (*Root, error) {
	if style != Windows && style != POSIX {
		return nil, fmt.Errorf("new root %s: unknown path style %d", quotePath(dir), int(style))
	}
	pp, err := parse(dir, style)
	if err != nil {
		return nil, err
	}
	if style == Windows && pp.drive == "" {
		return nil, reject(dir, ErrNotAbsolute, "has no drive letter")
	}
	r := &Root{style: style, drive: pp.drive, comps: pp.comps}
	r.dir = r.join(nil)
	if pathLen(r.dir, style) >= maxPathLen {
		return nil, reject(dir, ErrTooLong, "leaves no room for a path below it")
	}
	return r, nil
}

// Dir returns the cleaned root directory.
func (r *Root) Dir() string { return r.dir }

// Style returns the grammar of the root.
func (r *Root) Style() Style { return r.style }

// Join returns the path of names below the root, in the root's spelling
// and with the style's separator. Each name is one component (no
// separator); Join does not check them.
func (r *Root) Join(names ...string) string { return r.join(names) }

// join renders the root's drive and components followed by rel, in the
// root's own spelling.
func (r *Root) join(rel []string) string {
	sep := r.style.separator()
	var b strings.Builder
	b.WriteString(r.drive)
	b.WriteString(sep)
	for i, c := range r.comps {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(c)
	}
	for i, c := range rel {
		if i > 0 || len(r.comps) > 0 {
			b.WriteString(sep)
		}
		b.WriteString(c)
	}
	return b.String()
}

// equalName compares two names under the style's rules.
func (r *Root) equalName(a, b string) bool {
	if r.style == Windows {
		return equalFoldASCII(a, b)
	}
	return a == b
}

// below returns the components of pp below the root, or ok=false when pp
// is not the root or below it.
func (r *Root) below(pp parsed) (rel []string, ok bool) {
	if !r.equalName(pp.drive, r.drive) || len(pp.comps) < len(r.comps) {
		return nil, false
	}
	for i, c := range r.comps {
		if !r.equalName(pp.comps[i], c) {
			return nil, false
		}
	}
	return pp.comps[len(r.comps):], true
}

// Resolve normalises p and returns its cleaned absolute form if it lies
// strictly below the root; the root itself is rejected. It never touches
// the file system. The result uses the root's spelling for the root prefix
// and the caller's for the rest, with the style's separator. Resolving a
// result again returns it unchanged. Errors are *Error.
func (r *Root) Resolve(p string) (string, error) {
	out, _, err := r.resolve(p)
	if err != nil {
		return "", err
	}
	return out, nil
}

// resolve is Resolve that also returns the components below the root.
func (r *Root) resolve(p string) (string, []string, *Error) {
	pp, err := parse(p, r.style)
	if err != nil {
		return "", nil, err
	}
	if r.style == Windows && pp.drive == "" {
		pp.drive = r.drive
	}
	rel, ok := r.below(pp)
	if !ok {
		return "", nil, reject(p, ErrOutsideRoot, "is not below "+quotePath(r.dir))
	}
	if len(rel) == 0 {
		return "", nil, reject(p, ErrOutsideRoot, "is the root "+quotePath(r.dir)+" itself")
	}
	out := r.join(rel)
	if pathLen(out, r.style) > maxPathLen {
		return "", nil, reject(p, ErrTooLong, "is longer than 32767 characters once the drive is added")
	}
	return out, rel, nil
}
