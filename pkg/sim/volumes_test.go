//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// rawVolume attaches an online GPT disk with one RAW volume.
func rawVolume(t *testing.T, s *Sim, spec DiskSpec) (uint32, host.Volume) {
	t.Helper()
	ctx := context.Background()
	spec.PartitionStyle = host.PartitionStyleGPT
	spec.Partitions = []PartitionSpec{{}}
	n, err := s.AttachDisk(spec)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := s.Host().Disks.Partitions(ctx, host.Disk{Number: n})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Host().Volumes.OfPartition(ctx, parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return n, v
}

func TestFormat(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		o    host.FormatOptions
		want error
		unit uint32
	}{
		{"ntfs default", host.FormatOptions{FileSystem: "NTFS"}, nil, 4096},
		{"ntfs lower case 64K", host.FormatOptions{FileSystem: "ntfs", AllocationUnitSize: 65536}, nil, 65536},
		{"ntfs 2M", host.FormatOptions{FileSystem: "NTFS", AllocationUnitSize: 2 << 20}, nil, 2 << 20},
		{"ntfs 4M", host.FormatOptions{FileSystem: "NTFS", AllocationUnitSize: 4 << 20}, host.ErrInvalid, 0},
		{"ntfs 256", host.FormatOptions{FileSystem: "NTFS", AllocationUnitSize: 256}, host.ErrInvalid, 0},
		{"ntfs 3000", host.FormatOptions{FileSystem: "NTFS", AllocationUnitSize: 3000}, host.ErrInvalid, 0},
		{"refs 64K", host.FormatOptions{FileSystem: "ReFS", AllocationUnitSize: 65536}, nil, 65536},
		{"refs 8K", host.FormatOptions{FileSystem: "ReFS", AllocationUnitSize: 8192}, host.ErrInvalid, 0},
		{"fat32", host.FormatOptions{FileSystem: "FAT32"}, host.ErrInvalid, 0},
		{"long label", host.FormatOptions{FileSystem: "NTFS", Label: strings.Repeat("x", 33)}, host.ErrInvalid, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			_, v := rawVolume(t, s, DiskSpec{})
			got, err := s.Host().Volumes.Format(ctx, v, tc.o)
			wantErr(t, "Format", err, tc.want)
			if tc.want != nil {
				return
			}
			if got.AllocationUnitSize != tc.unit || got.SizeRemaining == 0 || got.SizeRemaining >= got.Size {
				t.Errorf("formatted volume %+v", got)
			}
			if _, err := os.Stat(s.volumeDir(got.GUIDPath[11:47])); err != nil {
				t.Errorf("content directory: %v", err)
			}
			_, err = s.Host().Volumes.Format(ctx, v, tc.o)
			wantErr(t, "Format twice", err, host.ErrAlreadyExists)
		})
	}
	t.Run("read-only disk", func(t *testing.T) {
		s := newSim(t)
		_, v := rawVolume(t, s, DiskSpec{ReadOnly: true})
		_, err := s.Host().Volumes.Format(ctx, v, host.FormatOptions{FileSystem: "NTFS"})
		wantErr(t, "Format", err, host.ErrReadOnly)
	})
	t.Run("offline disk", func(t *testing.T) {
		s := newSim(t)
		n, v := rawVolume(t, s, DiskSpec{})
		if err := s.Host().Disks.SetOnline(ctx, host.Disk{Number: n}, false); err != nil {
			t.Fatal(err)
		}
		_, err := s.Host().Volumes.Format(ctx, v, host.FormatOptions{FileSystem: "NTFS"})
		wantErr(t, "Format", err, host.ErrNotFound)
		_, err = s.Host().Volumes.Get(ctx, v.GUIDPath)
		wantErr(t, "Get", err, host.ErrNotFound)
		parts, _ := s.Host().Disks.Partitions(ctx, host.Disk{Number: n})
		if len(parts) != 2 || !parts[1].IsOffline || len(parts[1].AccessPaths) != 0 {
			t.Errorf("partitions of an offline disk %+v", parts)
		}
		_, err = s.Host().Volumes.OfPartition(ctx, parts[1])
		wantErr(t, "OfPartition", err, host.ErrNotFound)
	})
	t.Run("unknown volume", func(t *testing.T) {
		s := newSim(t)
		_, err := s.Host().Volumes.Get(ctx, guidPath(newGUID()))
		wantErr(t, "Get", err, host.ErrNotFound)
		_, err = s.Host().Volumes.Get(ctx, `\\?\Volume{nope}\`)
		wantErr(t, "Get malformed", err, host.ErrInvalid)
	})
}

func TestMount(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	vols := s.Host().Volumes
	_, guid := formattedDisk(t, s, "m")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full := emptyDir(t, "full")
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mounted := emptyDir(t, "mounted")
	if err := vols.Mount(ctx, guid, mounted); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	offN, offGUID := formattedDisk(t, s, "off")
	if err := s.SetDiskState(offN, DiskChange{Offline: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, vol, dir string
		want           error
	}{
		{"missing dir", guid, filepath.Join(t.TempDir(), "nope"), host.ErrNotFound},
		{"non-empty dir", guid, full, host.ErrDirNotEmpty},
		{"already a mount point", guid, mounted, host.ErrDirNotEmpty},
		{"a link", guid, link, host.ErrDirNotEmpty},
		{"a file", guid, file, host.ErrInvalid},
		{"relative dir", guid, "rel/dir", host.ErrInvalid},
		{"unknown volume", guidPath(newGUID()), emptyDir(t, "a"), host.ErrNotFound},
		{"offline disk", offGUID, emptyDir(t, "b"), host.ErrNotFound},
		{"second mount point of the same volume", guid, emptyDir(t, "c"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, "Mount", vols.Mount(ctx, tc.vol, tc.dir), tc.want) })
	}
	info, err := s.Host().Files.Stat(ctx, mounted)
	if err != nil || info.Kind != host.PathMountPoint || info.Target != guid {
		t.Errorf("Stat(mount point) = %+v, %v", info, err)
	}
	// The mount point shows in the partition's access paths, before the GUID path.
	d, _ := s.Host().Volumes.DiskNumber(ctx, guid)
	parts, _ := s.Host().Disks.Partitions(ctx, host.Disk{Number: d})
	ap := parts[1].AccessPaths
	if len(ap) != 3 || ap[0] != mounted+"/" || ap[2] != guid {
		t.Errorf("access paths %v", ap)
	}
}

func TestUnmount(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	vols := s.Host().Volumes
	_, guid := formattedDisk(t, s, "u")
	dir := emptyDir(t, "stage")
	if err := vols.Mount(ctx, guid, dir); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir string
		want      error
	}{
		{"plain dir", emptyDir(t, "plain"), host.ErrNotFound},
		{"missing", filepath.Join(t.TempDir(), "nope"), host.ErrNotFound},
		{"symlink to a mount point", link, host.ErrNotFound},
		{"mount point", dir, nil},
		{"again", dir, host.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, "Unmount", vols.Unmount(ctx, tc.dir), tc.want) })
	}
	empty, err := s.Host().Files.IsEmptyDir(ctx, dir)
	if err != nil || !empty {
		t.Errorf("after Unmount IsEmptyDir = %v, %v; want an empty directory", empty, err)
	}
	if len(s.Snapshot().Mounts) != 0 {
		t.Errorf("mount records left: %+v", s.Snapshot().Mounts)
	}
}

// TestDataSurvivesRemountAndRestart writes through a mount point, unmounts,
// remounts elsewhere, restarts the sim and reads the file back.
func TestDataSurvivesRemountAndRestart(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	_, guid := formattedDisk(t, s, "data")
	dir := emptyDir(t, "stage")
	if err := s.Host().Volumes.Mount(ctx, guid, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Host().Volumes.Flush(ctx, guid); err != nil {
		t.Fatal(err)
	}
	if err := s.Host().Volumes.Unmount(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("file visible in the unmounted directory: %v", err)
	}
	s2 := reopen(t, s)
	dir2 := emptyDir(t, "stage2")
	if err := s2.Host().Volumes.Mount(ctx, guid, dir2); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir2, "hello.txt"))
	if err != nil || string(got) != "hello" {
		t.Errorf("after remount and restart read %q, %v", got, err)
	}
}

func TestFreeSpace(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	vols := s.Host().Volumes
	n, guid := formattedDisk(t, s, "fs")
	dir := emptyDir(t, "stage")
	if err := vols.Mount(ctx, guid, dir); err != nil {
		t.Fatal(err)
	}
	publish := filepath.Join(t.TempDir(), "publish")
	if err := s.Host().Files.Symlink(ctx, publish, dir); err != nil {
		t.Fatal(err)
	}
	before, err := vols.FreeSpace(ctx, publish)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(1<<30 - 16896 - 16*mib); before.Total != want {
		t.Fatalf("total %d, want %d", before.Total, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "blob"), make([]byte, 5*mib+1), 0o600); err != nil {
		t.Fatal(err)
	}
	after, err := vols.FreeSpace(ctx, publish)
	if err != nil {
		t.Fatal(err)
	}
	if before.Free-after.Free != 5*mib+4096 || after.AvailableToUse != after.Free || after.Total != before.Total {
		t.Errorf("free %d -> %d after writing 5 MiB + 1 byte (4 KiB clusters)", before.Free, after.Free)
	}
	v, _ := vols.Get(ctx, guid)
	if v.SizeRemaining != after.Free {
		t.Errorf("SizeRemaining %d != free %d", v.SizeRemaining, after.Free)
	}
	c, err := vols.FreeSpace(ctx, t.TempDir())
	if err != nil || c.Total != s.Snapshot().Disks[0].Partitions[2].Size || c.Free == 0 {
		t.Errorf("C: answer %+v, %v", c, err)
	}
	_, err = vols.FreeSpace(ctx, filepath.Join(dir, "nope"))
	wantErr(t, "missing path", err, host.ErrNotFound)
	if err := s.SetDiskState(n, DiskChange{Offline: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = vols.FreeSpace(ctx, publish)
	wantErr(t, "offline disk", err, host.ErrNotFound)
}
