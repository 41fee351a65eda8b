package confinement

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// winFS is an in-memory Windows file system for CheckLinks: names compare
// case-insensitively; links are symlinks (ModeSymlink) or, as Go reports
// junctions and volume mount points on Windows, directories with
// ModeIrregular.
type winFS map[string]winEntry

type winEntry struct {
	mode   fs.FileMode
	target string
}

func (w winFS) Lstat(name string) (fs.FileInfo, error) {
	e, ok := w[strings.ToLower(name)]
	if !ok {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	return winInfo{name: name, mode: e.mode}, nil
}

func (w winFS) Readlink(name string) (string, error) {
	e, ok := w[strings.ToLower(name)]
	if !ok || e.mode&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: errors.New("not a link")}
	}
	return e.target, nil
}

type winInfo struct {
	name string
	mode fs.FileMode
}

func (i winInfo) Name() string       { return i.name }
func (i winInfo) Size() int64        { return 0 }
func (i winInfo) Mode() fs.FileMode  { return i.mode }
func (i winInfo) ModTime() time.Time { return time.Time{} }
func (i winInfo) IsDir() bool        { return i.mode.IsDir() }
func (i winInfo) Sys() any           { return nil }

const kroot = `C:\var\lib\kubelet`

// windowsKubelet is a kubelet directory on a Windows node with links that
// lead out of it (a symlink to another drive, a junction into C:\Windows,
// a link to a share, a relative link climbing out, a chain) and two that
// stay inside (a volume mount point, which does not redirect, and a link
// within the directory).
func windowsKubelet() winFS {
	dir := fs.ModeDir | 0o755
	link := fs.ModeSymlink | 0o777
	junction := fs.ModeDir | fs.ModeIrregular | 0o777
	w := winFS{}
	add := func(name string, mode fs.FileMode, target string) {
		w[strings.ToLower(kroot+`\`+name)] = winEntry{mode: mode, target: target}
	}
	for _, d := range []string{"pods", "plugins", `plugins\kubernetes.io`, "data"} {
		add(d, dir, "")
	}
	add("escape", link, `D:\`)
	add("junction", junction, `C:\Windows`)
	add("junction-nt", junction, `\??\C:\Windows`)
	add("tounc", link, `\\server\share`)
	add("tounc-long", link, `\\?\UNC\server\share`)
	add("climb", link, `..\..\..`)
	add("chain1", link, kroot+`\chain2`)
	add("chain2", link, `C:\`)
	add(`pods\podlink`, junction, `C:\Users`)
	add("devlink", link, `\\?\GLOBALROOT\Device\HarddiskVolume2\`)
	add("mounted", junction, `\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}\`)
	add("inside", link, kroot+`\data`)
	add("inside-rel", link, `data`)
	return w
}

// TestWindowsGrammar exercises the confinement rules the node applies on a
// Windows node (winpath.Windows), on Linux: every hostile form is rejected
// with its sentinel; case variations and '/' separators of a path inside
// the kubelet directory are accepted, as Windows would open it.
func TestWindowsGrammar(t *testing.T) {
	root, err := winpath.NewRoot(kroot, winpath.Windows)
	if err != nil {
		t.Fatal(err)
	}
	w := windowsKubelet()
	rejected := []struct {
		path string
		want error
	}{
		{kroot + `\..\x`, winpath.ErrTraversal},
		{kroot + `\pods\..\..\x`, winpath.ErrTraversal},
		{kroot + `/pods\../..\x`, winpath.ErrTraversal},
		{`C:/var/lib/kubelet/pods/../../../Windows`, winpath.ErrTraversal},
		{`\\server\share\x`, winpath.ErrUNC},
		{`//server/share/x`, winpath.ErrUNC},
		{`\\?\UNC\server\share\x`, winpath.ErrDevicePath},
		{`\\?\C:\var\lib\kubelet\x`, winpath.ErrDevicePath},
		{`\\.\C:\var\lib\kubelet\x`, winpath.ErrDevicePath},
		{`\\.\PhysicalDrive0`, winpath.ErrDevicePath},
		{`\\?\GLOBALROOT\Device\HarddiskVolume1\x`, winpath.ErrDevicePath},
		{`\\?\globalroot\device\harddiskvolume1\x`, winpath.ErrDevicePath},
		{`\??\C:\var\lib\kubelet\x`, winpath.ErrDevicePath},
		{`\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}\x`, winpath.ErrDevicePath},
		{kroot + `\pods\CON`, winpath.ErrDevicePath},
		{kroot + `\pods\nul.txt`, winpath.ErrDevicePath},
		{kroot + `\pods\COM1\x`, winpath.ErrDevicePath},
		{kroot + `\pods\x.\y`, winpath.ErrInvalidChars},
		{kroot + `\pods\x \y`, winpath.ErrInvalidChars},
		{kroot + `\pods\x:stream\y`, winpath.ErrInvalidChars},
		{kroot + `\pods\x::$DATA`, winpath.ErrInvalidChars},
		{kroot + "\\pods\\x\x00y", winpath.ErrInvalidChars},
		{kroot + `\pods\a*b`, winpath.ErrInvalidChars},
		{`D:\var\lib\kubelet\x`, winpath.ErrOutsideRoot},
		{`C:\var\lib\kubelet-other\x`, winpath.ErrOutsideRoot},
		{`C:\Windows\System32`, winpath.ErrOutsideRoot},
		{kroot, winpath.ErrOutsideRoot},
		{`C:pods\x`, winpath.ErrNotAbsolute},
		{`pods\x`, winpath.ErrNotAbsolute},
		{kroot + `\` + strings.Repeat(`a\`, 20000) + "x", winpath.ErrTooLong},
		{kroot + `\escape\x`, winpath.ErrLinkEscapes},
		{kroot + `\ESCAPE\x`, winpath.ErrLinkEscapes},
		{kroot + `\junction\System32\x`, winpath.ErrLinkEscapes},
		{kroot + `\junction-nt\x`, winpath.ErrLinkEscapes},
		{kroot + `\tounc\x`, winpath.ErrLinkEscapes},
		{kroot + `\tounc-long\x`, winpath.ErrLinkEscapes},
		{kroot + `\climb\x`, winpath.ErrLinkEscapes},
		{kroot + `\chain1\x`, winpath.ErrLinkEscapes},
		{kroot + `\pods\podlink\x`, winpath.ErrLinkEscapes},
		{kroot + `\devlink\x`, winpath.ErrLinkEscapes},
		{kroot + `\pods\GLOBALROOT\x`, winpath.ErrDevicePath},
	}
	for _, tc := range rejected {
		t.Run("reject "+tc.path[:min(len(tc.path), 80)], func(t *testing.T) {
			err := root.CheckLinks(tc.path, w)
			if !errors.Is(err, tc.want) {
				t.Fatalf("CheckLinks(%q) = %v, want %v", tc.path, err, tc.want)
			}
			var pe *winpath.Error
			if !errors.As(err, &pe) || pe.Path != tc.path {
				t.Fatalf("error %v does not name the path", err)
			}
		})
	}
	accepted := []struct{ path, resolved string }{
		{kroot + `\pods\x`, kroot + `\pods\x`},
		{`c:\VAR\Lib\KUBELET\pods\x`, kroot + `\pods\x`},
		{`C:/var/lib/kubelet/pods/x`, kroot + `\pods\x`},
		{`\var\lib\kubelet\pods\x`, kroot + `\pods\x`},
		{kroot + `\.\pods\\x\`, kroot + `\pods\x`},
		{kroot + `\mounted\x`, kroot + `\mounted\x`},
		{kroot + `\inside\x`, kroot + `\inside\x`},
		{kroot + `\inside-rel\x`, kroot + `\inside-rel\x`},
		{kroot + `\escape`, kroot + `\escape`}, // the path itself may be a link: it is what publish replaces
	}
	for _, tc := range accepted {
		t.Run("accept "+tc.path, func(t *testing.T) {
			got, err := root.Resolve(tc.path)
			if err != nil || !strings.EqualFold(got, tc.resolved) {
				t.Fatalf("Resolve(%q) = %q, %v; want %q", tc.path, got, err, tc.resolved)
			}
			if err := root.CheckLinks(tc.path, w); err != nil {
				t.Fatalf("CheckLinks(%q) = %v", tc.path, err)
			}
		})
	}
}
