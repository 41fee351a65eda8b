package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// systemUsed is what the simulated C: volume reports as used.
const systemUsed = 40 << 30

func guidPath(guid string) string { return `\\?\Volume{` + guid + `}\` }

// parseGUIDPath accepts \\?\Volume{GUID}\ (trailing backslash optional,
// any case) and returns the GUID in lower case.
func parseGUIDPath(p string) (string, error) {
	const prefix = `\\?\volume{`
	q := strings.TrimSuffix(p, `\`)
	if len(q) < len(prefix) || !strings.EqualFold(q[:len(prefix)], prefix) || !strings.HasSuffix(q, "}") {
		return "", fmt.Errorf("volume path %q: %w", p, host.ErrInvalid)
	}
	guid := strings.ToLower(q[len(prefix) : len(q)-1])
	if !isGUID(guid) {
		return "", fmt.Errorf("volume path %q: %w", p, host.ErrInvalid)
	}
	return guid, nil
}

func isGUID(g string) bool {
	if len(g) != 36 {
		return false
	}
	for i, c := range g {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

func (s *Sim) volumesRoot() string          { return filepath.Join(s.dir, volumesSubdir) }
func (s *Sim) volumeDir(guid string) string { return filepath.Join(s.dir, volumesSubdir, guid) }
func (s *Sim) sep() string                  { return string(filepath.Separator) }

func (s *Sim) makeVolumeDir(guid string) error {
	if err := os.MkdirAll(s.volumeDir(guid), 0o750); err != nil {
		return fmt.Errorf("volume %s contents: %w", guidPath(guid), err)
	}
	return nil
}

// volume finds a volume the host can see now: its disk is attached and
// online. Uncertain: the sim assumes MSFT_Volume does not list the volumes
// of an offline disk (they are not mounted by the volume manager).
func (st *State) volume(guid string) (*DiskState, *PartitionState, error) {
	for i := range st.Disks {
		d := &st.Disks[i]
		for j := range d.Partitions {
			p := &d.Partitions[j]
			if p.Volume == nil || p.Volume.GUID != guid {
				continue
			}
			if d.Offline {
				return nil, nil, fmt.Errorf("volume %s: disk %d is offline (device not ready): %w", guidPath(guid), d.Number, host.ErrNotFound)
			}
			return d, p, nil
		}
	}
	return nil, nil, fmt.Errorf("volume %s: %w", guidPath(guid), host.ErrNotFound)
}

func (st *State) volumeByPath(p string) (*DiskState, *PartitionState, error) {
	guid, err := parseGUIDPath(p)
	if err != nil {
		return nil, nil, err
	}
	return st.volume(guid)
}

// fsOverhead is the space a fresh file system of the size uses for its own
// metadata. Illustrative, not measured: it only has to be small and
// non-zero, and larger for ReFS than for NTFS.
func fsOverhead(fileSystem string, size uint64) uint64 {
	var o uint64
	switch fileSystem {
	case "":
		return 0
	case "ReFS":
		o = size/64 + 64*mib
	case "NTFS":
		o = size/256 + 8*mib
	default:
		o = size/512 + mib
	}
	return min(o, size)
}

// dirUsage sums the sizes of the regular files under dir, each rounded up
// to the allocation unit. A missing dir uses nothing.
func dirUsage(dir string, unit uint32) (uint64, error) {
	var used uint64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		n := uint64(info.Size())
		if unit > 0 {
			n = alignUp(n, uint64(unit))
		}
		used += n
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("usage of %s: %w", dir, err)
	}
	return used, nil
}

func (s *Sim) toHostVolume(p *PartitionState) (host.Volume, error) {
	v := p.Volume
	out := host.Volume{
		Ref:                guidPath(v.GUID),
		GUIDPath:           guidPath(v.GUID),
		FileSystem:         v.FileSystem,
		Label:              v.Label,
		Size:               v.Size,
		AllocationUnitSize: v.AllocationUnit,
		HealthStatus:       v.Health,
	}
	if v.FileSystem == "" {
		return out, nil
	}
	if p.DriveLetter != "" {
		out.SizeRemaining = v.Size - min(v.Size, systemUsed)
		return out, nil
	}
	used, err := dirUsage(s.volumeDir(v.GUID), v.AllocationUnit)
	if err != nil {
		return host.Volume{}, err
	}
	if taken := used + fsOverhead(v.FileSystem, v.Size); taken < v.Size {
		out.SizeRemaining = v.Size - taken
	}
	return out, nil
}

// checkFormat validates format options and returns the canonical file
// system name and the allocation unit. premade admits the file systems a
// pre-made disk may carry besides those the plugin formats with.
func checkFormat(fileSystem string, unit uint32, label string, premade bool) (string, uint32, error) {
	var fsName string
	maxLabel := 32
	switch strings.ToLower(fileSystem) {
	case "ntfs":
		fsName = "NTFS"
		// NTFS clusters: powers of two from 512 bytes to 2 MB (Windows
		// Server 2019 and later; format /A).
		if unit != 0 && (bits.OnesCount32(unit) != 1 || unit < 512 || unit > 2*mib) {
			return "", 0, fmt.Errorf("allocation unit %d for NTFS: %w", unit, host.ErrInvalid)
		}
	case "refs":
		fsName = "ReFS"
		// ReFS clusters are 4 KB or 64 KB.
		if unit != 0 && unit != 4096 && unit != 65536 {
			return "", 0, fmt.Errorf("allocation unit %d for ReFS: %w", unit, host.ErrInvalid)
		}
	case "fat32", "exfat":
		if !premade {
			return "", 0, fmt.Errorf("file system %q: %w", fileSystem, host.ErrInvalid)
		}
		fsName, maxLabel = "FAT32", 11
		if strings.EqualFold(fileSystem, "exfat") {
			fsName = "exFAT"
		}
	default:
		return "", 0, fmt.Errorf("file system %q: %w", fileSystem, host.ErrInvalid)
	}
	if len(label) > maxLabel {
		return "", 0, fmt.Errorf("label %q longer than %d characters: %w", label, maxLabel, host.ErrInvalid)
	}
	if unit == 0 {
		unit = 4096 // the default for volumes below 16 TB
	}
	return fsName, unit, nil
}

// volumes implements host.Volumes.
type volumes struct{ s *Sim }

func (h volumes) OfPartition(ctx context.Context, part host.Partition) (host.Volume, error) {
	return call(ctx, h.s, OpVolumesOfPartition, false, func(st *State) (host.Volume, error) {
		d, p, err := st.partition(part)
		if err != nil {
			return host.Volume{}, err
		}
		if p.Volume == nil {
			return host.Volume{}, fmt.Errorf("partition at offset %d on disk %d has no volume: %w", p.Offset, d.Number, host.ErrNotFound)
		}
		if d.Offline {
			return host.Volume{}, fmt.Errorf("partition at offset %d on disk %d: disk is offline, no volume: %w", p.Offset, d.Number, host.ErrNotFound)
		}
		return h.s.toHostVolume(p)
	})
}

func (h volumes) Get(ctx context.Context, path string) (host.Volume, error) {
	return call(ctx, h.s, OpVolumesGet, false, func(st *State) (host.Volume, error) {
		_, p, err := st.volumeByPath(path)
		if err != nil {
			return host.Volume{}, err
		}
		return h.s.toHostVolume(p)
	})
}

// List lists the volumes of the online disks (an offline disk hides its
// volumes, as Get and DiskNumber say), each with its disk.
func (h volumes) List(ctx context.Context) ([]host.ListedVolume, error) {
	return call(ctx, h.s, OpVolumesList, false, func(st *State) ([]host.ListedVolume, error) {
		var out []host.ListedVolume
		for i := range st.Disks {
			d := &st.Disks[i]
			if d.Offline {
				continue
			}
			for j := range d.Partitions {
				p := &d.Partitions[j]
				if p.Volume == nil {
					continue
				}
				v, err := h.s.toHostVolume(p)
				if err != nil {
					return nil, err
				}
				out = append(out, host.ListedVolume{Volume: v, DiskNumber: d.Number, OnDisk: true})
			}
		}
		return out, nil
	})
}

func (h volumes) Format(ctx context.Context, v host.Volume, o host.FormatOptions) (host.Volume, error) {
	return call(ctx, h.s, OpVolumesFormat, true, func(st *State) (host.Volume, error) {
		path := v.GUIDPath
		if path == "" {
			path = v.Ref
		}
		d, p, err := st.volumeByPath(path)
		if err != nil {
			return host.Volume{}, err
		}
		if d.critical() {
			return host.Volume{}, fmt.Errorf("volume %s is on the boot/system disk: %w", path, host.ErrConflict)
		}
		if d.ReadOnly {
			return host.Volume{}, fmt.Errorf("volume %s: disk %d: %w", path, d.Number, host.ErrReadOnly)
		}
		if p.Volume.FileSystem != "" {
			return host.Volume{}, fmt.Errorf("volume %s has file system %s: %w", path, p.Volume.FileSystem, host.ErrAlreadyExists)
		}
		fsName, unit, err := checkFormat(o.FileSystem, o.AllocationUnitSize, o.Label, false)
		if err != nil {
			return host.Volume{}, fmt.Errorf("volume %s: %w", path, err)
		}
		if err := h.s.makeVolumeDir(p.Volume.GUID); err != nil {
			return host.Volume{}, err
		}
		p.Volume.FileSystem, p.Volume.AllocationUnit, p.Volume.Label = fsName, unit, o.Label
		root := h.s.defaultRoot()
		p.Volume.Root = &root
		return h.s.toHostVolume(p)
	})
}

func (h volumes) Mount(ctx context.Context, volumePath, dir string) error {
	_, err := call(ctx, h.s, OpVolumesMount, true, func(st *State) (struct{}, error) {
		guid, err := parseGUIDPath(volumePath)
		if err != nil {
			return struct{}{}, err
		}
		if _, _, err := st.volume(guid); err != nil {
			return struct{}{}, err
		}
		dir, err := cleanAbs(dir)
		if err != nil {
			return struct{}{}, err
		}
		// SetVolumeMountPoint needs an existing empty directory
		// (the SetVolumeMountPointW page); a directory that already is a
		// mount point or link fails with ERROR_DIR_NOT_EMPTY.
		fi, err := os.Lstat(dir)
		if err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return struct{}{}, fmt.Errorf("mount point %s is a mount point or link: %w", dir, host.ErrDirNotEmpty)
		case !fi.IsDir():
			return struct{}{}, fmt.Errorf("mount point %s is not a directory: %w", dir, host.ErrInvalid)
		}
		empty, err := dirIsEmpty(dir)
		if err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		if !empty {
			return struct{}{}, fmt.Errorf("mount point %s: %w", dir, host.ErrDirNotEmpty)
		}
		if err := h.s.makeVolumeDir(guid); err != nil {
			return struct{}{}, err
		}
		if err := os.Remove(dir); err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		if err := os.Symlink(h.s.volumeDir(guid), dir); err != nil {
			if merr := os.Mkdir(dir, 0o750); merr != nil {
				return struct{}{}, fmt.Errorf("mount point %s: %w (and restoring the directory: %w)", dir, err, merr)
			}
			return struct{}{}, fmt.Errorf("mount point %s: %w", dir, err)
		}
		st.dropMounts(dir) // a record left by a mount point removed behind the sim's back
		st.Mounts = append(st.Mounts, MountState{Dir: dir, Volume: guid})
		return struct{}{}, nil
	})
	return err
}

func (h volumes) Unmount(ctx context.Context, dir string) error {
	_, err := call(ctx, h.s, OpVolumesUnmount, true, func(st *State) (struct{}, error) {
		dir, err := cleanAbs(dir)
		if err != nil {
			return struct{}{}, err
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return struct{}{}, fmt.Errorf("%s is not a mount point: %w", dir, host.ErrNotFound)
		}
		target, err := os.Readlink(dir)
		if err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		if _, ok := h.s.mountTarget(target); !ok {
			return struct{}{}, fmt.Errorf("%s is not a mount point: %w", dir, host.ErrNotFound)
		}
		if err := os.Remove(dir); err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		// DeleteVolumeMountPoint leaves the empty directory (the
		// DeleteVolumeMountPointW page: the directory is not deleted).
		if err := os.Mkdir(dir, 0o750); err != nil {
			return struct{}{}, pathError("mount point", dir, err)
		}
		st.dropMounts(dir)
		return struct{}{}, nil
	})
	return err
}

func (st *State) dropMounts(dir string) {
	out := st.Mounts[:0]
	for _, m := range st.Mounts {
		if m.Dir != dir {
			out = append(out, m)
		}
	}
	st.Mounts = out
}

// mountedDirs returns the directories where the volume is mounted now,
// checking each recorded mount point on disk.
func (s *Sim) mountedDirs(st *State, guid string) []string {
	var out []string
	for _, m := range st.Mounts {
		if m.Volume != guid {
			continue
		}
		if t, err := os.Readlink(m.Dir); err == nil && t == s.volumeDir(guid) {
			out = append(out, m.Dir)
		}
	}
	return out
}

// Flush opens the volume for writing, as FlushFileBuffers needs: a volume
// of a read-only disk refuses, as write-protected media answer
// ERROR_WRITE_PROTECT (host.ErrReadOnly; the host contract).
func (h volumes) Flush(ctx context.Context, path string) error {
	_, err := call(ctx, h.s, OpVolumesFlush, false, func(st *State) (struct{}, error) {
		d, _, err := st.volumeByPath(path)
		if err == nil && d.ReadOnly {
			err = fmt.Errorf("flush volume %s: disk %d is read-only: %w", path, d.Number, host.ErrReadOnly)
		}
		return struct{}{}, err
	})
	return err
}

func (h volumes) DiskNumber(ctx context.Context, path string) (uint32, error) {
	return call(ctx, h.s, OpVolumesDiskNumber, false, func(st *State) (uint32, error) {
		d, _, err := st.volumeByPath(path)
		if err != nil {
			return 0, err
		}
		return d.Number, nil
	})
}

func (h volumes) FreeSpace(ctx context.Context, path string) (host.Space, error) {
	return call(ctx, h.s, OpVolumesFreeSpace, false, func(st *State) (host.Space, error) {
		return h.s.freeSpace(st, path)
	})
}

// freeSpace is GetDiskFreeSpaceEx: it follows links and mount points to
// the file system holding path.
func (s *Sim) freeSpace(st *State, path string) (host.Space, error) {
	path, err := cleanAbs(path)
	if err != nil {
		return host.Space{}, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return host.Space{}, pathError("path", path, err)
	}
	if rel, ok := under(s.volumesRoot(), real); ok {
		guid, _, _ := strings.Cut(rel, s.sep())
		_, p, err := st.volume(guid)
		if err != nil {
			return host.Space{}, fmt.Errorf("free space of %s: %w", path, err)
		}
		if p.Volume.FileSystem == "" {
			return host.Space{}, fmt.Errorf("free space of %s: volume %s has no recognized file system: %w", path, guidPath(guid), host.ErrInvalid)
		}
		v, err := s.toHostVolume(p)
		if err != nil {
			return host.Space{}, err
		}
		return host.Space{Total: v.Size, Free: v.SizeRemaining, AvailableToUse: v.SizeRemaining}, nil
	}
	if rel, ok := under(s.smbRoot(), real); ok {
		parts := strings.Split(rel, s.sep())
		if len(parts) < 2 {
			return host.Space{}, fmt.Errorf("free space of %s: not inside a share: %w", path, host.ErrNotFound)
		}
		sh := st.share(parts[0], parts[1])
		if sh == nil {
			return host.Space{}, fmt.Errorf("free space of %s: share %s: %w", path, uncRoot(parts[0], parts[1]), host.ErrNotFound)
		}
		if err := st.shareAccess(sh, parts[2:]); err != nil {
			return host.Space{}, fmt.Errorf("free space of %s: %w", path, err)
		}
		used, err := dirUsage(s.shareDir(sh.Server, sh.Share), 0)
		if err != nil {
			return host.Space{}, err
		}
		free := sh.Capacity - min(used, sh.Capacity)
		return host.Space{Total: sh.Capacity, Free: free, AvailableToUse: free}, nil
	}
	// Anything else lives on C:.
	var total uint64
	if d := st.diskByNumber(0); d != nil {
		for _, p := range d.Partitions {
			if p.DriveLetter == "C" && p.Volume != nil {
				total = p.Volume.Size
			}
		}
	}
	free := total - min(total, systemUsed)
	return host.Space{Total: total, Free: free, AvailableToUse: free}, nil
}

// SetVolumeHealth changes a volume's HealthStatus (faults).
func (s *Sim) SetVolumeHealth(volumePath string, h host.HealthStatus) error {
	return s.control(func(st *State) error {
		guid, err := parseGUIDPath(volumePath)
		if err != nil {
			return err
		}
		for i := range st.Disks {
			for _, p := range st.Disks[i].Partitions {
				if p.Volume != nil && p.Volume.GUID == guid {
					p.Volume.Health = h
					return nil
				}
			}
		}
		return fmt.Errorf("volume %s: %w", volumePath, host.ErrNotFound)
	})
}
