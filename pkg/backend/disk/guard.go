package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// writeGuard re-reads a chosen disk before the plugin writes to it (brings
// it online or clears read-only, initialises it, creates its partition,
// formats or grows its volume), and refuses unless it is still the disk
// that was chosen: the same device (path and object) with the same identity
// (serial number, UniqueId, size and, once it is partitioned, GPT disk
// GUID), not critical, still matching the selector it was chosen by, and
// still what the caller found (PrepareRequest.Confirm: the iSCSI session
// the LUN was found through). Windows numbers disks in the order it finds
// them and "disk numbers may not necessarily remain the same across
// restarts" (MSFT_Disk.Number,
// learn.microsoft.com/windows-hardware/drivers/storage/msft-disk); a stage
// that waited for a disk, or whose disk came online in between, writes
// only to what it identified. A refusal wraps host.ErrConflict, which the
// node turns into FailedPrecondition (pkg/node/errors.go): the disk is not
// in the state the operation needs, and a retry looks it up again.
type writeGuard struct {
	b      *Backend
	was    host.Disk // the disk as it was chosen
	d      host.Disk // the disk as last read
	chosen *choice
	still  func(ctx context.Context, now host.Disk) error
	done   bool
}

func newWriteGuard(b *Backend, d host.Disk, chosen *choice, still func(context.Context, host.Disk) error) *writeGuard {
	return &writeGuard{b: b, was: d, d: d, chosen: chosen, still: still}
}

// confirm returns the disk as it is now, reading it once until stale.
func (g *writeGuard) confirm(ctx context.Context) (host.Disk, error) {
	if g.done {
		return g.d, nil
	}
	now, err := g.b.h.Disks.Get(ctx, g.was.Number)
	switch {
	case errors.Is(err, host.ErrNotFound):
		return host.Disk{}, fmt.Errorf("disk %d went away before the plugin wrote to it; refusing to write to another: %w", g.was.Number, host.ErrConflict)
	case err != nil:
		return host.Disk{}, fmt.Errorf("read again before the first write: %w", err)
	case now.Path != g.was.Path || now.Ref != g.was.Ref:
		return host.Disk{}, fmt.Errorf("disk %d is now %s, not the disk that was chosen (%s): disk numbers changed; refusing to write to it: %w",
			g.was.Number, diskName(now), diskName(g.was), host.ErrConflict)
	case now.IsCritical():
		return host.Disk{}, fmt.Errorf("disk %d is now the boot or system disk; refusing to write to it: %w", now.Number, host.ErrConflict)
	}
	if diff := identityOf(g.was).differs(identityOf(now), false); len(diff) > 0 {
		return host.Disk{}, fmt.Errorf("disk %d changed since it was chosen (%s differ): chosen as %s, read again as %s; refusing to write to it: %w",
			now.Number, strings.Join(diff, ", "), identityOf(g.was), identityOf(now), host.ErrConflict)
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
	if g.still != nil {
		if err := g.still(ctx, now); err != nil {
			return host.Disk{}, err
		}
	}
	g.d, g.done = now, true
	return now, nil
}

// stale makes the next confirm read the disk again: the plugin changed it
// (brought it online, initialised it) since the last reading.
func (g *writeGuard) stale() { g.done = false }

// identity is what tells one disk from another before the plugin writes
// to it, and what the partitioning note records so that a stage resumed
// after a crash formats only the disk it partitioned. The disk number is
// kept for people reading the note; it is not compared, because Windows
// may renumber disks across restarts.
type identity struct {
	Number   uint32 `json:"number"`
	Serial   string `json:"serialNumber"`
	UniqueID string `json:"uniqueId"`
	Size     uint64 `json:"size"`
	// GUID is the GPT disk GUID, blank before the disk is partitioned
	// (RAW, MBR, or not shown while offline).
	GUID string `json:"guid,omitempty"`
}

func identityOf(d host.Disk) identity {
	return identity{Number: d.Number, Serial: strings.TrimSpace(d.SerialNumber), UniqueID: strings.TrimSpace(d.UniqueID),
		Size: d.Size, GUID: strings.TrimSpace(d.GUID)}
}

// differs names what tells now apart from the disk id records: serial
// number, UniqueId, size (a disk may only have grown when grown is set:
// an expansion between a crash and the resumed stage), and the GPT disk
// GUID when id has one. A disk that showed no GUID (RAW or offline when
// read) may show one later.
func (id identity) differs(now identity, grown bool) []string {
	var out []string
	if now.Serial != id.Serial {
		out = append(out, "serial number")
	}
	if !strings.EqualFold(now.UniqueID, id.UniqueID) {
		out = append(out, "UniqueId")
	}
	if now.Size != id.Size && (!grown || now.Size < id.Size) {
		out = append(out, "size")
	}
	if id.GUID != "" && !host.SameGUID(id.GUID, now.GUID) {
		out = append(out, "GPT disk GUID")
	}
	return out
}

// String renders the identity for messages, with both readings side by side.
func (id identity) String() string {
	s := fmt.Sprintf("disk %d [serial %q, UniqueId %q, size %d", id.Number, id.Serial, id.UniqueID, id.Size)
	if id.GUID != "" {
		s += ", GPT disk GUID " + id.GUID
	}
	return s + "]"
}
