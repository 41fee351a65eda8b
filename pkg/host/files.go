package host

import "context"

// PathKind classifies what is at a path, the way Windows sees it.
type PathKind int

// Path kinds.
const (
	PathMissing    PathKind = iota // nothing there
	PathDir                        // a plain directory
	PathFile                       // a plain file
	PathSymlink                    // a directory or file symbolic link
	PathMountPoint                 // a volume mount point (IO_REPARSE_TAG_MOUNT_POINT naming a volume)
	PathOther                      // another reparse point (junction to a directory, dedup, ...)
)

func (k PathKind) String() string {
	switch k {
	case PathMissing:
		return "missing"
	case PathDir:
		return "directory"
	case PathFile:
		return "file"
	case PathSymlink:
		return "symlink"
	case PathMountPoint:
		return "mount point"
	case PathOther:
		return "reparse point"
	}
	return "unknown"
}

// PathInfo describes what is at a path, without following it.
type PathInfo struct {
	Kind PathKind
	// Target is the link's target for PathSymlink, in the form Windows
	// reports it: a drive path (C:\...), a UNC path (\\server\share\dir\)
	// or, for PathMountPoint, the volume's GUID path (\\?\Volume{GUID}\).
	Target string
}

// Files is the part of the file system the plugin manages under the kubelet
// directory: directories, links and mount points. It never removes data:
// there is no recursive removal.
type Files interface {
	// Stat describes path without following a final link or mount point.
	Stat(ctx context.Context, path string) (PathInfo, error)

	// MakeDir creates path and its missing parents as directories.
	MakeDir(ctx context.Context, path string) error

	// Remove removes an empty directory, a link or a file name that is a
	// link; a non-empty directory fails with ErrDirNotEmpty, a missing
	// path with ErrNotFound. It never follows links and never recurses.
	Remove(ctx context.Context, path string) error

	// Symlink creates a directory symbolic link at link pointing to target
	// (an absolute drive or UNC path). link must not exist; its parent must.
	Symlink(ctx context.Context, link, target string) error

	// IsEmptyDir reports whether path is a plain directory with no entries.
	IsEmptyDir(ctx context.Context, path string) (bool, error)

	// ReadDir returns the names of the entries of the plain directory at
	// path ("." and ".." left out), in no particular order. It never
	// follows a link or mount point: one at path fails with ErrInvalid. A
	// missing path fails with ErrNotFound. Tools that take stock of the
	// kubelet directory use it (pkg/inventory); the backends never do.
	ReadDir(ctx context.Context, path string) ([]string, error)
}
