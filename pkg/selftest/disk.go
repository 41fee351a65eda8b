package selftest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// disk runs the disk backend's steps with one file system on a VHDX of
// its own: the VHDX stands for a controller's attached disk and is staged
// by disk number, as a controller's publish_context could name it.
func (r *runner) disk(ctx context.Context, fs string) {
	suffix := "-disk"
	if fs != "NTFS" {
		suffix = "-refs"
	}
	mark := len(r.undo)
	defer r.unwindTo(ctx, mark)
	vhdx := r.work.Join(Prefix+r.cfg.Run, r.name(suffix)+".vhdx")
	vd, files := r.n.Admin.VirtualDisks, r.n.Admin.FileData

	r.step(ctx, "create virtual disk", func(ctx context.Context) (string, error) {
		if err := vd.Create(ctx, vhdx, r.cfg.DiskSize); err != nil {
			return "", err
		}
		r.push("vhdx "+vhdx, "virtual disk "+vhdx, func(ctx context.Context) error { return files.RemoveFile(ctx, vhdx) })
		return fmt.Sprintf("%s, %d bytes", vhdx, r.cfg.DiskSize), nil
	})
	var number uint32
	r.step(ctx, "attach virtual disk", func(ctx context.Context) (string, error) {
		n, err := vd.Attach(ctx, vhdx)
		if err != nil {
			return "", err
		}
		number = n
		r.push("attach "+vhdx, "attached virtual disk "+vhdx, func(ctx context.Context) error { return vd.Detach(ctx, vhdx) })
		return "disk " + strconv.FormatUint(uint64(n), 10), nil
	})
	v := r.newVolume(suffix, fs, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		map[string]string{"backend": "disk", "diskNumber": strconv.FormatUint(uint64(number), 10)}, nil)

	r.step(ctx, "stage: find, online, GPT, partition, format "+fs+", mount", func(ctx context.Context) (string, error) { return r.stage(ctx, v) })
	r.step(ctx, "publish", func(ctx context.Context) (string, error) { return r.publish(ctx, v) })
	r.step(ctx, "write and read back", func(ctx context.Context) (string, error) { return r.writeRead(ctx, v) })
	var total int64
	r.step(ctx, "volume stats", func(ctx context.Context) (string, error) {
		t, detail, err := r.stats(ctx, v)
		total = t
		return detail, err
	})
	r.step(ctx, "grow virtual disk", func(ctx context.Context) (string, error) {
		if err := vd.Resize(ctx, vhdx, r.cfg.GrowTo); err != nil {
			return "", err
		}
		return fmt.Sprintf("to %d bytes", r.cfg.GrowTo), nil
	})
	r.step(ctx, "expand", func(ctx context.Context) (string, error) {
		resp, err := r.p.Node().NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
			VolumeId: v.id, VolumePath: v.target, StagingTargetPath: v.staging, VolumeCapability: v.cap,
			CapacityRange: &csi.CapacityRange{RequiredBytes: int64(r.cfg.GrowTo)},
		})
		if err != nil {
			return "", err
		}
		grown, _, err := r.stats(ctx, v)
		if err != nil {
			return "", err
		}
		if grown <= total {
			return "", fmt.Errorf("the volume has %d bytes after the expansion, %d before", grown, total)
		}
		return fmt.Sprintf("capacity %d bytes; the volume grew from %d to %d bytes", resp.GetCapacityBytes(), total, grown), nil
	})
	r.step(ctx, "volume health", func(ctx context.Context) (string, error) { return r.health(ctx, v) })
	r.step(ctx, "unpublish", func(ctx context.Context) (string, error) { return r.unpublish(ctx, v) })
	r.step(ctx, "unstage", func(ctx context.Context) (string, error) {
		if _, err := r.unstage(ctx, v); err != nil {
			return "", err
		}
		if !r.cfg.Plugin.OfflineDiskOnUnstage {
			return "", nil
		}
		d, err := r.n.Host.Disks.Get(ctx, number)
		if err != nil {
			return "", err
		}
		if !d.IsOffline {
			return "", fmt.Errorf("disk %d is still online after the unstage (--offline-disk-on-unstage)", number)
		}
		return fmt.Sprintf("disk %d offline", number), nil
	})
	r.step(ctx, "stage again", func(ctx context.Context) (string, error) { return r.stage(ctx, v) })
	r.step(ctx, "publish again", func(ctx context.Context) (string, error) { return r.publish(ctx, v) })
	r.step(ctx, "read back after the second stage", func(ctx context.Context) (string, error) { return r.readBack(ctx, v) })
	r.step(ctx, "unpublish again", func(ctx context.Context) (string, error) { return r.unpublish(ctx, v) })
	r.step(ctx, "unstage again", func(ctx context.Context) (string, error) { return r.unstage(ctx, v) })
	r.step(ctx, "detach virtual disk", func(ctx context.Context) (string, error) {
		if err := vd.Detach(ctx, vhdx); err != nil {
			return "", err
		}
		r.done("attach " + vhdx)
		// Whether the storage provider's cache drops the disk at once is
		// not documented: one still listed is looked for again after a
		// rescan (UpdateHostStorageCache), as the disk backend does for a
		// disk that has not appeared yet.
		gone, err := r.diskGone(ctx, number)
		if err == nil && !gone {
			if err = r.n.Host.Disks.Rescan(ctx); err == nil {
				gone, err = r.diskGone(ctx, number)
			}
		}
		switch {
		case err != nil:
			return "", err
		case !gone:
			return "", fmt.Errorf("disk %d is still there after the detach and a rescan", number)
		}
		return "", nil
	})
	r.step(ctx, "delete virtual disk", func(ctx context.Context) (string, error) {
		if err := files.RemoveFile(ctx, vhdx); err != nil {
			return "", err
		}
		r.done("vhdx " + vhdx)
		return "", nil
	})
}

// diskGone reports whether the host no longer lists the disk.
func (r *runner) diskGone(ctx context.Context, number uint32) (bool, error) {
	_, err := r.n.Host.Disks.Get(ctx, number)
	switch {
	case err == nil:
		return false, nil
	case isNotFound(err):
		return true, nil
	}
	return false, err
}

// refs runs the disk steps with ReFS where Windows formats it: the server
// editions (a client edition's step is skipped, not failed).
func (r *runner) refs(ctx context.Context) {
	r.backend, r.failed = BackendDisk+"-refs", false
	if r.rep.Windows.ProductType == host.ProductWorkstation {
		r.skip("ReFS", "the ReFS pass runs on Windows Server editions, where Windows formats ReFS; this is a client edition")
		return
	}
	r.disk(ctx, "ReFS")
}

// unwindTo removes what the steps above mark made and did not remove
// themselves.
func (r *runner) unwindTo(ctx context.Context, mark int) {
	rest := r.undo[:mark:mark]
	r.undo = r.undo[mark:]
	r.unwind(ctx)
	r.undo = rest
}
