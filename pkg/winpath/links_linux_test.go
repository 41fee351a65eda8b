package winpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckLinksRealFS runs CheckLinks against the real file system with
// DefaultFS and the POSIX style. The file name limits it to Linux: the
// POSIX style needs '/'-rooted temporary directories.
func TestCheckLinksRealFS(t *testing.T) {
	base := t.TempDir()
	rootDir := filepath.Join(base, "kubelet")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{
		filepath.Join(rootDir, "pods", "u", "volumes"),
		filepath.Join(rootDir, "data", "u"),
		filepath.Join(outside, "u"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"out":                  outside,
		"in":                   filepath.Join(rootDir, "data"),
		"rel":                  "data",
		"relout":               "../outside",
		"pods/u/volumes/mount": outside, // a final component may link anywhere
		"loop":                 "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(rootDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	r := mustRoot(t, rootDir, POSIX)
	cases := []struct {
		name string
		path string
		err  error
	}{
		{name: "plain directories", path: "pods/u/volumes/x"},
		{name: "final component is a link outside", path: "pods/u/volumes/mount"},
		{name: "absolute link outside", path: "out/u/mount", err: ErrLinkEscapes},
		{name: "absolute link inside", path: "in/u/mount"},
		{name: "relative link inside", path: "rel/u/mount"},
		{name: "relative link outside", path: "relout/u/mount", err: ErrLinkEscapes},
		{name: "below a final link", path: "pods/u/volumes/mount/u/x", err: ErrLinkEscapes},
		{name: "missing components", path: "missing/a/b"},
		{name: "loop", path: "loop/x/y", err: ErrLinkEscapes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := rootDir + "/" + tc.path
			for _, fsys := range []FS{DefaultFS, nil} {
				err := r.CheckLinks(p, fsys)
				if tc.err == nil && err != nil {
					t.Fatalf("CheckLinks(%q): %v", p, err)
				}
				if tc.err != nil && !errors.Is(err, tc.err) {
					t.Fatalf("CheckLinks(%q) = %v, want %v", p, err, tc.err)
				}
			}
		})
	}
}
