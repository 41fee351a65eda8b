//go:build linux

package disk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

var ntfs = contract.FileSystem{Type: "NTFS"}

// A stage onto a disk larger than its partition grows the partition to the
// disk, as after a restore to a bigger size (kubernetes/kubernetes#94929).
func TestStageGrowsThePartitionToTheDisk(t *testing.T) {
	r := newRig(t, disk.Options{})
	n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Size: 3 << 30,
		PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{Size: 1 << 30, FileSystem: "NTFS"}}})
	before := dataPartition(t, r, n)
	staging := r.staging("v", true)
	wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
	after := dataPartition(t, r, n)
	if before.Size != 1<<30 || after.Size <= 3<<30-32<<20 || after.Volume.Size != after.Size {
		t.Fatalf("partition %d bytes before, %d after (volume %d); want it grown to the 3 GiB disk", before.Size, after.Size, after.Volume.Size)
	}
	// A partition that fills its disk is left alone, and so is one a
	// read-only stage finds.
	mark := r.sim.Mark()
	wantErr(t, "Unstage", r.b.Unstage(r.ctx, backend.UnstageRequest{VolumeID: "v", StagingPath: staging}), nil)
	wantErr(t, "Stage again", r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
	for _, op := range r.sim.OpsSince(mark) {
		if op == sim.OpDisksResizePartition || op == sim.OpDisksMaxPartitionSize {
			t.Errorf("a partition that fills its disk was grown again: %v", r.sim.OpsSince(mark))
		}
	}
	ro := r.attach(sim.DiskSpec{Serial: "R", Adapter: 1, LUN: 2, Size: 3 << 30,
		PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{Size: 1 << 30, FileSystem: "NTFS"}}})
	wantErr(t, "read-only Stage", r.b.Stage(r.ctx, stageRequest("r", r.staging("r", true), contract.DiskSelector{Serial: "R"}, ntfs, true)), nil)
	if p := dataPartition(t, r, ro); p.Size != 1<<30 {
		t.Errorf("a read-only stage grew the partition to %d", p.Size)
	}
}

func dataPartition(t *testing.T, r *rig, n uint32) sim.PartitionState {
	t.Helper()
	for _, p := range r.diskState(n).Partitions {
		if p.GptType == host.GptTypeBasicData {
			return p
		}
	}
	t.Fatalf("disk %d has no data partition", n)
	return sim.PartitionState{}
}

// swapDisks answers Disks.Get with another disk: Windows renumbered the
// disks between the lookup and the first write.
type swapDisks struct {
	host.Disks
	get func(ctx context.Context, n uint32) (host.Disk, error)
}

func (s swapDisks) Get(ctx context.Context, n uint32) (host.Disk, error) { return s.get(ctx, n) }

// The disk is read again once, after it came online and before the first
// write; a stage whose disk number now names another disk writes nothing.
func TestStageRereadsTheDiskBeforeWriting(t *testing.T) {
	t.Run("fresh disk", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Offline: true})
		mark := r.sim.Mark()
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		ops := r.sim.OpsSince(mark)
		if got := strings.Join(ops, " "); strings.Count(got, sim.OpDisksGet) != 1 ||
			strings.Index(got, sim.OpDisksSetOnline) > strings.Index(got, sim.OpDisksGet) ||
			strings.Index(got, sim.OpDisksGet) > strings.Index(got, sim.OpDisksInitialize) {
			t.Fatalf("ops %v: want one Get, after SetOnline and before Initialize", ops)
		}
	})
	t.Run("a formatted disk is not re-read", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS"})
		mark := r.sim.Mark()
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		if r.sim.Count(sim.OpDisksGet) != 0 {
			t.Fatalf("ops %v: a disk nothing is written to was read again", r.sim.OpsSince(mark))
		}
	})
	for _, tt := range []struct {
		name  string
		spec  sim.DiskSpec
		write string // the op that must not happen
	}{
		{"blank disk", sim.DiskSpec{}, sim.OpDisksInitialize},
		{"initialised disk without a partition", sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT}, sim.OpDisksCreatePartition},
	} {
		t.Run("renumbered: "+tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			spec := tt.spec
			spec.Serial, spec.Adapter, spec.LUN = "D", 1, 1
			n := r.attach(spec)
			other := r.attach(sim.DiskSpec{Serial: "OTHER", Adapter: 1, LUN: 2})
			h := r.sim.Host()
			h.Disks = swapDisks{Disks: h.Disks, get: func(ctx context.Context, got uint32) (host.Disk, error) {
				if got != n {
					return host.Disk{}, fmt.Errorf("Get(%d): %w", got, host.ErrInvalid)
				}
				return r.sim.Host().Disks.Get(ctx, other)
			}}
			b := disk.New(h, r.jr, disk.Options{Backoff: fast})
			mark := r.sim.Mark()
			err := b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false))
			if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "disk numbers changed") {
				t.Fatalf("Stage = %v, want a conflict", err)
			}
			for _, op := range r.sim.OpsSince(mark) {
				if op == tt.write || op == sim.OpVolumesFormat {
					t.Fatalf("the stage wrote (%s) after the disk changed: %v", op, r.sim.OpsSince(mark))
				}
			}
		})
	}
	// A disk listed while offline as RAW that shows its table once online:
	// its partitions decide, and it is never initialised again.
	t.Run("RAW when listed, GPT when read again", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, PartitionStyle: host.PartitionStyleGPT})
		d, err := r.sim.Host().Disks.Get(r.ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		d.PartitionStyle = host.PartitionStyleRAW
		staging := r.staging("v", true)
		err = r.b.PrepareAndMount(r.ctx, d, disk.PrepareRequest{VolumeID: "v", StagingPath: staging, FS: ntfs})
		wantErr(t, "PrepareAndMount", err, nil)
		if r.sim.Count(sim.OpDisksInitialize) != 0 || r.mountedAt(staging) != r.volumeOfDisk(n) {
			t.Fatalf("Initialize %d times; mounted %q", r.sim.Count(sim.OpDisksInitialize), r.mountedAt(staging))
		}
	})
}
