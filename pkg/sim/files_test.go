//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestStat(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	if err := s.AddShare(ShareSpec{Server: "FileSrv", Share: "Data"}); err != nil {
		t.Fatal(err)
	}
	_, guid := formattedDisk(t, s, "st")
	base := t.TempDir()
	mnt := emptyDir(t, "mnt")
	if err := s.Host().Volumes.Mount(ctx, guid, mnt); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := s.Host().Files
	mk := func(name, target string) string {
		p := filepath.Join(base, name)
		if err := f.Symlink(ctx, p, target); err != nil {
			t.Fatalf("Symlink(%s, %s): %v", p, target, err)
		}
		return p
	}
	sock := filepath.Join(base, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	tests := []struct {
		name   string
		path   string
		kind   host.PathKind
		target string
	}{
		{"missing", filepath.Join(base, "nope"), host.PathMissing, ""},
		{"under a file", filepath.Join(file, "x"), host.PathMissing, ""},
		{"dir", base, host.PathDir, ""},
		{"file", file, host.PathFile, ""},
		{"mount point", mnt, host.PathMountPoint, guid},
		{"link to a mount point", mk("pub", mnt), host.PathSymlink, mnt},
		{"UNC link", mk("unc1", `\\FileSrv\Data\pvc-1`), host.PathSymlink, `\\FileSrv\Data\pvc-1\`},
		{"UNC link, long form, other case", mk("unc2", `\\?\UNC\filesrv\data\dir\`), host.PathSymlink, `\\FileSrv\Data\dir\`},
		{"UNC link with slashes to an unknown share", mk("unc3", `//other/share`), host.PathSymlink, `\\other\share\`},
		{"link to a volume GUID path", mk("vol", guid), host.PathSymlink, guid},
		{"socket", sock, host.PathOther, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.Stat(ctx, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tc.kind || got.Target != tc.target {
				t.Errorf("Stat = %v %q, want %v %q", got.Kind, got.Target, tc.kind, tc.target)
			}
		})
	}
	_, err = f.Stat(ctx, "relative")
	wantErr(t, "Stat relative", err, host.ErrInvalid)
}

func TestSymlink(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	f := s.Host().Files
	base := t.TempDir()
	existing := filepath.Join(base, "exists")
	if err := os.Mkdir(existing, 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, link, target string
		want               error
	}{
		{"absolute", filepath.Join(base, "a"), existing, nil},
		{"dangling UNC", filepath.Join(base, "b"), `\\srv\share\not\yet`, nil},
		{"link exists", existing, base, host.ErrAlreadyExists},
		{"parent missing", filepath.Join(base, "no", "c"), base, host.ErrNotFound},
		{"relative target", filepath.Join(base, "d"), `some\dir`, host.ErrInvalid},
		{"UNC without share", filepath.Join(base, "e"), `\\srv`, host.ErrInvalid},
		{"UNC escaping the share", filepath.Join(base, "f"), `\\srv\share\..\other`, host.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, "Symlink", f.Symlink(ctx, tc.link, tc.target), tc.want) })
	}
	got, err := os.Readlink(filepath.Join(base, "b"))
	if want := filepath.Join(s.Dir(), "smb", "srv", "share", "not", "yet"); err != nil || got != want {
		t.Errorf("UNC link points at %q, %v; want %q", got, err, want)
	}
}

func TestRemoveMakeDirIsEmptyDir(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	f := s.Host().Files
	_, guid := formattedDisk(t, s, "rm")
	base := t.TempDir()
	full := filepath.Join(base, "full")
	if err := f.MakeDir(ctx, filepath.Join(full, "child")); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(base, "empty")
	if err := f.MakeDir(ctx, empty); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "MakeDir existing", f.MakeDir(ctx, empty), nil)
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "MakeDir over a file", f.MakeDir(ctx, file), host.ErrAlreadyExists)
	wantErr(t, "MakeDir under a file", f.MakeDir(ctx, filepath.Join(file, "sub")), host.ErrAlreadyExists)
	wantErr(t, "MakeDir relative", f.MakeDir(ctx, "rel"), host.ErrInvalid)
	mnt := filepath.Join(base, "mnt")
	if err := f.MakeDir(ctx, mnt); err != nil {
		t.Fatal(err)
	}
	if err := s.Host().Volumes.Mount(ctx, guid, mnt); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := f.Symlink(ctx, link, full); err != nil {
		t.Fatal(err)
	}

	isEmpty := []struct {
		name string
		path string
		want bool
		err  error
	}{
		{"empty dir", empty, true, nil},
		{"full dir", full, false, nil},
		{"file", file, false, nil},
		{"mount point", mnt, false, nil},
		{"link", link, false, nil},
		{"missing", filepath.Join(base, "nope"), false, host.ErrNotFound},
	}
	for _, tc := range isEmpty {
		t.Run("IsEmptyDir "+tc.name, func(t *testing.T) {
			got, err := f.IsEmptyDir(ctx, tc.path)
			wantErr(t, "IsEmptyDir", err, tc.err)
			if got != tc.want {
				t.Errorf("IsEmptyDir = %v, want %v", got, tc.want)
			}
		})
	}

	remove := []struct {
		name string
		path string
		want error
	}{
		{"non-empty dir", full, host.ErrDirNotEmpty},
		{"missing", filepath.Join(base, "nope"), host.ErrNotFound},
		{"mount point", mnt, host.ErrInUse},
		{"link (not its target)", link, nil},
		{"empty dir", empty, nil},
		{"file", file, nil},
	}
	for _, tc := range remove {
		t.Run("Remove "+tc.name, func(t *testing.T) { wantErr(t, "Remove", f.Remove(ctx, tc.path), tc.want) })
	}
	if _, err := os.Stat(filepath.Join(full, "child")); err != nil {
		t.Errorf("removing the link touched its target: %v", err)
	}
}
