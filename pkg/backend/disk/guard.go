package disk

import (
	"context"
	"errors"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// writeGuard re-reads a chosen disk once, before the stage first writes to
// it (initialise, create the partition, format), and refuses unless it is
// still the disk that was chosen: the same device (path and object), not
// critical, and still matching the selector it was chosen by. Windows
// numbers disks in the order it finds them and "disk numbers may not
// necessarily remain the same across restarts" (MSFT_Disk.Number,
// learn.microsoft.com/windows-hardware/drivers/storage/msft-disk); a stage
// that waited for a disk, or whose disk came online in between, writes only
// to what it identified.
type writeGuard struct {
	b      *Backend
	d      host.Disk
	chosen *choice
	done   bool
}

// confirm returns the disk as it is now, reading it the first time only.
func (g *writeGuard) confirm(ctx context.Context) (host.Disk, error) {
	if g.done {
		return g.d, nil
	}
	now, err := g.b.h.Disks.Get(ctx, g.d.Number)
	switch {
	case errors.Is(err, host.ErrNotFound):
		return host.Disk{}, fmt.Errorf("disk %d went away before the plugin wrote to it; refusing to write to another: %w", g.d.Number, host.ErrConflict)
	case err != nil:
		return host.Disk{}, fmt.Errorf("read again before the first write: %w", err)
	case now.Path != g.d.Path || now.Ref != g.d.Ref:
		return host.Disk{}, fmt.Errorf("disk %d is now %s, not the disk that was chosen (%s): disk numbers changed; refusing to write to it: %w",
			g.d.Number, diskName(now), diskName(g.d), host.ErrConflict)
	case now.IsCritical():
		return host.Disk{}, fmt.Errorf("disk %d is now the boot or system disk; refusing to write to it: %w", now.Number, host.ErrConflict)
	}
	if c := g.chosen; c != nil {
		if v, why := g.b.judge(ctx, now, c.sel, c.scope); v != yes {
			if why != "" {
				why = " (" + why + ")"
			}
			return host.Disk{}, fmt.Errorf("disk %s no longer carries the identity it was chosen by, %s%s; refusing to write to it: %w",
				diskName(now), describe(c.sel), why, host.ErrConflict)
		}
	}
	g.d, g.done = now, true
	return now, nil
}
