//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package disk_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// afterUnmount runs then once a mount point is removed.
type afterUnmount struct {
	host.Volumes
	then func()
}

func (a afterUnmount) Unmount(ctx context.Context, dir string) error {
	err := a.Volumes.Unmount(ctx, dir)
	if err == nil {
		a.then()
	}
	return err
}

// Found by review: the unstage read the disk again by number after the
// unmount and took whatever disk the number named then offline; a disk
// removed and another added in between (Windows renumbers) made it take
// another pod's disk offline. The unstage must leave every disk but the
// volume's alone, and still succeed: the volume is unmounted.
func TestUnstageWhenDiskNumbersChange(t *testing.T) {
	sel := contract.DiskSelector{Serial: "D"}
	entry := journal.Entry{VolumeID: "v", Backend: "disk", Attrs: disk.RecordOf(&contract.DiskSpec{Selector: sel}).Attrs()}
	for _, tt := range []struct {
		name string
		// between runs between the unmount and the offline; it returns
		// the serial of the disk the volume's number names afterwards.
		between     func(r *rig, n, other uint32, swapped *atomic.Bool) string
		wantOffline map[string]bool // by serial
	}{
		{"still the disk", func(*rig, uint32, uint32, *atomic.Bool) string { return "D" },
			map[string]bool{"D": true, "OTHER": false}},
		{"the number now names another disk", func(_ *rig, _, _ uint32, swapped *atomic.Bool) string {
			swapped.Store(true)
			return "OTHER"
		}, map[string]bool{"D": true, "OTHER": false}},
		{"the disk went away and a new one took its number", func(r *rig, n, _ uint32, _ *atomic.Bool) string {
			must(r.t, r.sim.DetachDisk(n))
			if m := r.attach(sim.DiskSpec{Serial: "NEW", Adapter: 1, LUN: 3, FileSystem: "NTFS"}); m != n {
				r.t.Fatalf("the new disk is %d, the test needs it to take number %d", m, n)
			}
			return "NEW"
		}, map[string]bool{"OTHER": false, "NEW": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			other := r.attach(sim.DiskSpec{Serial: "OTHER", Adapter: 1, LUN: 2, FileSystem: "NTFS"})
			staging := r.staging("v", true)
			must(t, r.b.Stage(r.ctx, stageRequest("v", staging, sel, ntfs, false)))

			h := r.sim.Host()
			swapped := new(atomic.Bool)
			h.Disks = renumbered{Disks: h.Disks, n: n, other: other, swapped: swapped}
			var named string
			h.Volumes = afterUnmount{Volumes: h.Volumes, then: func() { named = tt.between(r, n, other, swapped) }}
			b := disk.New(h, r.jr, disk.Options{OfflineOnUnstage: true, Backoff: fast})
			req := backend.UnstageRequest{VolumeID: "v", StagingPath: staging, Entry: entry}
			wantErr(t, "Unstage", b.Unstage(r.ctx, req), nil)
			if named == "" {
				t.Fatal("the unstage removed no mount point")
			}
			if guid := r.mountedAt(staging); guid != "" {
				t.Errorf("volume %s still mounted", guid)
			}
			for _, d := range r.sim.Snapshot().Disks {
				if want, ok := tt.wantOffline[d.Serial]; ok && d.Offline != want {
					t.Errorf("disk %d (serial %q) offline = %t, want %t; disk %d now names serial %q",
						d.Number, d.Serial, d.Offline, want, n, named)
				}
			}
		})
	}
}
