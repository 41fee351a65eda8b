package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// cleanAbs cleans a host path; the sim takes host-native (Linux) absolute
// paths only.
func cleanAbs(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute: %w", p, host.ErrInvalid)
	}
	return filepath.Clean(p), nil
}

// pathError maps a file-system error onto the host sentinels.
func pathError(what, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s %s: %w", what, p, host.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s %s: %w", what, p, host.ErrAlreadyExists)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s: %w", what, p, host.ErrAccessDenied)
	}
	return fmt.Errorf("%s %s: %w", what, p, err)
}

func dirIsEmpty(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// under reports whether p lies inside root and returns the relative rest
// ("" for root itself).
func under(root, p string) (string, bool) {
	if p == root {
		return "", true
	}
	rest, ok := strings.CutPrefix(p, root+string(filepath.Separator))
	return rest, ok
}

// mountTarget reports whether a link target is a volume mount point made
// by Volumes.Mount: exactly <Dir>/volumes/<guid>.
func (s *Sim) mountTarget(target string) (string, bool) {
	rest, ok := under(s.volumesRoot(), target)
	if !ok || !isGUID(rest) {
		return "", false
	}
	return rest, true
}

// classifyLink describes the symbolic link at p the way Windows would.
func (s *Sim) classifyLink(st *State, p string) (host.PathInfo, error) {
	target, err := os.Readlink(p)
	if err != nil {
		return host.PathInfo{}, pathError("link", p, err)
	}
	if guid, ok := s.mountTarget(target); ok {
		return host.PathInfo{Kind: host.PathMountPoint, Target: guidPath(guid)}, nil
	}
	// A directory symlink to a volume GUID path (mklink /D dir \\?\Volume{}\)
	// is stored with a trailing separator to tell it from a mount point.
	if t, ok := strings.CutSuffix(target, s.sep()); ok {
		if guid, ok := s.mountTarget(t); ok {
			return host.PathInfo{Kind: host.PathSymlink, Target: guidPath(guid)}, nil
		}
	}
	if rest, ok := under(s.smbRoot(), filepath.Clean(target)); ok && rest != "" {
		parts := strings.Split(rest, s.sep())
		if len(parts) >= 2 {
			return host.PathInfo{Kind: host.PathSymlink, Target: st.uncFromParts(parts) + `\`}, nil
		}
	}
	return host.PathInfo{Kind: host.PathSymlink, Target: target}, nil
}

// linkTarget turns a Windows link target into the Linux target of the
// symlink that stands for it.
func (s *Sim) linkTarget(target string) (string, error) {
	if guid, err := parseGUIDPath(target); err == nil {
		return s.volumeDir(guid) + s.sep(), nil
	}
	if isUNC(target) {
		server, share, rest, err := parseUNC(target)
		if err != nil {
			return "", err
		}
		return filepath.Join(append([]string{s.shareDir(server, share)}, rest...)...), nil
	}
	if filepath.IsAbs(target) {
		return target, nil
	}
	return "", fmt.Errorf("link target %q is neither absolute nor UNC: %w", target, host.ErrInvalid)
}

// files implements host.Files on the real file system.
type files struct{ s *Sim }

func (h files) Stat(ctx context.Context, path string) (host.PathInfo, error) {
	return call(ctx, h.s, OpFilesStat, false, func(st *State) (host.PathInfo, error) {
		path, err := cleanAbs(path)
		if err != nil {
			return host.PathInfo{}, err
		}
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return host.PathInfo{Kind: host.PathMissing}, nil
		}
		if err != nil {
			return host.PathInfo{}, pathError("path", path, err)
		}
		switch m := fi.Mode(); {
		case m&fs.ModeSymlink != 0:
			return h.s.classifyLink(st, path)
		case m.IsDir():
			return host.PathInfo{Kind: host.PathDir}, nil
		case m.IsRegular():
			return host.PathInfo{Kind: host.PathFile}, nil
		}
		return host.PathInfo{Kind: host.PathOther}, nil
	})
}

func (h files) MakeDir(ctx context.Context, path string) error {
	_, err := call(ctx, h.s, OpFilesMakeDir, false, func(*State) (struct{}, error) {
		path, err := cleanAbs(path)
		if err != nil {
			return struct{}{}, err
		}
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			return struct{}{}, fmt.Errorf("directory %s: a file of that name exists: %w", path, host.ErrAlreadyExists)
		}
		if err := os.MkdirAll(path, 0o750); err != nil {
			if errors.Is(err, syscall.ENOTDIR) {
				return struct{}{}, fmt.Errorf("directory %s: a parent is a file: %w", path, host.ErrAlreadyExists)
			}
			return struct{}{}, pathError("directory", path, err)
		}
		return struct{}{}, nil
	})
	return err
}

func (h files) Remove(ctx context.Context, path string) error {
	_, err := call(ctx, h.s, OpFilesRemove, false, func(*State) (struct{}, error) {
		path, err := cleanAbs(path)
		if err != nil {
			return struct{}{}, err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return struct{}{}, pathError("path", path, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err := os.Readlink(path); err == nil {
				if _, ok := h.s.mountTarget(target); ok {
					return struct{}{}, fmt.Errorf("%s is a volume mount point (unmount it): %w", path, host.ErrInUse)
				}
			}
		}
		if err := os.Remove(path); err != nil {
			if fi.IsDir() {
				if empty, eerr := dirIsEmpty(path); eerr == nil && !empty {
					return struct{}{}, fmt.Errorf("directory %s: %w", path, host.ErrDirNotEmpty)
				}
			}
			return struct{}{}, pathError("path", path, err)
		}
		return struct{}{}, nil
	})
	return err
}

func (h files) Symlink(ctx context.Context, link, target string) error {
	_, err := call(ctx, h.s, OpFilesSymlink, false, func(*State) (struct{}, error) {
		link, err := cleanAbs(link)
		if err != nil {
			return struct{}{}, err
		}
		to, err := h.s.linkTarget(target)
		if err != nil {
			return struct{}{}, err
		}
		if _, err := os.Lstat(link); err == nil {
			return struct{}{}, fmt.Errorf("link %s: %w", link, host.ErrAlreadyExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return struct{}{}, pathError("link", link, err)
		}
		parent := filepath.Dir(link)
		if fi, err := os.Stat(parent); err != nil {
			return struct{}{}, pathError("parent of link", link, err)
		} else if !fi.IsDir() {
			return struct{}{}, fmt.Errorf("parent of link %s is not a directory: %w", link, host.ErrNotFound)
		}
		// Windows allows dangling directory symlinks; so does Linux.
		if err := os.Symlink(to, link); err != nil {
			return struct{}{}, pathError("link", link, err)
		}
		return struct{}{}, nil
	})
	return err
}

func (h files) IsEmptyDir(ctx context.Context, path string) (bool, error) {
	return call(ctx, h.s, OpFilesIsEmptyDir, false, func(*State) (bool, error) {
		path, err := cleanAbs(path)
		if err != nil {
			return false, err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return false, pathError("path", path, err)
		}
		if !fi.IsDir() {
			return false, nil
		}
		empty, err := dirIsEmpty(path)
		if err != nil {
			return false, pathError("directory", path, err)
		}
		return empty, nil
	})
}

func (h files) ReadDir(ctx context.Context, path string) ([]string, error) {
	return call(ctx, h.s, OpFilesReadDir, false, func(*State) ([]string, error) {
		path, err := cleanAbs(path)
		if err != nil {
			return nil, err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, pathError("directory", path, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a plain directory: %w", path, host.ErrInvalid)
		}
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, pathError("directory", path, err)
		}
		names := make([]string, len(ents))
		for i, e := range ents {
			names[i] = e.Name()
		}
		return names, nil
	})
}
