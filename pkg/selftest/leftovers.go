package selftest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// removeLeftovers removes what earlier runs left: a run killed before its
// cleanup leaves its directory (<WorkDir>\<Prefix><run>, and its journal
// in the local directory), possibly a staged volume, a VHDX attached, a
// share, a local user, a global mapping. Volumes are unstaged through the
// node service over the dead run's own journal, as the run would have;
// shares, users and mappings are found by the prefix and the ID of a dead
// run of this work directory (the lock holds only this directory: a run in
// another one may be alive, and its names are not touched). Every removal is
// listed in the report; what cannot be removed is listed too and does not
// stop the run (its own names differ).
func (r *runner) removeLeftovers(ctx context.Context) error {
	runs := map[string]bool{}
	names, err := r.n.Host.Files.ReadDir(ctx, r.cfg.WorkDir)
	if err != nil {
		return err
	}
	local, err := os.ReadDir(r.cfg.LocalDir)
	if err != nil {
		return err
	}
	for _, e := range local {
		names = append(names, e.Name())
	}
	for _, n := range names {
		if id, ok := strings.CutPrefix(n, Prefix); ok && runID.MatchString(id) && id != r.cfg.Run {
			runs[id] = true
		}
	}
	failed := false
	note := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		failed = failed || strings.Contains(line, "not removed")
		r.rep.Leftovers = append(r.rep.Leftovers, line)
	}
	stuck := map[string]bool{}
	for _, run := range slices.Sorted(maps.Keys(runs)) {
		failed = false
		r.unstageLeftovers(ctx, run, note)
		stuck[run] = failed
	}
	r.removeLeftoverShares(ctx, runs, note)
	for _, run := range slices.Sorted(maps.Keys(runs)) {
		dir := r.work.Join(Prefix + run)
		if stuck[run] {
			// Its journal and disks stay, for a later run to try again.
			note("run %s: not removed: directory %s, whose volumes are still staged", run, dir)
			continue
		}
		r.detachLeftoverDisks(ctx, dir, note)
		if err := r.removeTree(ctx, dir); err != nil {
			note("run %s: not removed: directory %s: %s", run, dir, describe(err))
		} else {
			note("run %s: removed directory %s", run, dir)
		}
		if err := os.RemoveAll(filepath.Join(r.cfg.LocalDir, Prefix+run)); err != nil {
			note("run %s: not removed: %v", run, err)
		}
	}
	return nil
}

// unstageLeftovers unpublishes and unstages every volume a dead run's
// journal records.
func (r *runner) unstageLeftovers(ctx context.Context, run string, note func(string, ...any)) {
	if _, err := os.Stat(filepath.Join(r.cfg.LocalDir, Prefix+run, "state")); err != nil {
		return
	}
	state := filepath.Join(r.cfg.LocalDir, Prefix+run, "state")
	jr, err := journal.OpenReadOnly(state)
	if err != nil {
		note("run %s: not removed: its journal could not be read: %v", run, err)
		return
	}
	p, kub, err := r.newPlugin(run)
	if err != nil {
		note("run %s: not removed: its journal could not be opened: %v", run, err)
		return
	}
	for _, e := range jr.List(ctx) {
		target := kub.Join("pods", Prefix+run, "volumes", "kubernetes.io~csi", e.VolumeID, "mount")
		if _, err := p.Node().NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: e.VolumeID, TargetPath: target}); err != nil {
			note("run %s: not removed: publication of %s: %s", run, e.VolumeID, describe(err))
			continue
		}
		if _, err := p.Node().NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: e.VolumeID, StagingTargetPath: e.StagingPath}); err != nil {
			note("run %s: not removed: staged volume %s: %s", run, e.VolumeID, describe(err))
			continue
		}
		note("run %s: unstaged volume %s", run, e.VolumeID)
	}
}

// removeLeftoverShares removes shares, local users and global mappings
// whose names carry the prefix and the ID of one of runs, the dead runs
// of this work directory.
func (r *runner) removeLeftoverShares(ctx context.Context, runs map[string]bool, note func(string, ...any)) {
	mine := func(name string) bool {
		id, ok := strings.CutPrefix(strings.ToLower(name), Prefix)
		return ok && runs[id]
	}
	smb := r.n.Admin.LocalSMB
	if shares, err := smb.Shares(ctx); err != nil {
		note("the node's shares could not be listed: %s", describe(err))
	} else {
		for _, s := range shares {
			if !mine(s.Name) {
				continue
			}
			if err := smb.DeleteShare(ctx, s.Name); err != nil && !errors.Is(err, host.ErrNotFound) {
				note("not removed: share %s: %s", s.Name, describe(err))
			} else {
				note("removed share %s", s.Name)
			}
		}
	}
	if mappings, err := r.n.Host.SMB.Mappings(ctx); err != nil {
		note("the global mappings could not be listed: %s", describe(err))
	} else {
		for _, m := range mappings {
			if share := strings.Split(strings.TrimLeft(m.RemotePath, `\`), `\`); len(share) < 2 || !mine(share[1]) {
				continue
			}
			if err := r.n.Host.SMB.Unmap(ctx, m.RemotePath); err != nil && !errors.Is(err, host.ErrNotFound) {
				note("not removed: global mapping %s: %s", m.RemotePath, describe(err))
			} else {
				note("removed global mapping %s", m.RemotePath)
			}
		}
	}
	if users, err := smb.Users(ctx); err != nil {
		note("the local users could not be listed: %s", describe(err))
	} else {
		for _, u := range users {
			if !mine(u) {
				continue
			}
			if err := smb.DeleteUser(ctx, u); err != nil && !errors.Is(err, host.ErrNotFound) {
				note("not removed: local user %s: %s", u, describe(err))
			} else {
				note("removed local user %s", u)
			}
		}
	}
}

// detachLeftoverDisks detaches and deletes the VHDX files in a dead run's
// directory. A VHDX that is not attached may fail to detach (Windows'
// answer is not documented): only the removal of the file counts.
func (r *runner) detachLeftoverDisks(ctx context.Context, dir string, note func(string, ...any)) {
	names, err := r.n.Host.Files.ReadDir(ctx, dir)
	if err != nil {
		return
	}
	for _, n := range names {
		if !strings.HasSuffix(strings.ToLower(n), ".vhdx") {
			continue
		}
		p := r.join(dir, n)
		_ = r.n.Admin.VirtualDisks.Detach(ctx, p) // see above
		if err := r.n.Admin.FileData.RemoveFile(ctx, p); err != nil {
			note("not removed: virtual disk %s: %s", p, describe(err))
			continue
		}
		note("removed virtual disk %s", p)
	}
}

// removeTree removes a directory tree made by selftest, never following a
// link or mount point: a mount point is unmounted, a link removed, a file
// deleted, a directory emptied first.
func (r *runner) removeTree(ctx context.Context, path string) error {
	info, err := r.n.Host.Files.Stat(ctx, path)
	if err != nil {
		return err
	}
	switch info.Kind {
	case host.PathMissing:
		return nil
	case host.PathFile:
		return r.n.Admin.FileData.RemoveFile(ctx, path)
	case host.PathMountPoint:
		if err := r.n.Host.Volumes.Unmount(ctx, path); err != nil && !errors.Is(err, host.ErrNotFound) {
			return err
		}
	case host.PathDir:
		names, err := r.n.Host.Files.ReadDir(ctx, path)
		if err != nil {
			return err
		}
		var errs []error
		for _, n := range names {
			errs = append(errs, r.removeTree(ctx, r.join(path, n)))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if err := r.n.Host.Files.Remove(ctx, path); err != nil && !errors.Is(err, host.ErrNotFound) {
		return err
	}
	return nil
}

// join appends a name to a host path.
func (r *runner) join(dir, name string) string {
	sep := "/"
	if r.n.Style == winpath.Windows {
		sep = `\`
	}
	return strings.TrimRight(dir, `\/`) + sep + name
}
