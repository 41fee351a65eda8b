package winhost

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Volumes implements host.Volumes: MSFT_Volume for what WMI alone knows
// (the volume of a partition, its file system, formatting) and Win32 for
// everything on the hot path (mount points, flush, volume-to-disk, free
// space), which costs no WMI round trip.
//
// Paths: SetVolumeMountPoint, DeleteVolumeMountPoint and GetDiskFreeSpaceEx
// receive the directory as given, with a trailing backslash (their
// documentation requires it for mount points and UNC names; whether they
// accept the \\?\ form is not documented, so it is not used). Volume names
// are passed in the \\?\Volume{GUID}\ form SetVolumeMountPoint documents,
// and without the trailing backslash where a handle to the volume itself is
// opened (FlushVolume, VolumeDiskExtents: CreateFile on \\?\Volume{GUID}\
// would open the root directory instead).
type Volumes struct{ s storage }

var _ host.Volumes = (*Volumes)(nil)

// NewVolumes returns the volume side of the Windows host.
func NewVolumes(e Executor) *Volumes { return &Volumes{s: storage{e}} }

// volumeProps are the MSFT_Volume properties queried. AllocationUnitSize
// is absent from the MSFT_Volume documentation page but present in the
// class's MOF (uint32; microsoft/wmi v0.43.0, server2019 and server23h2
// .../storage/MSFT_Volume.go), which the schema test checks; it is
// selected so that the volume's cluster size is read, not left null.
var volumeProps = []string{
	"ObjectId", "Path", "FileSystem", "FileSystemType", "FileSystemLabel", "Size", "SizeRemaining",
	"AllocationUnitSize", "HealthStatus",
}

// fileSystemTypes are MSFT_Volume.FileSystemType values (MSFT_Volume docs,
// "Starting in Windows 10").
var fileSystemTypes = map[uint16]string{
	2: "UFS", 3: "HFS", 4: "FAT", 5: "FAT16", 6: "FAT32", 7: "NTFS4", 8: "NTFS5", 9: "XFS",
	10: "AFS", 11: "EXT2", 12: "EXT3", 13: "ReiserFS", 14: "NTFS", 15: "ReFS",
	0x8000: "CSVFS_NTFS", 0x8001: "CSVFS_ReFS",
}

// parseVolume reads one MSFT_Volume. The volume counts as carrying a file
// system unless both FileSystem is empty (or "RAW") and FileSystemType is 0
// (Unknown): any known type counts, so a volume is never taken for blank
// because its FileSystem string is missing (csi-proxy once accepted only
// NTFS, risking the reformat of another file system; IsVolumeFormatted in
// kubernetes-csi/csi-proxy@eeba470 pkg/os/volume/api.go tests FileSystemType). Uncertain: a volume whose NTFS is damaged beyond recognition
// also reads as Unknown; nothing in WMI tells it from a blank one.
//
// HealthStatus: the MSFT_Volume page lists 0 Healthy, 1 Scan Needed, 2
// Spot Fix Needed, 3 Full Repair Needed, whereas Get-Volume on current
// Windows shows Healthy/Warning/Unhealthy like MSFT_Disk. 3 is read as
// Unhealthy so that neither reading hides a volume needing repair.
func parseVolume(in Instance) (host.Volume, error) {
	p := propsOf(in, classVolume)
	path := p.RequiredString("Path")
	fs := p.String("FileSystem")
	fsType := p.Uint16("FileSystemType")
	v := host.Volume{
		Ref:                in.Path,
		Label:              p.String("FileSystemLabel"),
		Size:               p.Uint64("Size"),
		SizeRemaining:      p.Uint64("SizeRemaining"),
		AllocationUnitSize: p.Uint32("AllocationUnitSize"),
		HealthStatus:       host.HealthStatus(p.Uint16("HealthStatus")),
	}
	if err := p.Err(); err != nil {
		return host.Volume{}, err
	}
	guid, ok := winpath.VolumeGUIDPath(path)
	if !ok {
		return host.Volume{}, &PropError{Class: classVolume, Prop: "Path", Got: path}
	}
	v.GUIDPath = guid
	switch {
	case fsType == 0 && (fs == "" || strings.EqualFold(fs, "RAW")):
		v.FileSystem = ""
	case fs != "" && !strings.EqualFold(fs, "RAW"):
		v.FileSystem = fs
	default:
		name, ok := fileSystemTypes[fsType]
		if !ok {
			name = "FileSystemType(" + strconv.FormatUint(uint64(fsType), 10) + ")"
		}
		v.FileSystem = name
	}
	if v.HealthStatus == 3 {
		v.HealthStatus = host.HealthUnhealthy
	}
	return v, nil
}

// OfPartition implements host.Volumes: the association
// MSFT_PartitionToVolume from the partition's object path.
func (v *Volumes) OfPartition(ctx context.Context, p host.Partition) (host.Volume, error) {
	if p.Ref == "" {
		return host.Volume{}, errNoRef(classPartition, p.Number)
	}
	insts, err := v.s.associators(ctx, p.Ref, assocPartToVolume, classVolume)
	if err != nil {
		return host.Volume{}, fmt.Errorf("find the volume of partition %d of disk %d: %w", p.Number, p.DiskNumber, err)
	}
	switch len(insts) {
	case 0:
		return host.Volume{}, fmt.Errorf("partition %d of disk %d has no volume: %w", p.Number, p.DiskNumber, host.ErrNotFound)
	case 1:
	default:
		return host.Volume{}, fmt.Errorf("partition %d of disk %d has %d volumes: %w", p.Number, p.DiskNumber, len(insts), host.ErrConflict)
	}
	vol, err := parseVolume(insts[0])
	if err != nil {
		return host.Volume{}, fmt.Errorf("read the volume of partition %d of disk %d: %w", p.Number, p.DiskNumber, err)
	}
	return vol, nil
}

// Get implements host.Volumes: one query on MSFT_Volume.Path, with the GUID
// path in its canonical form (lower-case GUID, trailing backslash).
// Uncertain: that the provider reports Path with a lower-case GUID, as
// mountvol prints it; WQL string comparison is case-insensitive anyway.
func (v *Volumes) Get(ctx context.Context, guidPath string) (host.Volume, error) {
	guid, err := volumeGUID(guidPath)
	if err != nil {
		return host.Volume{}, err
	}
	insts, err := v.s.query(ctx, classVolume, volumeProps, wql.Eq("Path", guid))
	if err != nil {
		return host.Volume{}, fmt.Errorf("read volume %s: %w", guid, err)
	}
	switch len(insts) {
	case 0:
		return host.Volume{}, fmt.Errorf("volume %s: %w", guid, host.ErrNotFound)
	case 1:
	default:
		return host.Volume{}, fmt.Errorf("%d volumes have path %s: %w", len(insts), guid, host.ErrConflict)
	}
	vol, err := parseVolume(insts[0])
	if err != nil {
		return host.Volume{}, fmt.Errorf("read volume %s: %w", guid, err)
	}
	return vol, nil
}

// List implements host.Volumes in two round trips whatever the number of
// volumes: every MSFT_Volume, and every MSFT_Partition's DiskNumber and
// AccessPaths, joined in memory on the volume GUID path, which is one of
// the access paths of the partition holding the volume (MSFT_Partition's
// RemoveAccessPath refuses it with 42005, "cannot remove a volume GUID
// path"; GetAccessPaths on learn.microsoft.com). Uncertain: that every
// partition lists it; a volume no partition lists is returned with OnDisk
// false, and the caller asks DiskNumber for it, so the answer is right
// either way and only its cost differs.
func (v *Volumes) List(ctx context.Context) ([]host.ListedVolume, error) {
	insts, err := v.s.query(ctx, classVolume, volumeProps)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	parts, err := v.s.query(ctx, classPartition, []string{"ObjectId", "DiskNumber", "PartitionNumber", "AccessPaths"})
	if err != nil {
		return nil, fmt.Errorf("list volumes: list partitions: %w", err)
	}
	onDisk := map[string]uint32{}
	for _, in := range parts {
		pr := propsOf(in, classPartition)
		num, paths := pr.RequiredUint32("DiskNumber"), pr.Strings("AccessPaths")
		if err := pr.Err(); err != nil {
			return nil, fmt.Errorf("list volumes: read a partition: %w", err)
		}
		for _, ap := range paths {
			if g, ok := winpath.VolumeGUIDPath(ap); ok {
				onDisk[g] = num
			}
		}
	}
	out := make([]host.ListedVolume, 0, len(insts))
	for _, in := range insts {
		vol, err := parseVolume(in)
		if err != nil {
			return nil, fmt.Errorf("list volumes: %w", err)
		}
		num, ok := onDisk[vol.GUIDPath]
		out = append(out, host.ListedVolume{Volume: vol, DiskNumber: num, OnDisk: ok})
	}
	return out, nil
}

// Format implements host.Volumes: MSFT_Volume.Format(FileSystem,
// FileSystemLabel, AllocationUnitSize (only when set), Full=false,
// Force=false), a quick format that the provider may refuse for a volume in
// use rather than force. A volume that already carries a file system is
// refused before any call. The result is read from the FormattedVolume
// output parameter; without a usable one the volume is queried again.
//
// Uncertain: what Force changes is not documented beyond "force the format
// operation"; csi-proxy passes true. With false, a fresh volume that some
// other process (an indexer, antivirus) has opened may be refused; the
// call then fails and the stage is retried.
func (v *Volumes) Format(ctx context.Context, vol host.Volume, o host.FormatOptions) (host.Volume, error) {
	if vol.FileSystem != "" {
		return host.Volume{}, fmt.Errorf("volume %s already holds a %s file system; the plugin never reformats: %w",
			vol.GUIDPath, vol.FileSystem, host.ErrAlreadyExists)
	}
	var fs string
	switch {
	case strings.EqualFold(o.FileSystem, "NTFS"):
		fs = "NTFS"
	case strings.EqualFold(o.FileSystem, "ReFS"):
		fs = "ReFS"
	default:
		return host.Volume{}, fmt.Errorf("format volume %s as %q: only NTFS and ReFS are supported: %w", vol.GUIDPath, o.FileSystem, host.ErrInvalid)
	}
	if vol.Ref == "" {
		return host.Volume{}, fmt.Errorf("volume %s has no WMI object path: %w", vol.GUIDPath, host.ErrInvalid)
	}
	in := []Param{{Name: "FileSystem", Value: fs}, {Name: "FileSystemLabel", Value: o.Label}}
	if o.AllocationUnitSize != 0 {
		in = append(in, Param{Name: "AllocationUnitSize", Value: o.AllocationUnitSize})
	}
	in = append(in, Param{Name: "Full", Value: false}, Param{Name: "Force", Value: false})
	r, err := v.s.call(ctx, Method{Class: classVolume, Path: vol.Ref, Name: "Format", In: in})
	if err != nil {
		return host.Volume{}, fmt.Errorf("format volume %s as %s: %w", vol.GUIDPath, fs, err)
	}
	out := OutOf(classVolume, "Format", r)
	fv, ok := out.TryInstance("FormattedVolume")
	if err := out.Err(); err != nil {
		return host.Volume{}, fmt.Errorf("format volume %s as %s: %w", vol.GUIDPath, fs, err)
	}
	if ok {
		if out, err := parseVolume(fv); err == nil && out.FileSystem != "" {
			if out.Ref == "" {
				out.Ref = vol.Ref
			}
			return out, nil
		}
	}
	return v.Get(ctx, vol.GUIDPath)
}

// Mount implements host.Volumes: SetVolumeMountPoint(dir\, \\?\Volume{GUID}\).
// A directory with entries, including another volume's mount point, fails
// with ERROR_DIR_NOT_EMPTY: host.ErrDirNotEmpty.
func (v *Volumes) Mount(ctx context.Context, guidPath, dir string) error {
	guid, err := volumeGUID(guidPath)
	if err != nil {
		return err
	}
	if err := v.s.e.SetVolumeMountPoint(ctx, winpath.WithTrailingSeparator(dir), guid); err != nil {
		return fmt.Errorf("mount volume %s at %s: %w", guid, dir, mapHostErr(err))
	}
	return nil
}

// Unmount implements host.Volumes: DeleteVolumeMountPoint(dir\). A path that
// is not a mount point fails as Windows reports it: ERROR_NOT_A_REPARSE_POINT
// or a missing path read as host.ErrNotFound. Uncertain: the error
// DeleteVolumeMountPoint gives for a plain directory is not documented.
func (v *Volumes) Unmount(ctx context.Context, dir string) error {
	if err := v.s.e.DeleteVolumeMountPoint(ctx, winpath.WithTrailingSeparator(dir)); err != nil {
		return fmt.Errorf("remove the mount point at %s: %w", dir, mapHostErr(err))
	}
	return nil
}

// Flush implements host.Volumes: FlushFileBuffers on the volume handle
// (\\?\Volume{GUID}), which writes the file system's cached data; no WMI.
func (v *Volumes) Flush(ctx context.Context, guidPath string) error {
	guid, err := volumeGUID(guidPath)
	if err != nil {
		return err
	}
	if err := v.s.e.FlushVolume(ctx, strings.TrimSuffix(guid, `\`)); err != nil {
		return fmt.Errorf("flush volume %s: %w", guid, mapHostErr(err))
	}
	return nil
}

// DiskNumber implements host.Volumes: IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS
// on \\?\Volume{GUID}, the first extent's disk.
func (v *Volumes) DiskNumber(ctx context.Context, guidPath string) (uint32, error) {
	guid, err := volumeGUID(guidPath)
	if err != nil {
		return 0, err
	}
	b, err := v.s.e.VolumeDiskExtents(ctx, strings.TrimSuffix(guid, `\`))
	if err != nil {
		return 0, fmt.Errorf("read the disk extents of volume %s: %w", guid, mapHostErr(err))
	}
	ext, err := parseVolumeDiskExtents(b)
	if err != nil {
		return 0, fmt.Errorf("read the disk extents of volume %s: %w", guid, err)
	}
	return ext[0].DiskNumber, nil
}

// FreeSpace implements host.Volumes: GetDiskFreeSpaceEx(path\), which
// follows links and mount points to the file system holding path.
func (v *Volumes) FreeSpace(ctx context.Context, path string) (host.Space, error) {
	avail, total, free, err := v.s.e.GetDiskFreeSpaceEx(ctx, winpath.WithTrailingSeparator(path))
	if err != nil {
		return host.Space{}, fmt.Errorf("read free space of %s: %w", path, mapHostErr(err))
	}
	return host.Space{Total: total, Free: free, AvailableToUse: avail}, nil
}

// volumeGUID returns the canonical \\?\Volume{guid}\ form of a volume GUID
// path, or host.ErrInvalid.
func volumeGUID(p string) (string, error) {
	g, ok := winpath.VolumeGUIDPath(p)
	if !ok {
		return "", fmt.Errorf("%q is not a volume GUID path: %w", p, host.ErrInvalid)
	}
	return g, nil
}
