package winpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// FS is the part of a file system CheckLinks reads.
type FS interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

// DefaultFS is the machine's file system (os.Lstat, os.Readlink).
var DefaultFS FS = osFS{}

type osFS struct{}

func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (osFS) Readlink(name string) (string, error)   { return os.Readlink(name) }

// maxLinks bounds the links CheckLinks follows for one path (a loop or a
// deliberately long chain fails closed). Linux stops at 40 (MAXSYMLINKS)
// and Windows at 63 reparse points per open, so no working path needs more.
const maxLinks = 64

// CheckLinks resolves p (see Resolve) and walks its existing ancestors,
// from just below the root down to p's parent, through fsys (DefaultFS if
// nil). It fails with an *Error wrapping ErrLinkEscapes if one of them is a
// link whose target lies outside the root. p itself is not checked: it may
// legitimately be a link or a mount point (a published target, an SMB
// staging link).
//
// What counts as a link: anything Lstat reports as fs.ModeSymlink or
// fs.ModeIrregular. The second matters on Windows: since Go 1.23
// (GODEBUG winsymlink=1, the default) junctions and volume mount points
// report ModeIrregular rather than ModeSymlink.
//
// How targets are judged, all without further file-system access:
//   - a target inside the root, or the root itself, is followed: the walk
//     continues through the target's components, checking each in turn
//     (chains of links are followed, up to 64 links);
//   - a relative target is resolved against the link's real directory; it
//     may start with ".." components but must not climb above the root;
//   - a ".." after a normal component in a target, or any ".." in an
//     absolute target, fails closed: whether "a\..\b" means "b" (lexical,
//     Win32) or "the parent of a's target" (POSIX) differs between systems;
//   - Windows: a volume GUID path (\\?\Volume{...}\, what Readlink returns
//     for a volume mount point) counts as a mount point, not a redirection:
//     the directory stays where it is and the walk continues below it. A
//     data disk mounted at, say, the kubelet pods directory must keep
//     working. UNC, device, drive-relative and other-drive targets fail;
//   - POSIX: only '/' separates components of a link target (that is what
//     Linux does), unlike request paths, where '\' separates too;
//   - a link whose target cannot be read, and an unreadable reparse point
//     that is not a link, fail closed.
//
// A missing component ends the walk without error, as does a component
// that is neither a directory nor a link. Any other Lstat error is returned
// wrapped (it is not an *Error).
func (r *Root) CheckLinks(p string, fsys FS) error {
	if fsys == nil {
		fsys = DefaultFS
	}
	_, rel, rerr := r.resolve(p)
	if rerr != nil {
		return rerr
	}
	queue := append([]string(nil), rel[:len(rel)-1]...) // ancestors only
	var cur []string                                    // real (link-free) directory below the root
	links := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == ".." {
			if len(cur) == 0 {
				return reject(p, ErrLinkEscapes, "a relative link target climbs above the root")
			}
			cur = cur[:len(cur)-1]
			continue
		}
		name := r.join(append(cur[:len(cur):len(cur)], c))
		fi, err := fsys.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check links of %s: %w", quotePath(p), err)
		}
		mode := fi.Mode()
		if mode&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
			if !mode.IsDir() {
				return nil // nothing can exist below a file
			}
			cur = append(cur, c)
			continue
		}
		links++
		if links > maxLinks {
			return reject(p, ErrLinkEscapes, fmt.Sprintf("more than %d links on the way (a loop?)", maxLinks))
		}
		target, err := fsys.Readlink(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since Lstat
		}
		if err != nil {
			return reject(p, ErrLinkEscapes, "cannot read the target of "+quotePath(name)+": "+err.Error())
		}
		t, why := r.parseTarget(target)
		if why != "" {
			return reject(p, ErrLinkEscapes, quotePath(name)+" links to "+quotePath(target)+", which "+why)
		}
		switch {
		case t.mountPoint:
			cur = append(cur, c)
		case t.absolute:
			cur = nil
			queue = append(t.comps, queue...)
		default:
			queue = append(t.comps, queue...)
		}
	}
	return nil
}

// linkTarget is a link target CheckLinks may follow.
type linkTarget struct {
	mountPoint bool     // a volume GUID path (Windows): the directory stays in place
	absolute   bool     // comps are below the root; otherwise relative to the link's directory
	comps      []string // no "." or ""; ".." only as a leading run of a relative target
}

// parseTarget classifies a link target. why is non-empty (the end of a
// sentence: "..., which <why>") when the target must not be followed.
func (r *Root) parseTarget(target string) (linkTarget, string) {
	if target == "" {
		return linkTarget{}, "is empty"
	}
	if r.style == POSIX {
		return r.classify(target, strings.HasPrefix(target, "/"), "", strings.Split(target, "/"))
	}
	s := strings.ReplaceAll(target, "/", `\`)
	if hasPrefixFoldASCII(s, `\??\`) {
		s = `\\?\` + s[4:] // NT form, as stored in the reparse data
	}
	if _, ok := VolumeGUIDPath(s); ok {
		return linkTarget{mountPoint: true}, ""
	}
	if hasPrefixFoldASCII(s, `\\?\UNC\`) {
		return linkTarget{}, "is a network share"
	}
	if strings.HasPrefix(s, `\\?\`) {
		s = s[4:]
		if !(len(s) >= 3 && isASCIILetter(s[0]) && s[1] == ':' && s[2] == '\\') {
			return linkTarget{}, "is in a device namespace"
		}
	}
	switch {
	case strings.HasPrefix(s, `\\`):
		return linkTarget{}, "is a network share or a device"
	case len(s) >= 2 && isASCIILetter(s[0]) && s[1] == ':':
		if len(s) == 2 || s[2] != '\\' {
			return linkTarget{}, "is relative to a drive's current directory"
		}
		return r.classify(target, true, s[:2], strings.Split(s[3:], `\`))
	case s[0] == '\\':
		return r.classify(target, true, r.drive, strings.Split(s[1:], `\`))
	default:
		return r.classify(target, false, "", strings.Split(s, `\`))
	}
}

// classify checks the components of a link target and, for an absolute
// one, that it lies in the root (or is the root).
func (r *Root) classify(target string, absolute bool, drive string, parts []string) (linkTarget, string) {
	var comps []string
	for _, c := range parts {
		switch c {
		case "", ".":
			continue
		case "..":
			if absolute || len(comps) > 0 && comps[len(comps)-1] != ".." {
				return linkTarget{}, `has a ".." that is not at the start of a relative target`
			}
		default:
			if r.style == Windows {
				if err := checkWindowsComponent(target, c); err != nil {
					return linkTarget{}, "is not a plain path (" + err.Reason + ")"
				}
			}
		}
		comps = append(comps, c)
	}
	if !absolute {
		return linkTarget{comps: comps}, ""
	}
	rel, ok := r.below(parsed{drive: drive, comps: comps})
	if !ok {
		return linkTarget{}, "is outside the root"
	}
	return linkTarget{absolute: true, comps: rel}, ""
}

func hasPrefixFoldASCII(s, prefix string) bool {
	return len(s) >= len(prefix) && equalFoldASCII(s[:len(prefix)], prefix)
}
