package hosttest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// is fails the test unless err is want (nil: no error).
func is(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: %v, want success", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func kind(t *testing.T, ctx context.Context, f Fixture, path string, want host.PathKind) host.PathInfo {
	t.Helper()
	info, err := f.Host.Files.Stat(ctx, path)
	is(t, "Stat "+path, err, nil)
	if info.Kind != want {
		t.Fatalf("Stat %s: %s, want %s", path, info.Kind, want)
	}
	return info
}

// sameTarget compares link targets as hosts report them: trailing
// separators and, for drive and volume paths, case do not matter.
func sameTarget(a, b string) bool {
	a, b = strings.TrimRight(a, `\/`), strings.TrimRight(b, `\/`)
	return a == b || strings.EqualFold(a, b) && strings.Contains(a, `\`)
}

// offlineReadOnly checks SetReadOnly(readOnly) on the offline disk of f.
// Whether Windows changes the read-only attribute of an offline disk is
// uncertain, so both answers are accepted: success, after which the disk
// reports the attribute and is still offline; or ErrNotReady ("online
// first"), after which it is unchanged. For refusing: the SetAttributes
// page says "the disk must be online for most attributes to be set" and
// lists 41003 "the disk is offline"
// (learn.microsoft.com/windows-hardware/drivers/storage/msft-disk-setattributes).
// For accepting: the VDS pages describe the read-only bit set and cleared
// while the disk is offline (the remarks of IVdsDiskOnline::Online and
// ::Offline, learn.microsoft.com/windows/win32/api/vds/), and HPE's
// common-host-libs clears it before it brings a disk online
// (hpe-storage/common-host-libs chapi2/multipath/multipath_windows.go,
// MakeDiskOnlineAndWritable, at 55e77af). The answer is logged: on
// Windows (test/integration) that log is the experiment docs/windows.md
// names.
func offlineReadOnly(t *testing.T, ctx context.Context, f Fixture, readOnly bool) {
	t.Helper()
	err := f.Host.Disks.SetReadOnly(ctx, f.Disk, readOnly)
	if err != nil && !errors.Is(err, host.ErrNotReady) {
		t.Fatalf("SetReadOnly(%t) on an offline disk: %v, want success or ErrNotReady", readOnly, err)
	}
	t.Logf("SetReadOnly(%t) on an offline disk answered %v", readOnly, err)
	d, gerr := f.Host.Disks.Get(ctx, f.Disk.Number)
	is(t, "Get", gerr, nil)
	want := readOnly
	if err != nil {
		want = f.Disk.IsReadOnly
	}
	if !d.IsOffline || d.IsReadOnly != want {
		t.Fatalf("after SetReadOnly(%t) answered %v: offline %t, read-only %t; want offline, read-only %t", readOnly, err, d.IsOffline, d.IsReadOnly, want)
	}
}

// Cases is the contract: the cases of the disks, volumes and files
// (localCases), of the SMB client (smbCases), of the iSCSI initiator
// (iscsiCases), of volume roots' access control (securityCases) and of an
// ended context. Sources of Windows behaviour are
// the MSFT_* method pages under
// learn.microsoft.com/windows-hardware/drivers/storage/, the Win32 pages
// under learn.microsoft.com/windows/win32/api/ and those each case cites;
// a clause marked "uncertain" is what no page states: the case accepts
// every documented answer, and the integration run on Windows shows
// which one Windows gives.
var Cases = slices.Concat(localCases, smbCases, iscsiCases, iscsiBulkCases, securityCases, contextCases)

var localCases = []Case{
	// --- Disks -----------------------------------------------------------
	{Name: "disks/get-missing", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		_, err := f.Host.Disks.Get(ctx, f.MissingDisk)
		is(t, "Get of a missing disk", err, host.ErrNotFound)
	}},
	// A disk that is gone has no identifiers: the per-disk IOCTLs answer
	// ErrNotFound, which the disk backend reads as "no such identifier".
	{Name: "disks/identifiers-missing", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		_, err := f.Host.Disks.DeviceIDs(ctx, host.Disk{Number: f.MissingDisk})
		is(t, "DeviceIDs of a missing disk", err, host.ErrNotFound)
		_, err = f.Host.Disks.SCSIAddress(ctx, host.Disk{Number: f.MissingDisk})
		is(t, "SCSIAddress of a missing disk", err, host.ErrNotFound)
	}},
	// IOCTL_STORAGE_QUERY_PROPERTY (StorageDeviceIdProperty) and
	// IOCTL_SCSI_GET_ADDRESS on an attached disk: an answer, or ErrNotFound
	// for a device that does not support the query (ERROR_INVALID_FUNCTION
	// on the virtual disks of GitHub's Windows runners, kubernetes-csi/csi-proxy@eeba470
	// integrationtests/disk_v1_test.go; uncertain for Windows Server 2025's
	// native NVMe stack). Both answers are Windows'; nothing else is.
	{Name: "disks/identifiers", Given: OnlineDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		ids, err := f.Host.Disks.DeviceIDs(ctx, f.Disk)
		if err != nil && !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("DeviceIDs: %v, want designators or ErrNotFound", err)
		}
		for _, d := range ids {
			if d.CodeSet == host.CodeSetReserved && len(d.Value) > 0 {
				t.Errorf("designator %v has the reserved code set", d)
			}
		}
		if _, err := f.Host.Disks.SCSIAddress(ctx, f.Disk); err != nil && !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("SCSIAddress: %v, want an address or ErrNotFound", err)
		}
	}},
	// SetReadOnly on an offline disk: uncertain, both answers accepted
	// (offlineReadOnly).
	{Name: "disks/offline-set-read-only", Given: OfflineDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		offlineReadOnly(t, ctx, f, true)
	}},
	// On an offline blank disk SetAttributes may also answer 41000 "the
	// disk has not been initialized" instead of 41003; both mean "online
	// first" (ErrNotReady).
	{Name: "disks/offline-blank-clear-read-only", Given: OfflineBlankDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		offlineReadOnly(t, ctx, f, false)
	}},
	// Initialize lists 41003 "the disk is offline" (initialize-msft-disk);
	// an offline disk is ErrNotReady, not ErrConflict (the simulated host
	// used to say conflict).
	{Name: "disks/offline-initialize", Given: OfflineBlankDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Initialize of an offline disk", f.Host.Disks.Initialize(ctx, f.Disk, host.PartitionStyleGPT), host.ErrNotReady)
	}},
	// 41002 "the disk is read only" (initialize-msft-disk).
	{Name: "disks/read-only-initialize", Given: ReadOnlyBlankDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Initialize of a read-only disk", f.Host.Disks.Initialize(ctx, f.Disk, host.PartitionStyleGPT), host.ErrReadOnly)
	}},
	// 41001 "the disk has already been initialized" (initialize-msft-disk).
	{Name: "disks/initialize-twice", Given: BlankDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Initialize", f.Host.Disks.Initialize(ctx, f.Disk, host.PartitionStyleGPT), nil)
		d, err := f.Host.Disks.Get(ctx, f.Disk.Number)
		is(t, "Get", err, nil)
		if d.PartitionStyle != host.PartitionStyleGPT {
			t.Fatalf("after Initialize: partition style %s", d.PartitionStyle)
		}
		is(t, "Initialize again", f.Host.Disks.Initialize(ctx, d, host.PartitionStyleGPT), host.ErrAlreadyExists)
	}},
	// Online of an online disk and Offline of an offline one succeed
	// (uncertain: the Online and Offline pages do not say).
	{Name: "disks/online-offline-idempotent", Given: OnlineDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "SetOnline(false)", f.Host.Disks.SetOnline(ctx, f.Disk, false), nil)
		is(t, "SetOnline(false) again", f.Host.Disks.SetOnline(ctx, f.Disk, false), nil)
		d, err := f.Host.Disks.Get(ctx, f.Disk.Number)
		is(t, "Get", err, nil)
		if !d.IsOffline {
			t.Fatal("disk still online")
		}
		is(t, "SetOnline(true)", f.Host.Disks.SetOnline(ctx, d, true), nil)
		is(t, "SetOnline(true) again", f.Host.Disks.SetOnline(ctx, d, true), nil)
		if d, err = f.Host.Disks.Get(ctx, f.Disk.Number); err != nil || d.IsOffline {
			t.Fatalf("after SetOnline(true): %+v, %v", d, err)
		}
	}},
	{Name: "disks/set-read-only-idempotent", Given: OnlineDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "SetReadOnly(true)", f.Host.Disks.SetReadOnly(ctx, f.Disk, true), nil)
		is(t, "SetReadOnly(true) again", f.Host.Disks.SetReadOnly(ctx, f.Disk, true), nil)
		d, err := f.Host.Disks.Get(ctx, f.Disk.Number)
		if err != nil || !d.IsReadOnly {
			t.Fatalf("after SetReadOnly(true): %+v, %v", d, err)
		}
		is(t, "SetReadOnly(false)", f.Host.Disks.SetReadOnly(ctx, d, false), nil)
		is(t, "SetReadOnly(false) again", f.Host.Disks.SetReadOnly(ctx, d, false), nil)
		if d, err = f.Host.Disks.Get(ctx, f.Disk.Number); err != nil || d.IsReadOnly {
			t.Fatalf("after SetReadOnly(false): %+v, %v", d, err)
		}
	}},
	// The boot or system disk is never changed: ErrConflict before any
	// call (41009 "operation not supported on a critical disk" if one
	// were made).
	{Name: "disks/critical-refused", Given: CriticalDisk, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "SetOnline(false) of the critical disk", f.Host.Disks.SetOnline(ctx, f.Disk, false), host.ErrConflict)
		is(t, "SetReadOnly of the critical disk", f.Host.Disks.SetReadOnly(ctx, f.Disk, true), host.ErrConflict)
		is(t, "Initialize of the critical disk", f.Host.Disks.Initialize(ctx, f.Disk, host.PartitionStyleGPT), host.ErrConflict)
	}},
	// Resize to the current size is a no-op; the supported maximum is at
	// least the current size (msft-partition-getsupportedsizes).
	{Name: "disks/resize-to-same-size", Given: RawVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "ResizePartition to its size", f.Host.Disks.ResizePartition(ctx, f.Partition, f.Partition.Size), nil)
		max, err := f.Host.Disks.MaxPartitionSize(ctx, f.Partition)
		is(t, "MaxPartitionSize", err, nil)
		if max < f.Partition.Size {
			t.Fatalf("MaxPartitionSize %d below the partition's size %d", max, f.Partition.Size)
		}
	}},

	// --- Volumes ---------------------------------------------------------
	{Name: "volumes/missing", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		_, err := f.Host.Volumes.Get(ctx, f.MissingVolume)
		is(t, "Get of a missing volume", err, host.ErrNotFound)
		_, err = f.Host.Volumes.DiskNumber(ctx, f.MissingVolume)
		is(t, "DiskNumber of a missing volume", err, host.ErrNotFound)
	}},
	// A blank volume formats; a formatted one is never formatted again.
	{Name: "volumes/format", Given: RawVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		if f.Volume.FileSystem != "" {
			t.Fatalf("the blank volume reports file system %q", f.Volume.FileSystem)
		}
		v, err := f.Host.Volumes.Format(ctx, f.Volume, host.FormatOptions{FileSystem: "NTFS"})
		is(t, "Format", err, nil)
		if !strings.EqualFold(v.FileSystem, "NTFS") || !strings.EqualFold(v.GUIDPath, f.Volume.GUIDPath) {
			t.Fatalf("formatted volume %+v", v)
		}
		_, err = f.Host.Volumes.Format(ctx, v, host.FormatOptions{FileSystem: "NTFS"})
		is(t, "Format of a formatted volume", err, host.ErrAlreadyExists)
	}},
	// A volume of a read-only disk cannot be opened for writing, which
	// FlushFileBuffers needs: ERROR_WRITE_PROTECT (ErrReadOnly), or
	// success where Windows lets it open (uncertain which).
	{Name: "volumes/flush-read-only", Given: ReadOnlyVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		if err := f.Host.Volumes.Flush(ctx, f.Volume.GUIDPath); err != nil && !errors.Is(err, host.ErrReadOnly) {
			t.Fatalf("Flush of a read-only volume: %v, want success or ErrReadOnly", err)
		}
	}},
	// SetVolumeMountPoint on an empty directory; a second mount or any
	// entry is ERROR_DIR_NOT_EMPTY; a mount point is not removed as a
	// directory; DeleteVolumeMountPoint leaves the empty directory.
	{Name: "volumes/mount-points", Given: FormattedVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		v := f.Volume
		is(t, "Mount", f.Host.Volumes.Mount(ctx, v.GUIDPath, f.Dir), nil)
		info := kind(t, ctx, f, f.Dir, host.PathMountPoint)
		if !sameTarget(info.Target, v.GUIDPath) {
			t.Fatalf("mount point names %q, want %q", info.Target, v.GUIDPath)
		}
		is(t, "Mount again", f.Host.Volumes.Mount(ctx, v.GUIDPath, f.Dir), host.ErrDirNotEmpty)
		is(t, "Remove of a mount point", f.Host.Files.Remove(ctx, f.Dir), host.ErrInUse)
		n, err := f.Host.Volumes.DiskNumber(ctx, v.GUIDPath)
		is(t, "DiskNumber", err, nil)
		if n != f.Disk.Number {
			t.Fatalf("volume on disk %d, want %d", n, f.Disk.Number)
		}
		is(t, "Unmount", f.Host.Volumes.Unmount(ctx, f.Dir), nil)
		kind(t, ctx, f, f.Dir, host.PathDir)
		empty, err := f.Host.Files.IsEmptyDir(ctx, f.Dir)
		if err != nil || !empty {
			t.Fatalf("after Unmount: empty %t, %v", empty, err)
		}
		is(t, "Unmount again", f.Host.Volumes.Unmount(ctx, f.Dir), host.ErrNotFound)
	}},
	{Name: "volumes/mount-non-empty-dir", Given: DirWithFile, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Mount on a directory holding a file", f.Host.Volumes.Mount(ctx, f.Volume.GUIDPath, f.Dir), host.ErrDirNotEmpty)
	}},
	// Every volume with the disk that holds it, as Get and DiskNumber say.
	// Uncertain: whether the partition lists the volume GUID path among
	// its access paths on every Windows (what Volumes.List places the
	// volume by); a volume not placed says so (OnDisk false), and
	// DiskNumber places it.
	{Name: "volumes/list", Given: FormattedVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		vols, err := f.Host.Volumes.List(ctx)
		is(t, "List", err, nil)
		for _, v := range vols {
			if !strings.EqualFold(v.GUIDPath, f.Volume.GUIDPath) {
				continue
			}
			if v.FileSystem != f.Volume.FileSystem {
				t.Fatalf("List: volume %s has file system %q, want %q", v.GUIDPath, v.FileSystem, f.Volume.FileSystem)
			}
			if v.OnDisk && v.DiskNumber != f.Disk.Number {
				t.Fatalf("List places volume %s on disk %d, want %d", v.GUIDPath, v.DiskNumber, f.Disk.Number)
			}
			if !v.OnDisk {
				t.Logf("List did not place volume %s on a disk", v.GUIDPath)
			}
			return
		}
		t.Fatalf("List = %+v, want volume %s among them", vols, f.Volume.GUIDPath)
	}},

	// --- Files -----------------------------------------------------------
	{Name: "files/missing", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		p := f.Path("missing")
		kind(t, ctx, f, p, host.PathMissing)
		is(t, "Remove of a missing path", f.Host.Files.Remove(ctx, p), host.ErrNotFound)
		_, err := f.Host.Files.IsEmptyDir(ctx, p)
		is(t, "IsEmptyDir of a missing path", err, host.ErrNotFound)
	}},
	{Name: "files/make-dir", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		p := f.Path("a", "b")
		is(t, "MakeDir with a missing parent", f.Host.Files.MakeDir(ctx, p), nil)
		is(t, "MakeDir again", f.Host.Files.MakeDir(ctx, p), nil)
		kind(t, ctx, f, p, host.PathDir)
		empty, err := f.Host.Files.IsEmptyDir(ctx, p)
		if err != nil || !empty {
			t.Fatalf("IsEmptyDir: %t, %v", empty, err)
		}
		is(t, "Remove", f.Host.Files.Remove(ctx, p), nil)
		kind(t, ctx, f, p, host.PathMissing)
	}},
	// A directory link is a link, not its target: Remove takes the link
	// only; a directory with entries is never removed.
	{Name: "files/links", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		target, link := f.Path("target"), f.Path("link")
		is(t, "MakeDir", f.Host.Files.MakeDir(ctx, target), nil)
		is(t, "Symlink", f.Host.Files.Symlink(ctx, link, target), nil)
		info := kind(t, ctx, f, link, host.PathSymlink)
		if !sameTarget(info.Target, target) {
			t.Fatalf("link target %q, want %q", info.Target, target)
		}
		is(t, "Symlink again", f.Host.Files.Symlink(ctx, link, target), host.ErrAlreadyExists)
		is(t, "MakeDir inside", f.Host.Files.MakeDir(ctx, f.Path("target", "sub")), nil)
		is(t, "Remove of a directory with entries", f.Host.Files.Remove(ctx, target), host.ErrDirNotEmpty)
		is(t, "Remove of the link", f.Host.Files.Remove(ctx, link), nil)
		kind(t, ctx, f, target, host.PathDir)
		kind(t, ctx, f, link, host.PathMissing)
	}},

	// A listing names the directory's own entries, links included, and
	// never lists through a link (FindFirstFileW reports each entry by
	// its own name; a link is not a plain directory to list).
	{Name: "files/read-dir", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		target, link := f.Path("target"), f.Path("link")
		is(t, "MakeDir", f.Host.Files.MakeDir(ctx, target), nil)
		is(t, "Symlink", f.Host.Files.Symlink(ctx, link, target), nil)
		names, err := f.Host.Files.ReadDir(ctx, f.Dir)
		is(t, "ReadDir", err, nil)
		slices.Sort(names)
		if !slices.Equal(names, []string{"link", "target"}) {
			t.Fatalf("ReadDir: %q, want [link target]", names)
		}
		_, err = f.Host.Files.ReadDir(ctx, link)
		is(t, "ReadDir of a link", err, host.ErrInvalid)
		_, err = f.Host.Files.ReadDir(ctx, f.Path("missing"))
		is(t, "ReadDir of a missing path", err, host.ErrNotFound)
	}},
}

var contextCases = []Case{
	// Every call honours ctx: an ended context fails the call with an
	// error wrapping ctx.Err() (pkg/host doc).
	{Name: "context/ended", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := f.Host.Disks.List(ctx)
		is(t, "Disks.List", err, context.Canceled)
		_, err = f.Host.Volumes.Get(ctx, f.MissingVolume)
		is(t, "Volumes.Get", err, context.Canceled)
		_, err = f.Host.Files.Stat(ctx, f.Dir)
		is(t, "Files.Stat", err, context.Canceled)
		_, err = f.Host.SMB.Mapping(ctx, f.MissingShare)
		is(t, "SMB.Mapping", err, context.Canceled)
		_, err = f.Host.Files.ReadDir(ctx, f.Dir)
		is(t, "Files.ReadDir", err, context.Canceled)
		_, err = f.Host.SMB.Mappings(ctx)
		is(t, "SMB.Mappings", err, context.Canceled)
		_, err = f.Host.ISCSI.Portals(ctx)
		is(t, "ISCSI.Portals", err, context.Canceled)
		_, err = f.Host.Security.RootDACL(ctx, f.MissingVolume)
		is(t, "Security.RootDACL", err, context.Canceled)
	}},
}
