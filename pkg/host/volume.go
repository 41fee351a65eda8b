package host

import "context"

// Volume is one MSFT_Volume.
type Volume struct {
	Ref string
	// GUIDPath is the volume's name, \\?\Volume{GUID}\ with the trailing
	// backslash (MSFT_Volume.Path).
	GUIDPath string
	// FileSystem is "NTFS", "ReFS", "FAT32", ... or empty when the volume
	// carries no recognised file system (RAW).
	FileSystem         string
	Label              string
	Size               uint64
	SizeRemaining      uint64
	AllocationUnitSize uint32
	HealthStatus       HealthStatus
}

// ListedVolume is a volume as Volumes.List reports it: with the disk that
// holds it.
type ListedVolume struct {
	Volume
	// DiskNumber is the number of the disk holding the volume, valid when
	// OnDisk; a volume List could not place has OnDisk false (ask
	// Volumes.DiskNumber).
	DiskNumber uint32
	OnDisk     bool
}

// FormatOptions are the MSFT_Volume.Format inputs the plugin uses. The format
// is always quick.
type FormatOptions struct {
	FileSystem         string // "NTFS" or "ReFS"
	Label              string // empty: none
	AllocationUnitSize uint32 // 0: the file system's default
}

// Space is what GetDiskFreeSpaceEx reports for a path.
type Space struct {
	Total          uint64 // TotalNumberOfBytes
	Free           uint64 // TotalNumberOfFreeBytes
	AvailableToUse uint64 // FreeBytesAvailableToCaller
}

// Volumes is the volume side of the storage stack: MSFT_Volume and the Win32
// volume-management calls.
type Volumes interface {
	// OfPartition returns the volume on the partition (association
	// MSFT_PartitionToVolume), or ErrNotFound when it has none yet.
	OfPartition(ctx context.Context, p Partition) (Volume, error)

	// Get returns the volume with this GUID path, or ErrNotFound.
	Get(ctx context.Context, guidPath string) (Volume, error)

	// List returns every volume the host sees, each with the disk holding
	// it where the host can tell, at a cost that does not grow with the
	// volumes.
	List(ctx context.Context) ([]ListedVolume, error)

	// Format puts a file system on the volume and returns the volume as it
	// is afterwards. Formatting a volume that already has a file system
	// fails with ErrAlreadyExists: the plugin never reformats.
	Format(ctx context.Context, v Volume, o FormatOptions) (Volume, error)

	// Mount makes dir, an existing empty directory, a mount point of the
	// volume (SetVolumeMountPoint). A dir with entries fails with
	// ErrDirNotEmpty, whether the entries are files or another volume.
	Mount(ctx context.Context, guidPath, dir string) error

	// Unmount removes the volume mount point at dir and leaves dir as an
	// empty directory (DeleteVolumeMountPoint). ErrNotFound when dir is
	// not a mount point.
	Unmount(ctx context.Context, dir string) error

	// Flush writes the volume's cached data to disk.
	Flush(ctx context.Context, guidPath string) error

	// DiskNumber returns the number of the disk holding the volume
	// (IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, first extent).
	DiskNumber(ctx context.Context, guidPath string) (uint32, error)

	// FreeSpace reports the space of the file system holding path,
	// following links and mount points (GetDiskFreeSpaceEx).
	FreeSpace(ctx context.Context, path string) (Space, error)
}
