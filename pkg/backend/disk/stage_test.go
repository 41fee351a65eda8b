//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package disk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

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

// The disk is read again before the first write: a blank disk once it is
// online and before it is initialised, a partitioned one before it is
// brought online (its volumes may be another disk's); a stage whose disk
// number now names another disk writes nothing.
func TestStageRereadsTheDiskBeforeWriting(t *testing.T) {
	t.Run("fresh disk", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Offline: true})
		mark := r.sim.Mark()
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		ops := r.sim.OpsSince(mark)
		want := []string{sim.OpDisksSetOnline, sim.OpDisksGet, sim.OpDisksInitialize, sim.OpDisksCreatePartition}
		var got []string
		for _, op := range ops {
			if slices.Contains(want, op) {
				got = append(got, op)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ops %v: want %v in that order", ops, want)
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

// renumbered answers for disk number n with disk other once swapped is
// set: Windows gave n to another disk.
type renumbered struct {
	host.Disks
	n, other uint32
	swapped  *atomic.Bool
}

func (r renumbered) Get(ctx context.Context, n uint32) (host.Disk, error) {
	if r.swapped.Load() && n == r.n {
		n = r.other
	}
	return r.Disks.Get(ctx, n)
}

func (r renumbered) Partitions(ctx context.Context, d host.Disk) ([]host.Partition, error) {
	if r.swapped.Load() && d.Number == r.n {
		o, err := r.Disks.Get(ctx, r.other)
		if err != nil {
			return nil, err
		}
		return r.Disks.Partitions(ctx, o)
	}
	return r.Disks.Partitions(ctx, d)
}

// Found by review: a stage that waited for its disk's lock (another
// operation held that disk number: the number named two disks) read the
// partitions of whatever disk had the number by then and mounted its
// volume for the pod, when the disk was online and formatted, because
// nothing else was written to it. It reads the disk again first; a disk
// still the one chosen is staged as before.
func TestStageAfterWaitingForTheDiskLock(t *testing.T) {
	for _, tt := range []struct {
		name    string
		swapped bool
		err     error
	}{
		{"the number now names another disk", true, host.ErrConflict},
		{"still the disk", false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS"})
			other := r.attach(sim.DiskSpec{Serial: "OTHER", Adapter: 1, LUN: 2, FileSystem: "NTFS"})
			h := r.sim.Host()
			swapped := new(atomic.Bool)
			h.Disks = renumbered{Disks: h.Disks, n: n, other: other, swapped: swapped}
			b := disk.New(h, r.jr, disk.Options{Backoff: fast})
			unlock, err := b.LockDisk(r.ctx, n)
			must(t, err)
			staging := r.staging("v", true)
			done := make(chan error, 1)
			go func() {
				done <- b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, false))
			}()
			for b.DiskLockWaiters(n) != 1 {
				runtime.Gosched()
			}
			swapped.Store(tt.swapped)
			mark := r.sim.Mark()
			unlock()
			err = <-done
			wantErr(t, "Stage", err, tt.err)
			if tt.err != nil && !strings.Contains(err.Error(), "disk numbers changed") {
				t.Fatalf("Stage = %v, want it to say the disk numbers changed", err)
			}
			want := r.volumeOfDisk(n)
			if tt.err != nil {
				want = ""
			}
			if got := r.mountedAt(staging); got != want {
				t.Fatalf("mounted %q at the staging path, want %q (disk %d's is %q); ops %v", got, want, other, r.volumeOfDisk(other), r.sim.OpsSince(mark))
			}
			if !slices.Contains(r.sim.OpsSince(mark), sim.OpDisksGet) {
				t.Fatalf("ops %v: the disk was not read again after the wait", r.sim.OpsSince(mark))
			}
		})
	}
}

// failingNotes is a journal whose notes cannot be written or removed.
type failingNotes struct {
	backend.Store
	put, del error
}

func (f failingNotes) PutNote(ctx context.Context, key, value string) error {
	if f.put != nil {
		return f.put
	}
	return f.Store.PutNote(ctx, key, value)
}

func (f failingNotes) DeleteNote(ctx context.Context, key string) error {
	if f.del != nil {
		return f.del
	}
	return f.Store.DeleteNote(ctx, key)
}

// TestStageFailures: a host call that fails stops the stage with its error,
// and the stage says what it was doing.
func TestStageFailures(t *testing.T) {
	tests := []struct {
		name     string
		disk     sim.DiskSpec
		made     bool // kubelet made the staging directory
		readOnly bool
		rule     sim.Rule
		want     error
		in       string
	}{
		{"creating the staging directory", sim.DiskSpec{}, false, false, sim.Rule{Op: sim.OpFilesMakeDir, Err: "accessdenied"}, host.ErrAccessDenied, "staging path: files.MakeDir"},
		{"clearing read-only", sim.DiskSpec{ReadOnly: true}, true, false, sim.Rule{Op: sim.OpDisksSetReadOnly, Err: "accessdenied"}, host.ErrAccessDenied, "disks.SetReadOnly"},
		{"setting read-only for a read-only stage", sim.DiskSpec{FileSystem: "NTFS"}, true, true, sim.Rule{Op: sim.OpDisksSetReadOnly, Err: "accessdenied"}, host.ErrAccessDenied, "disks.SetReadOnly"},
		{"bringing the disk online", sim.DiskSpec{Offline: true}, true, false, sim.Rule{Op: sim.OpDisksSetOnline, Err: "inuse"}, host.ErrInUse, "disks.SetOnline"},
		{"a clone that does not come online", sim.DiskSpec{Collision: true}, true, false, sim.Rule{Op: sim.OpDisksSetOnline, Err: "invalid"}, host.ErrInvalid, "disks.SetOnline"},
		{"reading the disk again", sim.DiskSpec{}, true, false, sim.Rule{Op: sim.OpDisksGet, Err: "busy"}, host.ErrBusy, "before the first write"},
		{"initialising", sim.DiskSpec{}, true, false, sim.Rule{Op: sim.OpDisksInitialize, Err: "readonly"}, host.ErrReadOnly, "disks.Initialize"},
		{"listing partitions", sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT}, true, false, sim.Rule{Op: sim.OpDisksPartitions, Err: "busy"}, host.ErrBusy, "disks.Partitions"},
		{"creating the partition", sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT}, true, false, sim.Rule{Op: sim.OpDisksCreatePartition, Err: "outofrange"}, host.ErrOutOfRange, "disks.CreatePartition"},
		{"mounting", sim.DiskSpec{FileSystem: "NTFS"}, true, false, sim.Rule{Op: sim.OpVolumesMount, Err: "inuse"}, host.ErrInUse, "volumes.Mount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			spec := tt.disk
			spec.Serial, spec.Adapter, spec.LUN = "D", 1, 1
			r.attach(spec)
			must(t, r.sim.Faults().Add(tt.rule))
			err := r.b.Stage(r.ctx, stageRequest("v", r.staging("v", tt.made), contract.DiskSelector{Serial: "D"}, ntfs, tt.readOnly))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.in) {
				t.Fatalf("Stage = %v, want %v saying %q", err, tt.want, tt.in)
			}
		})
	}
}

// A repeated stage repairs a disk that came back offline or read-only, and
// fails when it cannot.
func TestRepeatedStageRepairFails(t *testing.T) {
	off, ro := true, true
	for _, tt := range []struct {
		name     string
		change   sim.DiskChange
		readOnly bool
		rule     sim.Rule
	}{
		{"offline, read-only stage", sim.DiskChange{Offline: &off}, true, sim.Rule{Op: sim.OpDisksSetOnline, Err: "inuse"}},
		{"offline", sim.DiskChange{Offline: &off}, false, sim.Rule{Op: sim.OpDisksSetOnline, Err: "inuse"}},
		{"read-only", sim.DiskChange{ReadOnly: &ro}, false, sim.Rule{Op: sim.OpDisksSetReadOnly, Err: "inuse"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS"})
			staging := r.staging("v", true)
			req := stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, tt.readOnly)
			wantErr(t, "Stage", r.b.Stage(r.ctx, req), nil)
			must(t, r.sim.SetDiskState(n, tt.change))
			must(t, r.sim.Faults().Add(tt.rule))
			wantErr(t, "repeated Stage", r.b.Stage(r.ctx, req), host.ErrInUse)
			r.sim.Faults().Clear()
			wantErr(t, "repeated Stage without the fault", r.b.Stage(r.ctx, req), nil)
			if d := r.diskState(n); d.Offline || d.ReadOnly != tt.readOnly {
				t.Errorf("disk after the repair: offline %v, read-only %v", d.Offline, d.ReadOnly)
			}
		})
	}
}

// A mount that finds the staging path taken by the same volume (an earlier
// attempt mounted it) succeeds; taken by another volume, it fails.
func TestMountRace(t *testing.T) {
	r := newRig(t, disk.Options{})
	n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS"})
	other := r.attach(sim.DiskSpec{Serial: "O", Adapter: 1, LUN: 2, FileSystem: "NTFS"})
	d, err := r.sim.Host().Disks.Get(r.ctx, n)
	must(t, err)
	for _, tt := range []struct {
		name    string
		mounted uint32
		want    error
	}{{"the same volume", n, nil}, {"another volume", other, host.ErrDirNotEmpty}} {
		t.Run(tt.name, func(t *testing.T) {
			staging := r.staging(tt.name, true)
			must(t, r.sim.Host().Volumes.Mount(r.ctx, `\\?\Volume{`+r.volumeOfDisk(tt.mounted)+`}\`, staging))
			must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesMount, Nth: 1, Err: "dirnotempty"}))
			err := r.b.PrepareAndMount(r.ctx, d, disk.PrepareRequest{VolumeID: "v", StagingPath: staging, FS: ntfs})
			wantErr(t, "PrepareAndMount", err, tt.want)
		})
	}
}

func TestStagePartitionNotes(t *testing.T) {
	broken := errors.New("journal disk full")
	t.Run("the note cannot be written: nothing is made", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		b := disk.New(r.sim.Host(), failingNotes{Store: r.jr, put: broken}, disk.Options{Backoff: fast})
		err := b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false))
		if !errors.Is(err, broken) || !strings.Contains(err.Error(), "record the partitioning of disk") {
			t.Fatalf("Stage = %v", err)
		}
		if d := r.diskState(n); d.PartitionStyle != host.PartitionStyleRAW {
			t.Fatalf("the disk was initialised without its note: %v", d.PartitionStyle)
		}
	})
	t.Run("the note cannot be removed: the stage succeeds", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		var log strings.Builder
		ctx := loggerTo(&log, 2)
		b := disk.New(r.sim.Host(), failingNotes{Store: r.jr, del: broken}, disk.Options{Backoff: fast})
		wantErr(t, "Stage", b.Stage(ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		if !strings.Contains(log.String(), "Cannot drop the partitioning note") {
			t.Fatalf("log:\n%s", log.String())
		}
	})
	t.Run("a removed note is not logged", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		var log strings.Builder
		b := disk.New(r.sim.Host(), r.jr, disk.Options{Backoff: fast})
		wantErr(t, "Stage", b.Stage(loggerTo(&log, 2), stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		if strings.Contains(log.String(), "partitioning note") {
			t.Fatalf("log:\n%s", log.String())
		}
	})
}

// MBR disks: an IFS partition is the plugin's kind, any other is refused
// naming its type.
func TestStageMBR(t *testing.T) {
	r := newRig(t, disk.Options{})
	r.attach(sim.DiskSpec{Serial: "IFS", Adapter: 1, LUN: 1, PartitionStyle: host.PartitionStyleMBR,
		Partitions: []sim.PartitionSpec{{MbrType: host.MbrTypeIFS, FileSystem: "NTFS"}}})
	r.attach(sim.DiskSpec{Serial: "LINUX", Adapter: 1, LUN: 2, PartitionStyle: host.PartitionStyleMBR,
		Partitions: []sim.PartitionSpec{{MbrType: 0x83}}})
	wantErr(t, "Stage of an IFS partition", r.b.Stage(r.ctx, stageRequest("a", r.staging("a", true), contract.DiskSelector{Serial: "IFS"}, ntfs, false)), nil)
	err := r.b.Stage(r.ctx, stageRequest("b", r.staging("b", true), contract.DiskSelector{Serial: "LINUX"}, ntfs, false))
	if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "has type MBR 0x83") {
		t.Fatalf("Stage = %v, want the partition type named", err)
	}
}

// loggerTo returns a context whose logger writes to w up to verbosity v.
func loggerTo(w *strings.Builder, v int) context.Context {
	return klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(w), textlogger.Verbosity(v))))
}

// TestStagePaths: the stage's other paths, each ending as Windows would
// leave it.
func TestStagePaths(t *testing.T) {
	t.Run("a staging path kubelet did not make", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		staging := r.staging("v", false)
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, contract.FileSystem{}, false)), nil)
		if r.mountedAt(staging) != r.volumeOfDisk(n) {
			t.Fatal("not mounted")
		}
		// No file system asked for: NTFS.
		if p := dataPartition(t, r, n); p.Volume.FileSystem != "NTFS" {
			t.Fatalf("formatted as %q", p.Volume.FileSystem)
		}
	})
	t.Run("a staged volume whose disk is gone", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		staging := r.staging("v", true)
		req := stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, false)
		wantErr(t, "Stage", r.b.Stage(r.ctx, req), nil)
		must(t, r.sim.DetachDisk(n))
		err := r.b.Stage(r.ctx, req)
		if !errors.Is(err, host.ErrNotFound) || !strings.Contains(err.Error(), "holds volume") {
			t.Fatalf("Stage = %v", err)
		}
	})
	t.Run("a staged volume whose selector became ambiguous", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		req := stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)
		wantErr(t, "Stage", r.b.Stage(r.ctx, req), nil)
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 2})
		wantErr(t, "Stage", r.b.Stage(r.ctx, req), host.ErrConflict)
	})
	t.Run("a staged volume's disk number cannot be read", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		req := stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)
		wantErr(t, "Stage", r.b.Stage(r.ctx, req), nil)
		must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesDiskNumber, Err: "busy"}))
		wantErr(t, "Stage", r.b.Stage(r.ctx, req), host.ErrBusy)
	})
	t.Run("the boot disk is never prepared", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		boot, err := r.sim.Host().Disks.Get(r.ctx, 0)
		must(t, err)
		err = r.b.PrepareAndMount(r.ctx, boot, disk.PrepareRequest{VolumeID: "v", StagingPath: r.staging("v", true), FS: ntfs})
		wantErr(t, "PrepareAndMount", err, host.ErrConflict)
	})
	t.Run("an ended context writes nothing", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		d, err := r.sim.Host().Disks.Get(r.ctx, n)
		must(t, err)
		ctx, cancel := context.WithCancel(r.ctx)
		cancel()
		err = r.b.PrepareAndMount(ctx, d, disk.PrepareRequest{VolumeID: "v", StagingPath: r.staging("v", true), FS: ntfs})
		if !errors.Is(err, context.Canceled) || r.diskState(n).PartitionStyle != host.PartitionStyleRAW {
			t.Fatalf("PrepareAndMount = %v, disk %v", err, r.diskState(n).PartitionStyle)
		}
	})
	t.Run("a disk prepared without a volume ID writes no note", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
		d, err := r.sim.Host().Disks.Get(r.ctx, n)
		must(t, err)
		b := disk.New(r.sim.Host(), failingNotes{Store: r.jr, put: errors.New("no note expected")}, disk.Options{Backoff: fast})
		staging := r.staging("v", true)
		wantErr(t, "PrepareAndMount", b.PrepareAndMount(r.ctx, d, disk.PrepareRequest{StagingPath: staging, FS: ntfs}), nil)
		if r.mountedAt(staging) != r.volumeOfDisk(n) {
			t.Fatal("not mounted")
		}
		d, err = r.sim.Host().Disks.Get(r.ctx, n)
		must(t, err)
		wantErr(t, "PrepareAndMount again", b.PrepareAndMount(r.ctx, d, disk.PrepareRequest{StagingPath: r.staging("w", true), FS: ntfs}), nil)
	})
	t.Run("a read-only stage of an offline read-only disk", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS", Offline: true, ReadOnly: true})
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, true)), nil)
		if d := r.diskState(n); d.Offline || !d.ReadOnly {
			t.Fatalf("disk offline %v, read-only %v", d.Offline, d.ReadOnly)
		}
	})
	t.Run("read-only, offline: the online that read-only needs fails", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, ReadOnly: true, Offline: true})
		must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpDisksSetOnline, Err: "inuse"}))
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), host.ErrInUse)
	})
	t.Run("a read-only stage of a disk without a data partition", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, PartitionStyle: host.PartitionStyleGPT})
		err := r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, true))
		if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "never partitioned") {
			t.Fatalf("Stage = %v", err)
		}
	})
	t.Run("a read-only stage of a data partition without a file system", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{}}})
		err := r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, true))
		if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "never formatted") {
			t.Fatalf("Stage = %v", err)
		}
	})
	t.Run("the note of an initialised disk cannot be written", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, PartitionStyle: host.PartitionStyleGPT})
		b := disk.New(r.sim.Host(), failingNotes{Store: r.jr, put: errors.New("journal full")}, disk.Options{Backoff: fast})
		err := b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false))
		if err == nil || !strings.Contains(err.Error(), "record the partitioning") || r.sim.Count(sim.OpDisksCreatePartition) != 0 {
			t.Fatalf("Stage = %v after %d partitions", err, r.sim.Count(sim.OpDisksCreatePartition))
		}
	})
	t.Run("the note cannot be read", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS"})
		b := disk.New(r.sim.Host(), unreadableNotes{r.jr}, disk.Options{Backoff: fast})
		err := b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false))
		if err == nil || !strings.Contains(err.Error(), "read the partitioning note") {
			t.Fatalf("Stage = %v", err)
		}
	})
	t.Run("the volume of a partition does not show", func(t *testing.T) {
		for _, tt := range []struct {
			fault string
			want  error
		}{{"notfound", host.ErrNotReady}, {"busy", host.ErrBusy}} {
			r := newRig(t, disk.Options{})
			r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS"})
			must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesOfPartition, Err: tt.fault}))
			wantErr(t, "Stage "+tt.fault, r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), tt.want)
		}
	})
	t.Run("a partition that cannot grow", func(t *testing.T) {
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Size: 3 << 30,
			PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{Size: 1 << 30, FileSystem: "NTFS"}}})
		must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpDisksMaxPartitionSize, Err: "busy"}))
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), host.ErrBusy)
	})
	t.Run("the disk cannot be read again before the format", func(t *testing.T) {
		// The partition is the plugin's (its note says so) and its volume
		// blank: the first write is the format.
		r := newRig(t, disk.Options{})
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{}}})
		must(t, r.jr.PutNote(r.ctx, "disk/partitioning/v", "disk 1"))
		must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpDisksGet, Err: "busy"}))
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), host.ErrBusy)
		if r.sim.Count(sim.OpVolumesFormat) != 0 {
			t.Fatal("formatted a disk it could not read again")
		}
	})
}

// unreadableNotes is a journal whose notes cannot be read.
type unreadableNotes struct{ backend.Store }

func (unreadableNotes) Note(context.Context, string) (string, bool, error) {
	return "", false, errors.New("journal unreadable")
}

// A writable stage of an offline, read-only disk on a Windows that refuses
// to change an offline disk's attribute (host.ErrNotReady): the disk comes
// online first and read-only is cleared then; a clone whose signature
// collides is never brought online that way.
func TestWritableStageWhereWindowsRefusesOfflineAttributes(t *testing.T) {
	refuse := sim.Config{Windows: sim.WindowsAnswers{OfflineReadOnly: sim.OfflineReadOnlyRefuse}}
	t.Run("online, then writable", func(t *testing.T) {
		r := newRigOn(t, disk.Options{}, refuse)
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Offline: true, ReadOnly: true})
		mark := r.sim.Mark()
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		ops := strings.Join(r.sim.OpsSince(mark), " ")
		want := sim.OpDisksSetReadOnly + " " + sim.OpDisksSetOnline + " " + sim.OpDisksSetReadOnly
		if !strings.Contains(ops, want) {
			t.Fatalf("ops %s: want %s", ops, want)
		}
		if d := r.diskState(n); d.Offline || d.ReadOnly {
			t.Fatalf("disk offline %v, read-only %v", d.Offline, d.ReadOnly)
		}
	})
	t.Run("the online fails", func(t *testing.T) {
		r := newRigOn(t, disk.Options{}, refuse)
		r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Offline: true, ReadOnly: true})
		must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpDisksSetOnline, Err: "inuse"}))
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), host.ErrInUse)
	})
	t.Run("a clone: read-only cleared while offline", func(t *testing.T) {
		r := newRigOn(t, disk.Options{}, refuse)
		n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Collision: true})
		mark := r.sim.Mark()
		wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
		ops := r.sim.OpsSince(mark)
		if i, j := slices.Index(ops, sim.OpDisksSetReadOnly), slices.Index(ops, sim.OpDisksSetOnline); i < 0 || j < i || strings.Count(strings.Join(ops, " "), sim.OpDisksSetReadOnly) != 1 {
			t.Fatalf("ops %v: want one SetReadOnly, then SetOnline", ops)
		}
		if d := r.diskState(n); d.Offline || d.ReadOnly {
			t.Fatalf("disk offline %v, read-only %v", d.Offline, d.ReadOnly)
		}
	})
}

// Found by review: Expand resized whatever disk the number named. The disk
// is read again before the resize: another identity under the number, or
// the volume no longer on it, refuses and resizes nothing.
func TestExpandRereadsTheDisk(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *host.Disk)
		moved  bool // the volume is on another disk when read again
		in     string
	}{
		{name: "another serial", change: func(d *host.Disk) { d.SerialNumber = "OTHER" }, in: "(serial number differ)"},
		{name: "another UniqueId", change: func(d *host.Disk) { d.UniqueID = "600224800000" }, in: "(UniqueId differ)"},
		{name: "another GPT disk GUID", change: func(d *host.Disk) { d.GUID = "{00000000-0000-4000-8000-000000000000}" }, in: "(GPT disk GUID differ)"},
		{name: "another size", change: func(d *host.Disk) { d.Size += 1 << 30 }, in: "(size differ)"},
		{name: "the volume moved", moved: true, in: "is now on disk 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Size: 1 << 30})
			staging := r.staging("v", true)
			wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, false)), nil)
			if err := r.sim.ResizeDisk(n, 3<<30); err != nil {
				t.Fatal(err)
			}
			h := r.sim.Host()
			gets := 0
			h.Disks = swapDisks{Disks: h.Disks, get: func(ctx context.Context, got uint32) (host.Disk, error) {
				d, err := r.sim.Host().Disks.Get(ctx, got)
				if gets++; gets > 1 && tt.change != nil {
					tt.change(&d)
				}
				return d, err
			}}
			if tt.moved {
				h.Volumes = movedVolumes{Volumes: h.Volumes, calls: new(int)}
			}
			b := disk.New(h, r.jr, disk.Options{Backoff: fast})
			mark := r.sim.Mark()
			_, err := b.Expand(r.ctx, backend.ExpandRequest{VolumeID: "v", StagingPath: staging})
			if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), tt.in) {
				t.Fatalf("Expand = %v, want a conflict saying %q", err, tt.in)
			}
			if slices.Contains(r.sim.OpsSince(mark), sim.OpDisksResizePartition) {
				t.Fatalf("resized: %v", r.sim.OpsSince(mark))
			}
		})
	}
}

// movedVolumes answers DiskNumber with disk 9 from its second call on.
type movedVolumes struct {
	host.Volumes
	calls *int
}

func (m movedVolumes) DiskNumber(ctx context.Context, guid string) (uint32, error) {
	if *m.calls++; *m.calls > 1 {
		return 9, nil
	}
	return m.Volumes.DiskNumber(ctx, guid)
}

// Found by review: the partitioning note named the disk by number and
// serial for people only, and a stage resumed after a crash formatted the
// partition of whatever disk it then found. The note records the disk's
// identity; a resumed stage formats only a disk that has it (it may have
// grown), and otherwise refuses naming both readings. A note of an
// earlier release ("disk N serial \"S\"") is read by its serial.
func TestResumedStageChecksTheNotedDisk(t *testing.T) {
	key := backend.NotePrefix(contract.KindDisk, "partitioning") + "v"
	type noted = map[string]any
	tests := []struct {
		name string
		edit func(n noted) string // the note the resumed stage finds
		err  error
		in   []string
	}{
		{name: "the disk it noted", edit: func(n noted) string { return jsonOf(t, n) }},
		{name: "the disk grew since", edit: func(n noted) string {
			n["size"] = n["size"].(float64) - 1<<20
			return jsonOf(t, n)
		}},
		{name: "another serial", edit: func(n noted) string {
			n["serialNumber"] = "OTHER"
			return jsonOf(t, n)
		}, err: host.ErrConflict, in: []string{`names another disk (serial number differ): noted disk`, `[serial "OTHER"`, `found disk`, `[serial "D"`}},
		{name: "another UniqueId", edit: func(n noted) string {
			n["uniqueId"] = "600224800000"
			return jsonOf(t, n)
		}, err: host.ErrConflict, in: []string{"(UniqueId differ)"}},
		{name: "a larger disk than now", edit: func(n noted) string {
			n["size"] = n["size"].(float64) + 1<<20
			return jsonOf(t, n)
		}, err: host.ErrConflict, in: []string{"(size differ)"}},
		{name: "another GPT disk GUID", edit: func(n noted) string {
			n["guid"] = "{00000000-0000-4000-8000-000000000000}"
			return jsonOf(t, n)
		}, err: host.ErrConflict, in: []string{"(GPT disk GUID differ)"}},
		{name: "an earlier release's note, the same serial", edit: func(noted) string { return `disk 7 serial "D"` }},
		{name: "an earlier release's note, another serial", edit: func(noted) string { return `disk 1 serial "E"` },
			err: host.ErrConflict, in: []string{`("disk 1 serial \"E\"") does not name disk`}},
		{name: "an earlier release's note, a blank serial", edit: func(noted) string { return `disk 1 serial "  "` },
			err: host.ErrConflict, in: []string{"does not name disk", "by a serial number it carries"}},
		{name: "an unreadable note", edit: func(noted) string { return "{broken" },
			err: host.ErrConflict, in: []string{"cannot be read"}},
		{name: "an unreadable note of an earlier release", edit: func(noted) string { return "partitioning disk 3" },
			err: host.ErrConflict, in: []string{`cannot be read ("partitioning disk 3": `}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			staging := r.staging("v", true)
			if err := r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Err: "internal"}); err != nil {
				t.Fatal(err)
			}
			req := stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, ntfs, false)
			if err := r.b.Stage(r.ctx, req); err == nil {
				t.Fatal("the stage with a failing format succeeded")
			}
			v, ok, err := r.jr.Note(r.ctx, key)
			if err != nil || !ok {
				t.Fatalf("note %s: %v, %v", key, ok, err)
			}
			var was noted
			if err := json.Unmarshal([]byte(v), &was); err != nil {
				t.Fatalf("the note %q is no identity: %v", v, err)
			}
			d := r.diskState(n)
			if was["serialNumber"] != "D" || was["size"] != float64(d.Size) || was["number"] != float64(n) {
				t.Fatalf("note %q does not record disk %d's identity", v, n)
			}
			if tt.name == "another GPT disk GUID" {
				was["guid"] = "{" + d.GUID + "}" // as the 0-partition path records it
			}
			if err := r.jr.PutNote(r.ctx, key, tt.edit(was)); err != nil {
				t.Fatal(err)
			}
			mark := r.sim.Mark()
			err = r.b.Stage(r.ctx, req)
			wantErr(t, "resumed stage", err, tt.err)
			for _, s := range tt.in {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("resumed stage = %v, want it to say %s", err, s)
				}
			}
			if formatted := slices.Contains(r.sim.OpsSince(mark), sim.OpVolumesFormat); formatted != (tt.err == nil) {
				t.Fatalf("formatted: %v; ops %v", formatted, r.sim.OpsSince(mark))
			}
		})
	}
}

// Found by review: a note that records no identifier (the disk showed a
// blank serial number and UniqueId, and no GPT disk GUID when it was
// RAW) named every disk of at least its size, and a resumed stage
// formatted the partition of another disk now at the selector's place.
// Such a note names no disk, as an earlier release's note with a blank
// serial does not.
func TestResumedStageNeedsAnIdentifiedDisk(t *testing.T) {
	r := newRig(t, disk.Options{})
	blank := sim.DiskSpec{Adapter: 1, LUN: 1, Size: 2 << 30}
	n := r.attach(blank)
	must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Err: "internal"}))
	staging := r.staging("v", true)
	sel := contract.DiskSelector{LUN: u32(1), Target: u32(0)}
	req := stageRequest("v", staging, sel, ntfs, false)
	if err := r.b.Stage(r.ctx, req); err == nil {
		t.Fatal("the stage with a failing format succeeded")
	}
	v, ok, err := r.jr.Note(r.ctx, backend.NotePrefix(contract.KindDisk, "partitioning")+"v")
	if err != nil || !ok || !strings.Contains(v, `"serialNumber":""`) || !strings.Contains(v, `"uniqueId":""`) {
		t.Fatalf("note %q, %v, %v: want a note with a blank serial and UniqueId", v, ok, err)
	}
	// Another disk with no identifier, a partition Windows shows no file
	// system on (ext4, a locked BitLocker volume), at the same place.
	must(t, r.sim.DetachDisk(n))
	foreign := blank
	foreign.PartitionStyle, foreign.Partitions = host.PartitionStyleGPT, []sim.PartitionSpec{{}}
	r.attach(foreign)
	mark := r.sim.Mark()
	err = r.b.Stage(r.ctx, req)
	wantErr(t, "resumed stage on another disk", err, host.ErrConflict)
	if !strings.Contains(err.Error(), "names no disk by an identifier") {
		t.Errorf("resumed stage = %v, want it to say the note names no disk", err)
	}
	if slices.Contains(r.sim.OpsSince(mark), sim.OpVolumesFormat) {
		t.Fatalf("formatted another disk's partition: %v", r.sim.OpsSince(mark))
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
