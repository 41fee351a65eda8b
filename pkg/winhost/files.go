package winhost

import (
	"context"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// File attributes (winnt.h) and CreateSymbolicLinkW flags (winbase.h).
const (
	fileAttributeDirectory    = 0x10
	fileAttributeReparsePoint = 0x400

	symbolicLinkFlagDirectory               = 0x1
	symbolicLinkFlagAllowUnprivilegedCreate = 0x2
)

// Files implements host.Files with Win32 file calls only; it never uses
// os.Lstat or os.Readlink, whose treatment of mount points changed in Go
// 1.23 (the winsymlink setting in the Go 1.23 release notes,
// golang/go#61893): what a path is comes from its
// attributes and its reparse data, read by the executor.
//
// Paths go to the file APIs in their \\?\ long form (winpath.LongPath):
// GetFileAttributesW, CreateFileW (reparse data), CreateDirectoryW,
// RemoveDirectoryW, FindFirstFileW and the link name of CreateSymbolicLinkW
// all accept it, which lifts the MAX_PATH limit for deep kubelet paths. A
// link's target is stored as given (a drive path) or in the long UNC form
// for shares (winpath.UNCLinkTarget).
type Files struct{ e Executor }

var _ host.Files = (*Files)(nil)

// NewFiles returns the file side of the Windows host.
func NewFiles(e Executor) *Files { return &Files{e: e} }

// Stat implements host.Files: GetFileAttributes, and for a reparse point
// FSCTL_GET_REPARSE_POINT, classified by exact tag:
//   - IO_REPARSE_TAG_SYMLINK: PathSymlink, Target the substitute name in
//     Win32 form (the print name is display text and is not trusted);
//   - IO_REPARSE_TAG_MOUNT_POINT naming \??\Volume{GUID}\: PathMountPoint,
//     Target \\?\Volume{guid}\;
//   - IO_REPARSE_TAG_MOUNT_POINT naming a directory (a junction), or any
//     other tag: PathOther.
//
// A missing path (ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND) is PathMissing
// with a nil error.
func (f *Files) Stat(ctx context.Context, path string) (host.PathInfo, error) {
	info, _, err := f.stat(ctx, path)
	return info, err
}

func (f *Files) stat(ctx context.Context, path string) (host.PathInfo, uint32, error) {
	if path == "" {
		return host.PathInfo{}, 0, fmt.Errorf("stat an empty path: %w", host.ErrInvalid)
	}
	long := winpath.LongPath(path)
	attrs, err := f.e.GetFileAttributes(ctx, long)
	if isCode(err, ErrorFileNotFound, ErrorPathNotFound) {
		return host.PathInfo{Kind: host.PathMissing}, 0, nil
	}
	if err != nil {
		return host.PathInfo{}, 0, fmt.Errorf("read attributes of %s: %w", path, mapHostErr(err))
	}
	plain := func() host.PathInfo {
		if attrs&fileAttributeDirectory != 0 {
			return host.PathInfo{Kind: host.PathDir}
		}
		return host.PathInfo{Kind: host.PathFile}
	}
	if attrs&fileAttributeReparsePoint == 0 {
		return plain(), attrs, nil
	}
	b, err := f.e.ReadReparsePoint(ctx, long)
	switch {
	case isCode(err, ErrorFileNotFound, ErrorPathNotFound):
		// Removed between the two calls.
		return host.PathInfo{Kind: host.PathMissing}, 0, nil
	case isCode(err, ErrorNotAReparsePoint):
		// The reparse point was removed between the two calls; what is
		// left is what the attributes say without it.
		attrs &^= fileAttributeReparsePoint
		return plain(), attrs, nil
	case err != nil:
		return host.PathInfo{}, 0, fmt.Errorf("read reparse point %s: %w", path, mapHostErr(err))
	}
	rp, err := parseReparsePoint(b)
	if err != nil {
		return host.PathInfo{}, 0, fmt.Errorf("read reparse point %s: %w", path, err)
	}
	switch rp.Tag {
	case ioReparseTagSymlink:
		t := rp.SubstituteName
		if !rp.Relative {
			t = win32Target(t)
		}
		return host.PathInfo{Kind: host.PathSymlink, Target: t}, attrs, nil
	case ioReparseTagMountPoint:
		t := win32Target(rp.SubstituteName)
		if winpath.IsVolumeGUIDPath(t) {
			return host.PathInfo{Kind: host.PathMountPoint, Target: t}, attrs, nil
		}
		return host.PathInfo{Kind: host.PathOther, Target: t}, attrs, nil
	}
	return host.PathInfo{Kind: host.PathOther}, attrs, nil
}

// MakeDir implements host.Files with CreateDirectory, creating missing
// ancestors one by one: one call when the parent exists, and on
// ERROR_PATH_NOT_FOUND walking up until a directory can be created, then
// down again. An existing directory (ERROR_ALREADY_EXISTS) is success; a
// file of that name is host.ErrAlreadyExists. It never goes above a drive
// or share root.
func (f *Files) MakeDir(ctx context.Context, path string) error {
	if path == "" {
		return fmt.Errorf("create an empty path: %w", host.ErrInvalid)
	}
	var missing []string // deepest first
	for cur := path; ; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("create directory %s: %w", path, err)
		}
		err := f.e.CreateDirectory(ctx, winpath.LongPath(cur))
		if err == nil {
			break
		}
		if isCode(err, ErrorAlreadyExists, ErrorFileExists) {
			if cur == path {
				return f.existingDir(ctx, path)
			}
			break // created concurrently; its children follow
		}
		// Never above a drive or share root: those are not created.
		parent, ok := winpath.Parent(cur)
		if !isCode(err, ErrorPathNotFound) || !ok || winpath.IsRoot(parent) {
			return fmt.Errorf("create directory %s: %w", cur, mapHostErr(err))
		}
		missing = append(missing, cur)
		cur = parent
	}
	for i := len(missing) - 1; i >= 0; i-- {
		err := f.e.CreateDirectory(ctx, winpath.LongPath(missing[i]))
		if isCode(err, ErrorAlreadyExists, ErrorFileExists) {
			err = f.existingDir(ctx, missing[i])
		}
		if err != nil {
			return fmt.Errorf("create directory %s: %w", missing[i], mapHostErr(err))
		}
	}
	return nil
}

// existingDir accepts an existing directory (or a link or mount point to
// one) and refuses a file.
func (f *Files) existingDir(ctx context.Context, path string) error {
	attrs, err := f.e.GetFileAttributes(ctx, winpath.LongPath(path))
	if err != nil {
		return fmt.Errorf("read attributes of %s: %w", path, mapHostErr(err))
	}
	if attrs&fileAttributeDirectory == 0 {
		return fmt.Errorf("create directory %s: a file of that name exists: %w", path, host.ErrAlreadyExists)
	}
	return nil
}

// Remove implements host.Files. It removes an empty directory or a
// directory link (symlink or junction) with RemoveDirectory, which removes
// a link itself and never what it points to. It refuses a volume mount
// point (host.ErrInUse: unmount it first, or the volume would stay mounted
// without a path) and a plain file or file symlink (host.ErrConflict: the
// plugin never deletes files).
func (f *Files) Remove(ctx context.Context, path string) error {
	info, attrs, err := f.stat(ctx, path)
	if err != nil {
		return err
	}
	switch {
	case info.Kind == host.PathMissing:
		return fmt.Errorf("remove %s: %w", path, host.ErrNotFound)
	case info.Kind == host.PathMountPoint:
		return fmt.Errorf("%s is the mount point of volume %s; unmount it instead: %w", path, info.Target, host.ErrInUse)
	case attrs&fileAttributeDirectory == 0:
		return fmt.Errorf("%s is a %s, not a directory or directory link; the plugin never deletes files: %w", path, info.Kind, host.ErrConflict)
	}
	if err := f.e.RemoveDirectory(ctx, winpath.LongPath(path)); err != nil {
		return fmt.Errorf("remove %s: %w", path, mapHostErr(err))
	}
	return nil
}

// Symlink implements host.Files: CreateSymbolicLink(link, target,
// SYMBOLIC_LINK_FLAG_DIRECTORY|SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE).
// A UNC target is stored in the long form with a trailing backslash
// (winpath.UNCLinkTarget); a drive target as given. Windows before 10
// 1703 / Server 2019 rejects the unprivileged flag with
// ERROR_INVALID_PARAMETER; the call is then repeated without it (the
// plugin runs as SYSTEM, which holds the symlink privilege).
func (f *Files) Symlink(ctx context.Context, link, target string) error {
	if link == "" || target == "" {
		return fmt.Errorf("link %q to %q: %w", link, target, host.ErrInvalid)
	}
	t := target
	if isUNC(target) {
		t = winpath.UNCLinkTarget(target)
	}
	l := winpath.LongPath(link)
	err := f.e.CreateSymbolicLink(ctx, l, t, symbolicLinkFlagDirectory|symbolicLinkFlagAllowUnprivilegedCreate)
	if isCode(err, ErrorInvalidParameter) {
		err = f.e.CreateSymbolicLink(ctx, l, t, symbolicLinkFlagDirectory)
	}
	if err != nil {
		return fmt.Errorf("link %s to %s: %w", link, target, mapHostErr(err))
	}
	return nil
}

// isUNC reports whether p names a share: \\srv\share..., //srv/share...,
// \\?\UNC\... or \??\UNC\... (not \\?\C:\ or \\.\ device paths).
func isUNC(p string) bool {
	s := strings.ReplaceAll(p, "/", `\`)
	switch {
	case len(s) >= 8 && (strings.EqualFold(s[:8], `\\?\UNC\`) || strings.EqualFold(s[:8], `\??\UNC\`)):
		return true
	case strings.HasPrefix(s, `\\?\`), strings.HasPrefix(s, `\\.\`):
		return false
	}
	return strings.HasPrefix(s, `\\`)
}

// plainDir reads the attributes of path (GetFileAttributes): its long
// form, and whether it is a plain directory, not a file, link or mount
// point. A missing path is host.ErrNotFound (mapHostErr).
func (f *Files) plainDir(ctx context.Context, verb, path string) (long string, plain bool, err error) {
	if path == "" {
		return "", false, fmt.Errorf("%s an empty path: %w", verb, host.ErrInvalid)
	}
	long = winpath.LongPath(path)
	attrs, err := f.e.GetFileAttributes(ctx, long)
	if err != nil {
		return "", false, fmt.Errorf("read attributes of %s: %w", path, mapHostErr(err))
	}
	return long, attrs&fileAttributeDirectory != 0 && attrs&fileAttributeReparsePoint == 0, nil
}

// IsEmptyDir implements host.Files: GetFileAttributes, then (for a plain
// directory only) a directory listing that stops at the first entry.
// Links and mount points are not plain directories: false.
func (f *Files) IsEmptyDir(ctx context.Context, path string) (bool, error) {
	long, plain, err := f.plainDir(ctx, "inspect", path)
	if err != nil || !plain {
		return false, err
	}
	has, err := f.e.DirectoryHasEntries(ctx, long)
	if err != nil {
		return false, fmt.Errorf("list directory %s: %w", path, mapHostErr(err))
	}
	return !has, nil
}

// ReadDir implements host.Files: GetFileAttributes, then, for a plain
// directory only, a full directory listing (FindFirstFileW/FindNextFileW,
// which report the entries' own names without following them). A link or
// mount point at path is refused rather than listed: what it leads to is
// a volume's or share's contents, never the kubelet directory's.
func (f *Files) ReadDir(ctx context.Context, path string) ([]string, error) {
	long, plain, err := f.plainDir(ctx, "list", path)
	if err != nil {
		return nil, err
	}
	if !plain {
		return nil, fmt.Errorf("%s is not a plain directory: %w", path, host.ErrInvalid)
	}
	names, err := f.e.DirectoryEntries(ctx, long)
	if err != nil {
		return nil, fmt.Errorf("list directory %s: %w", path, mapHostErr(err))
	}
	return names, nil
}
