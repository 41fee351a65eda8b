package winpath

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// fakeFS is an in-memory FS. Paths are looked up exactly as given (after
// lower-casing for the Windows style): CheckLinks only ever asks about
// paths whose directory part is free of links, so the fake never has to
// follow one.
type fakeFS struct {
	style   Style
	entries map[string]fakeEntry
	lstats  []string // every name passed to Lstat, in order
}

type fakeEntry struct {
	mode     fs.FileMode
	target   string // for links
	lstatErr error  // returned by Lstat
	readErr  error  // returned by Readlink
	notALink bool   // Readlink fails as for a reparse point that is no link
}

func newFakeFS(style Style) *fakeFS {
	return &fakeFS{style: style, entries: map[string]fakeEntry{}}
}

func (f *fakeFS) key(name string) string {
	if f.style == Windows {
		return strings.ToLower(name)
	}
	return name
}

func (f *fakeFS) dir(names ...string) *fakeFS {
	for _, n := range names {
		f.entries[f.key(n)] = fakeEntry{mode: fs.ModeDir | 0o755}
	}
	return f
}

func (f *fakeFS) file(name string) *fakeFS {
	f.entries[f.key(name)] = fakeEntry{mode: 0o644}
	return f
}

func (f *fakeFS) symlink(name, target string) *fakeFS {
	f.entries[f.key(name)] = fakeEntry{mode: fs.ModeSymlink | 0o777, target: target}
	return f
}

// reparse adds a Windows reparse point as Go >= 1.23 reports junctions and
// volume mount points: a directory with ModeIrregular.
func (f *fakeFS) reparse(name, target string) *fakeFS {
	f.entries[f.key(name)] = fakeEntry{mode: fs.ModeDir | fs.ModeIrregular | 0o777, target: target}
	return f
}

func (f *fakeFS) set(name string, e fakeEntry) *fakeFS {
	f.entries[f.key(name)] = e
	return f
}

func (f *fakeFS) Lstat(name string) (fs.FileInfo, error) {
	f.lstats = append(f.lstats, name)
	e, ok := f.entries[f.key(name)]
	if !ok {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	if e.lstatErr != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: e.lstatErr}
	}
	return fakeInfo{name: name, mode: e.mode}, nil
}

func (f *fakeFS) Readlink(name string) (string, error) {
	e, ok := f.entries[f.key(name)]
	switch {
	case !ok:
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrNotExist}
	case e.readErr != nil:
		return "", &fs.PathError{Op: "readlink", Path: name, Err: e.readErr}
	case e.mode&(fs.ModeSymlink|fs.ModeIrregular) == 0 || e.notALink:
		return "", &fs.PathError{Op: "readlink", Path: name, Err: errors.New("not a link")}
	}
	return e.target, nil
}

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

type linkCase struct {
	name string
	fs   func(f *fakeFS)
	path string // relative to the root, with the style's separator
	err  error  // nil: must succeed
}

func runLinkCases(t *testing.T, r *Root, cases []linkCase) {
	t.Helper()
	sep := r.Style().separator()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeFS(r.Style())
			tc.fs(f)
			p := r.Dir() + sep + tc.path
			err := r.CheckLinks(p, f)
			if tc.err == nil {
				if err != nil {
					t.Fatalf("CheckLinks(%q): %v (lstat calls %q)", p, err, f.lstats)
				}
			} else if !errors.Is(err, tc.err) {
				t.Fatalf("CheckLinks(%q) = %v, want %v (lstat calls %q)", p, err, tc.err, f.lstats)
			}
			for _, n := range f.lstats {
				if strings.EqualFold(n, p) {
					t.Fatalf("CheckLinks(%q) looked at the path itself", p)
				}
			}
		})
	}
}

func TestCheckLinksWindows(t *testing.T) {
	r := mustRoot(t, winRootDir, Windows)
	k := winRootDir + `\`
	volume := `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\`
	runLinkCases(t, r, []linkCase{
		{name: "no links", fs: func(f *fakeFS) { f.dir(k+"pods", k+`pods\u`, k+`pods\u\volumes`) }, path: `pods\u\volumes\mount`},
		{name: "nothing exists", fs: func(f *fakeFS) {}, path: `pods\u\mount`},
		{name: "single component", fs: func(f *fakeFS) { f.symlink(k+"x", `C:\Windows`) }, path: `x`},
		{name: "final component links outside", fs: func(f *fakeFS) {
			f.dir(k+"pods", k+`pods\u`).symlink(k+`pods\u\mount`, `C:\Windows`)
		}, path: `pods\u\mount`},
		{name: "ancestor links outside", fs: func(f *fakeFS) {
			f.dir(`C:\Windows`).symlink(k+"pods", `C:\Windows`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "deep ancestor links outside", fs: func(f *fakeFS) {
			f.dir(k+"pods", k+`pods\u`).symlink(k+`pods\u\volumes`, `C:\`)
		}, path: `pods\u\volumes\x\mount`, err: ErrLinkEscapes},
		{name: "ancestor junction outside", fs: func(f *fakeFS) { f.reparse(k+"pods", `C:\Windows\System32`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "ancestor links inside", fs: func(f *fakeFS) {
			f.dir(k+"data", k+`data\pods`, k+`data\pods\u`).symlink(k+"pods", k+`data\pods`)
		}, path: `pods\u\mount`},
		{name: "ancestor links inside in another case", fs: func(f *fakeFS) {
			f.dir(k+"data").symlink(k+"pods", `c:\VAR\LIB\KUBELET\data`)
		}, path: `pods\u\mount`},
		{name: "ancestor links to the root", fs: func(f *fakeFS) { f.symlink(k+"self", winRootDir+`\`) }, path: `self\u\mount`},
		{name: "long form inside", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", `\\?\`+k+"data") }, path: `pods\u\mount`},
		{name: "NT form inside", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", `\??\`+k+"data") }, path: `pods\u\mount`},
		{name: "NT form outside", fs: func(f *fakeFS) { f.symlink(k+"pods", `\??\C:\Windows`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "root-relative inside", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", `\var\lib\kubelet\data`) }, path: `pods\u\mount`},
		{name: "root-relative outside", fs: func(f *fakeFS) { f.symlink(k+"pods", `\Windows`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "forward slashes inside", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", `C:/var/lib/kubelet/data`) }, path: `pods\u\mount`},
		{name: "chain inside then outside", fs: func(f *fakeFS) {
			f.dir(k+"b").symlink(k+"a", k+"b").symlink(k+`b\c`, `C:\Windows`)
		}, path: `a\c\d\mount`, err: ErrLinkEscapes},
		{name: "chain inside then inside", fs: func(f *fakeFS) {
			f.dir(k+"b", k+"d").symlink(k+"a", k+"b").symlink(k+`b\c`, `..\d`)
		}, path: `a\c\x\mount`},
		{name: "target checked on the real path", fs: func(f *fakeFS) {
			// a -> b; b\c is the link. The walk must Lstat b\c, not a\c.
			f.dir(k+"b").symlink(k+"a", k+"b").symlink(k+`b\c`, `D:\`).dir(k + `a\c`)
		}, path: `a\c\mount`, err: ErrLinkEscapes},
		{name: "relative inside", fs: func(f *fakeFS) {
			f.dir(k+"data", k+`data\pods`).symlink(k+"pods", `data\pods`)
		}, path: `pods\u\mount`},
		{name: "relative sibling", fs: func(f *fakeFS) {
			f.dir(k+"pods", k+`pods\other`).symlink(k+`pods\u`, `..\pods\other`)
		}, path: `pods\u\mount`},
		{name: "relative resolved against the link's directory", fs: func(f *fakeFS) {
			// pods\u -> ..\..\x climbs above the root from pods.
			f.dir(k+"pods").symlink(k+`pods\u`, `..\..\x`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "relative climbing out", fs: func(f *fakeFS) { f.symlink(k+"pods", `..\kubelet2`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "relative with inner dotdot", fs: func(f *fakeFS) {
			f.dir(k+"data", k+"x").symlink(k+"pods", `data\..\x`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "absolute with dotdot", fs: func(f *fakeFS) {
			f.dir(k+"x").symlink(k+"pods", k+`data\..\x`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "prefix trick", fs: func(f *fakeFS) { f.symlink(k+"pods", `C:\var\lib\kubelet2\pods`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "kelvin sign", fs: func(f *fakeFS) { f.symlink(k+"pods", "C:\\var\\lib\\\u212Aubelet\\pods") }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "other drive", fs: func(f *fakeFS) { f.symlink(k+"pods", `D:\var\lib\kubelet\pods`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "drive-relative", fs: func(f *fakeFS) { f.symlink(k+"pods", `C:data`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "UNC", fs: func(f *fakeFS) { f.symlink(k+"pods", `\\server\share\`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "long UNC", fs: func(f *fakeFS) { f.symlink(k+"pods", `\\?\UNC\server\share\`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "GLOBALROOT", fs: func(f *fakeFS) { f.symlink(k+"pods", `\\?\GLOBALROOT\Device\HarddiskVolume1\`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		// The \\?\ prefix followed by anything but a drive, UNC or volume
		// GUID path names an object in the device namespace (not a name in
		// the link's directory): a directory of that name inside the root
		// must not make it look followable.
		{name: "device namespace volume", fs: func(f *fakeFS) {
			f.dir(k+`HarddiskVolume1`, k+`HarddiskVolume1\x`).symlink(k+"pods", `\\?\HarddiskVolume1\x`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "device namespace physical drive", fs: func(f *fakeFS) {
			f.dir(k+`PhysicalDrive0`).symlink(k+"pods", `\\?\PhysicalDrive0`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "NT form device namespace", fs: func(f *fakeFS) {
			f.dir(k+`PhysicalDrive0`).symlink(k+"pods", `\??\PhysicalDrive0`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "device namespace too short for a drive", fs: func(f *fakeFS) {
			f.dir(k+`C:`).symlink(k+"pods", `\\?\C:`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "alternate data stream of the link's directory", fs: func(f *fakeFS) {
			f.dir(k+`:stream`).symlink(k+"pods", `:stream`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "trailing dot component", fs: func(f *fakeFS) { f.symlink(k+"pods", k+`data.\pods`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "device name component", fs: func(f *fakeFS) { f.symlink(k+"pods", `con`) }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "empty target", fs: func(f *fakeFS) { f.symlink(k+"pods", "") }, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "volume mount point stays in place", fs: func(f *fakeFS) {
			f.reparse(k+"pods", volume).dir(k + `pods\u`)
		}, path: `pods\u\mount`},
		{name: "walk continues below a volume mount point", fs: func(f *fakeFS) {
			f.reparse(k+"pods", volume).symlink(k+`pods\u`, `C:\Windows`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "NT form volume mount point", fs: func(f *fakeFS) {
			f.reparse(k+"pods", `\??\Volume{0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9}\`)
		}, path: `pods\u\mount`},
		{name: "path inside a volume", fs: func(f *fakeFS) {
			f.symlink(k+"pods", `\\?\Volume{0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9}\pods`)
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "loop", fs: func(f *fakeFS) { f.symlink(k+"a", k+"b").symlink(k+"b", k+"a") }, path: `a\x\mount`, err: ErrLinkEscapes},
		{name: "self loop", fs: func(f *fakeFS) { f.symlink(k+"a", `a`) }, path: `a\x\mount`, err: ErrLinkEscapes},
		{name: "dot target is the link's directory", fs: func(f *fakeFS) {
			f.symlink(k+"a", `.`).symlink(k+"x", `C:\Windows`)
		}, path: `a\x\mount`, err: ErrLinkEscapes},
		{name: "unreadable link", fs: func(f *fakeFS) {
			f.set(k+"pods", fakeEntry{mode: fs.ModeSymlink, readErr: fs.ErrPermission})
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "reparse point that is no link", fs: func(f *fakeFS) {
			f.set(k+"pods", fakeEntry{mode: fs.ModeDir | fs.ModeIrregular, notALink: true})
		}, path: `pods\u\mount`, err: ErrLinkEscapes},
		{name: "link removed after lstat", fs: func(f *fakeFS) {
			f.set(k+"pods", fakeEntry{mode: fs.ModeSymlink, readErr: fs.ErrNotExist})
		}, path: `pods\u\mount`},
		{name: "file ancestor ends the walk", fs: func(f *fakeFS) {
			f.dir(k+"pods").file(k+`pods\u`).symlink(k+`pods\u\x`, `C:\Windows`)
		}, path: `pods\u\x\mount`},
		{name: "missing ancestor ends the walk", fs: func(f *fakeFS) {
			f.dir(k+"pods").symlink(k+`pods\u\x`, `C:\Windows`)
		}, path: `pods\u\x\mount`},
		{name: "invalid path", fs: func(f *fakeFS) {}, path: `pods\..\..\x`, err: ErrTraversal},
	})
}

// TestCheckLinksBound: a chain of exactly maxLinks links inside the root is
// followed; one more fails closed.
func TestCheckLinksBound(t *testing.T) {
	r := mustRoot(t, winRootDir, Windows)
	k := winRootDir + `\`
	chain := func(n int) *fakeFS {
		f := newFakeFS(Windows).dir(k + "end")
		for i := range n {
			next := fmt.Sprintf("%sl%d", k, i+1)
			if i == n-1 {
				next = k + "end"
			}
			f.symlink(fmt.Sprintf("%sl%d", k, i), next)
		}
		return f
	}
	if err := r.CheckLinks(k+`l0\mount`, chain(maxLinks)); err != nil {
		t.Fatalf("a chain of %d links: %v", maxLinks, err)
	}
	if err := r.CheckLinks(k+`l0\mount`, chain(maxLinks+1)); !errors.Is(err, ErrLinkEscapes) {
		t.Fatalf("a chain of %d links: %v, want ErrLinkEscapes", maxLinks+1, err)
	}
}

func TestCheckLinksPOSIX(t *testing.T) {
	r := mustRoot(t, posixRootDir, POSIX)
	k := posixRootDir + "/"
	runLinkCases(t, r, []linkCase{
		{name: "no links", fs: func(f *fakeFS) { f.dir(k+"pods", k+"pods/u") }, path: "pods/u/mount"},
		{name: "ancestor links outside", fs: func(f *fakeFS) { f.symlink(k+"pods", "/etc") }, path: "pods/u/mount", err: ErrLinkEscapes},
		{name: "ancestor links inside", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", k+"data") }, path: "pods/u/mount"},
		{name: "double slash absolute target", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", "//var/lib/kubelet//data/") }, path: "pods/u/mount"},
		{name: "other case is outside", fs: func(f *fakeFS) { f.symlink(k+"pods", "/VAR/LIB/KUBELET/data") }, path: "pods/u/mount", err: ErrLinkEscapes},
		{name: "relative inside", fs: func(f *fakeFS) { f.dir(k+"data").symlink(k+"pods", "./data/") }, path: "pods/u/mount"},
		{name: "relative climbing out", fs: func(f *fakeFS) { f.symlink(k+"pods", "../../../etc") }, path: "pods/u/mount", err: ErrLinkEscapes},
		{name: "backslashes are part of the name", fs: func(f *fakeFS) {
			// On Linux "..\..\etc" is one odd name in the link's directory.
			f.dir(k+`..\..\etc`).symlink(k+"pods", `..\..\etc`)
		}, path: "pods/u/mount"},
		{name: "final component links outside", fs: func(f *fakeFS) {
			f.dir(k+"pods", k+"pods/u").symlink(k+"pods/u/mount", "/")
		}, path: "pods/u/mount"},
		{name: "windows target is relative on linux", fs: func(f *fakeFS) { f.symlink(k+"pods", `C:\Windows`) }, path: "pods/u/mount"},
	})
}

func TestCheckLinksLstatError(t *testing.T) {
	r := mustRoot(t, winRootDir, Windows)
	f := newFakeFS(Windows).set(winRootDir+`\pods`, fakeEntry{lstatErr: fs.ErrPermission})
	err := r.CheckLinks(winRootDir+`\pods\u\mount`, f)
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("CheckLinks = %v, want an error wrapping fs.ErrPermission", err)
	}
	var e *Error
	if errors.As(err, &e) {
		t.Fatalf("CheckLinks = %v; an I/O error must not look like a rejected path", err)
	}
}
