//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package disk_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// fast keeps waits for disks short; no test asserts on time.
var fast = backend.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Attempts: 10}

// rig is the disk backend over a simulated host, with a real journal and a
// directory for staging paths.
type rig struct {
	t       *testing.T
	sim     *sim.Sim
	jr      *journal.Journal
	b       *disk.Backend
	kubelet string
	ctx     context.Context
}

func newRig(t *testing.T, o disk.Options) *rig {
	t.Helper()
	return newRigOn(t, o, sim.Config{})
}

// newRigOn is newRig over a simulated host configured by cfg (its Dir is
// set here).
func newRigOn(t *testing.T, o disk.Options, cfg sim.Config) *rig {
	t.Helper()
	cfg.Dir = t.TempDir()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Backoff = fast
	// No deadline: waits for a disk end at fast's Bound.
	return &rig{t: t, sim: s, jr: jr, b: disk.New(s.Host(), jr, o), kubelet: t.TempDir(), ctx: context.Background()}
}

func (r *rig) attach(spec sim.DiskSpec) uint32 {
	r.t.Helper()
	n, err := r.sim.AttachDisk(spec)
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

// staging returns a staging path of the rig's kubelet directory; the
// directory exists when made is true, as kubelet makes it.
func (r *rig) staging(name string, made bool) string {
	r.t.Helper()
	p := filepath.Join(r.kubelet, name, "globalmount")
	if made {
		if err := os.MkdirAll(p, 0o750); err != nil {
			r.t.Fatal(err)
		}
	}
	return p
}

func (r *rig) diskState(n uint32) sim.DiskState {
	r.t.Helper()
	for _, d := range r.sim.Snapshot().Disks {
		if d.Number == n {
			return d
		}
	}
	r.t.Fatalf("disk %d is gone", n)
	return sim.DiskState{}
}

// mountedAt returns the GUID of the volume mounted at dir, "" for none.
func (r *rig) mountedAt(dir string) string {
	for _, m := range r.sim.Snapshot().Mounts {
		if m.Dir == dir {
			return m.Volume
		}
	}
	return ""
}

// volumeOfDisk returns the GUID of the only volume of disk n.
func (r *rig) volumeOfDisk(n uint32) string {
	r.t.Helper()
	var guids []string
	for _, p := range r.diskState(n).Partitions {
		if p.Volume != nil {
			guids = append(guids, p.Volume.GUID)
		}
	}
	if len(guids) != 1 {
		r.t.Fatalf("disk %d has volumes %v, want one", n, guids)
	}
	return guids[0]
}

func stageRequest(id, staging string, sel contract.DiskSelector, fs contract.FileSystem, readOnly bool) backend.StageRequest {
	return backend.StageRequest{VolumeID: id, StagingPath: staging, ReadOnly: readOnly,
		Volume: contract.Volume{Kind: contract.KindDisk, FS: fs, Disk: &contract.DiskSpec{Selector: sel}}}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: %v", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// TestFind: which disk a selector names, and the disks it never names.
func TestFind(t *testing.T) {
	r := newRig(t, disk.Options{})
	a := r.attach(sim.DiskSpec{Serial: "SER-A", Adapter: 1, Target: 0, LUN: 1})
	b := r.attach(sim.DiskSpec{Serial: "vol0a1b2c3d4e5f60718_00000001.", Adapter: 1, Target: 0, LUN: 2}) // AWS NVMe, trailing '.'
	c := r.attach(sim.DiskSpec{Serial: "Google  PersistentDisk pd-1", Page83: "6000C298-595E-0D8D-2F3E-2E3C1E9D6B1A", Adapter: 1, Target: 1, LUN: 2})
	r.attach(sim.DiskSpec{Serial: "DUP", Adapter: 2, LUN: 1})
	r.attach(sim.DiskSpec{Serial: "DUP", Adapter: 2, LUN: 2})
	tests := []struct {
		name    string
		sel     contract.DiskSelector
		want    uint32
		wantErr error
	}{
		{"serial", contract.DiskSelector{Serial: "SER-A"}, a, nil},
		{"serial in another case", contract.DiskSelector{Serial: "ser-a"}, a, nil},
		{"serial without the trailing dot", contract.DiskSelector{Serial: "vol0a1b2c3d4e5f60718_00000001"}, b, nil},
		{"serial contains", contract.DiskSelector{Serial: "a1b2c3", SerialMatch: contract.MatchContains}, b, nil},
		{"serial's last field", contract.DiskSelector{Serial: "pd-1", SerialMatch: contract.MatchLastField}, c, nil},
		{"page 83 in the contract's hex form", contract.DiskSelector{Page83: "6000c298595e0d8d2f3e2e3c1e9d6b1a"}, c, nil},
		{"LUN and target", contract.DiskSelector{LUN: u32(2), Target: u32(1)}, c, nil},
		{"location", contract.DiskSelector{Location: "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 1"}, a, nil},
		{"number", contract.DiskSelector{Number: u32(b)}, b, nil},
		{"serial and a LUN that disagree", contract.DiskSelector{Serial: "SER-A", LUN: u32(2)}, 0, host.ErrNotFound},
		{"two disks match", contract.DiskSelector{Serial: "DUP"}, 0, host.ErrConflict},
		{"LUN 2 of any target matches two disks", contract.DiskSelector{LUN: u32(2), Bus: u32(0)}, 0, host.ErrConflict},
		{"the boot disk by number", contract.DiskSelector{Number: u32(0)}, 0, host.ErrConflict},
		{"the boot disk by serial", contract.DiskSelector{Serial: "SIMBOOT0000000000000"}, 0, host.ErrConflict},
		{"no disk", contract.DiskSelector{Serial: "nope"}, 0, host.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := r.b.Find(r.ctx, tt.sel)
			wantErr(t, "Find", err, tt.wantErr)
			if tt.wantErr == nil && d.Number != tt.want {
				t.Fatalf("Find = disk %d, want %d", d.Number, tt.want)
			}
		})
	}
}

// TestFindWaitsForALateDisk: a disk attached while Find waits is found
// after a rescan.
func TestFindWaitsForALateDisk(t *testing.T) {
	r := newRig(t, disk.Options{})
	// The second Disks.List (after the first rescan) sees the disk.
	rescans := r.sim.Count(sim.OpDisksRescan)
	done := make(chan error, 1)
	go func() {
		for r.sim.Count(sim.OpDisksRescan) == rescans {
			time.Sleep(time.Millisecond)
		}
		_, err := r.sim.AttachDisk(sim.DiskSpec{Serial: "LATE", Adapter: 1, LUN: 5})
		done <- err
	}()
	// Waits until the disk is there: the test's own deadline ends it
	// otherwise.
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	b := disk.New(r.sim.Host(), r.jr, disk.Options{Backoff: backend.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	d, err := b.Find(ctx, contract.DiskSelector{Serial: "LATE"})
	if aerr := <-done; aerr != nil {
		t.Fatal(aerr)
	}
	if err != nil || d.SerialNumber != "LATE" {
		t.Fatalf("Find = %+v, %v; want the late disk", d, err)
	}
}

// TestStage: what a stage does to each kind of disk, and what it refuses
// without changing the disk.
func TestStage(t *testing.T) {
	ntfs := contract.FileSystem{Type: "NTFS"}
	refs := contract.FileSystem{Type: "ReFS", Explicit: true}
	tests := []struct {
		name     string
		disk     sim.DiskSpec
		fs       contract.FileSystem
		readOnly bool
		wantErr  error
		wantFS   string // the volume's file system after the stage
		wantRO   bool   // the disk stays read-only
	}{
		{name: "blank disk", disk: sim.DiskSpec{Offline: true}, fs: ntfs, wantFS: "NTFS"},
		{name: "blank disk as ReFS", disk: sim.DiskSpec{}, fs: refs, wantFS: "ReFS"},
		{name: "formatted, offline and read-only", disk: sim.DiskSpec{FileSystem: "NTFS", Offline: true, ReadOnly: true}, fs: ntfs, wantFS: "NTFS"},
		{name: "formatted, any file system when none is asked for", disk: sim.DiskSpec{FileSystem: "ReFS"}, fs: ntfs, wantFS: "ReFS"},
		{name: "formatted with another file system than asked for", disk: sim.DiskSpec{FileSystem: "NTFS"}, fs: refs, wantErr: host.ErrAlreadyExists},
		{name: "GPT with a data partition of another OS", fs: ntfs, wantErr: host.ErrConflict,
			disk: sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{GptType: "{0fc63daf-8483-4772-8e79-3d69d8477de4}"}}}},
		{name: "Basic Data partition with a volume Windows does not recognise", fs: ntfs, wantErr: host.ErrConflict,
			disk: sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{}}}},
		{name: "two data partitions", fs: ntfs, wantErr: host.ErrConflict,
			disk: sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{Size: 256 << 20, FileSystem: "NTFS"}, {FileSystem: "NTFS"}}}},
		{name: "read-only stage of a formatted offline disk", disk: sim.DiskSpec{FileSystem: "NTFS", Offline: true}, fs: ntfs, readOnly: true, wantFS: "NTFS", wantRO: true},
		{name: "read-only stage of a blank disk", disk: sim.DiskSpec{}, fs: ntfs, readOnly: true, wantErr: host.ErrConflict, wantRO: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{OfflineOnUnstage: true})
			spec := tt.disk
			spec.Serial, spec.Adapter, spec.LUN = "D", 1, uint32(i+1)
			n := r.attach(spec)
			before := r.diskState(n)
			staging := r.staging("v", true)
			err := r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, tt.fs, tt.readOnly))
			wantErr(t, "Stage", err, tt.wantErr)
			after := r.diskState(n)
			if after.ReadOnly != tt.wantRO {
				t.Errorf("disk read-only = %v, want %v", after.ReadOnly, tt.wantRO)
			}
			if tt.wantErr != nil {
				if guid := r.mountedAt(staging); guid != "" {
					t.Errorf("a refused stage mounted volume %s", guid)
				}
				if !slices.EqualFunc(before.Partitions, after.Partitions, func(a, b sim.PartitionState) bool {
					return a.Offset == b.Offset && a.Size == b.Size && (a.Volume == nil) == (b.Volume == nil) &&
						(a.Volume == nil || a.Volume.FileSystem == b.Volume.FileSystem)
				}) {
					t.Errorf("a refused stage changed the partitions: %+v -> %+v", before.Partitions, after.Partitions)
				}
				return
			}
			if after.Offline {
				t.Error("disk offline after the stage")
			}
			guid := r.volumeOfDisk(n)
			if r.mountedAt(staging) != guid {
				t.Errorf("staging path holds %q, want volume %s", r.mountedAt(staging), guid)
			}
			for _, p := range after.Partitions {
				if p.Volume != nil && p.Volume.FileSystem != tt.wantFS {
					t.Errorf("volume has %q, want %q", p.Volume.FileSystem, tt.wantFS)
				}
			}
			// A repeated stage changes nothing on the host.
			mark := r.sim.Mark()
			wantErr(t, "repeated Stage", r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, tt.fs, tt.readOnly)), nil)
			for _, op := range r.sim.OpsSince(mark) {
				if !strings.HasSuffix(op, ".List") && !strings.HasSuffix(op, ".Stat") && op != sim.OpVolumesDiskNumber {
					t.Errorf("repeated stage called %s (all: %v)", op, r.sim.OpsSince(mark))
					break
				}
			}
		})
	}
}

// TestReadOnlyStageOfAnOfflineDisk (issue 23 item 2): a read-only stage
// makes the disk read-only before it brings it online, so that a file
// system never mounts it writable; where Windows refuses to change an
// offline disk's attribute (uncertain: the host contract accepts both
// answers, and the simulated host gives either), the stage fails with a
// conflict (FailedPrecondition) naming the disk, and the disk stays
// offline and untouched. Both on a first stage and on a repeated stage
// after the disk came back offline and writable (a re-attach, a reboot).
func TestReadOnlyStageOfAnOfflineDisk(t *testing.T) {
	ntfs := contract.FileSystem{Type: "NTFS"}
	sel := contract.DiskSelector{Serial: "D"}
	for _, answer := range []string{sim.OfflineReadOnlyAccept, sim.OfflineReadOnlyRefuse} {
		for _, repeated := range []bool{false, true} {
			name := answer + "/first stage"
			if repeated {
				name = answer + "/repeated stage"
			}
			t.Run(name, func(t *testing.T) {
				r := newRigOn(t, disk.Options{OfflineOnUnstage: true}, sim.Config{Windows: sim.WindowsAnswers{OfflineReadOnly: answer}})
				staging := r.staging("v", true)
				n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, FileSystem: "NTFS", Offline: true, ReadOnly: repeated})
				if repeated {
					// The first stage finds the disk read-only: it only
					// brings it online, whatever Windows answers.
					wantErr(t, "first Stage", r.b.Stage(r.ctx, stageRequest("v", staging, sel, ntfs, true)), nil)
					off, rw := true, false
					if err := r.sim.SetDiskState(n, sim.DiskChange{Offline: &off, ReadOnly: &rw}); err != nil {
						t.Fatal(err)
					}
				}
				mark := r.sim.Mark()
				err := r.b.Stage(r.ctx, stageRequest("v", staging, sel, ntfs, true))
				ops := r.sim.OpsSince(mark)
				after := r.diskState(n)
				setRO, online := slices.Index(ops, sim.OpDisksSetReadOnly), slices.Index(ops, sim.OpDisksSetOnline)
				if answer == sim.OfflineReadOnlyRefuse {
					if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "disk "+strconv.Itoa(int(n))+" is offline") {
						t.Fatalf("Stage: %v, want a conflict naming disk %d", err, n)
					}
					if !after.Offline || after.ReadOnly || online >= 0 {
						t.Fatalf("after the refused stage: offline %t, read-only %t, calls %v; want the disk left offline and untouched", after.Offline, after.ReadOnly, ops)
					}
					if !repeated && r.mountedAt(staging) != "" {
						t.Fatal("the refused stage mounted the volume")
					}
					return
				}
				wantErr(t, "Stage", err, nil)
				if setRO < 0 || online < 0 || setRO > online {
					t.Fatalf("calls %v: want SetReadOnly before SetOnline", ops)
				}
				if after.Offline || !after.ReadOnly {
					t.Fatalf("after the stage: offline %t, read-only %t; want online and read-only", after.Offline, after.ReadOnly)
				}
				if r.mountedAt(staging) != r.volumeOfDisk(n) {
					t.Fatal("the volume is not mounted at the staging path")
				}
			})
		}
	}
}

// TestStageRefusesTheStagingPath: what is at the staging path decides
// before any disk is touched.
func TestStageRefusesTheStagingPath(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(r *rig, staging string)
		wantErr error
	}{
		{"a link", func(r *rig, staging string) {
			if err := os.Symlink(r.t.TempDir(), staging); err != nil {
				r.t.Fatal(err)
			}
		}, host.ErrAlreadyExists},
		{"a file", func(r *rig, staging string) {
			if err := os.WriteFile(staging, []byte("x"), 0o600); err != nil {
				r.t.Fatal(err)
			}
		}, host.ErrConflict},
		{"the volume of another disk", func(r *rig, staging string) {
			other := r.attach(sim.DiskSpec{Serial: "OTHER", Adapter: 1, LUN: 9, FileSystem: "NTFS"})
			if err := os.MkdirAll(staging, 0o750); err != nil {
				r.t.Fatal(err)
			}
			if err := r.sim.Host().Volumes.Mount(r.ctx, `\\?\Volume{`+r.volumeOfDisk(other)+`}\`, staging); err != nil {
				r.t.Fatal(err)
			}
		}, host.ErrAlreadyExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			staging := r.staging("v", false)
			if err := os.MkdirAll(filepath.Dir(staging), 0o750); err != nil {
				t.Fatal(err)
			}
			tt.prepare(r, staging)
			err := r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, contract.FileSystem{Type: "NTFS"}, false))
			wantErr(t, "Stage", err, tt.wantErr)
			if d := r.diskState(n); d.PartitionStyle != host.PartitionStyleRAW {
				t.Errorf("the refused stage initialised the disk: %v", d.PartitionStyle)
			}
		})
	}
	r := newRig(t, disk.Options{})
	err := r.b.Stage(r.ctx, backend.StageRequest{VolumeID: "v", StagingPath: r.staging("v", true), Volume: contract.Volume{Kind: contract.KindDisk}})
	wantErr(t, "Stage without a disk spec", err, host.ErrInvalid)
}

// TestStageInterruptedBeforeFormatConverges: a stage that created the
// partition but failed before formatting it formats the partition on the
// retry, because its note in the journal says the partition is the
// plugin's own; another volume finding that partition does not.
func TestStageInterruptedBeforeFormatConverges(t *testing.T) {
	r := newRig(t, disk.Options{})
	n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
	staging := r.staging("v", true)
	if err := r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Err: "internal"}); err != nil {
		t.Fatal(err)
	}
	req := stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, contract.FileSystem{Type: "NTFS"}, false)
	if err := r.b.Stage(r.ctx, req); err == nil {
		t.Fatal("the stage with a failing format succeeded")
	}
	notes, _ := r.jr.Notes(r.ctx, "")
	if len(notes) != 1 {
		t.Fatalf("notes after the interrupted stage: %v, want the partitioning note", notes)
	}
	other := req
	other.VolumeID = "w"
	wantErr(t, "another volume's stage of the half-made disk", r.b.Stage(r.ctx, other), host.ErrConflict)
	wantErr(t, "retry", r.b.Stage(r.ctx, req), nil)
	if guid := r.volumeOfDisk(n); r.mountedAt(staging) != guid {
		t.Fatalf("staging path holds %q, want %s", r.mountedAt(staging), guid)
	}
	if notes, _ := r.jr.Notes(r.ctx, ""); len(notes) != 0 {
		t.Errorf("notes after the retry formatted the volume: %v", notes)
	}
}

// TestExpand grows the staged volume's partition to the disk's new size.
func TestExpand(t *testing.T) {
	r := newRig(t, disk.Options{})
	n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1, Size: 1 << 30})
	staging := r.staging("v", true)
	wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, contract.DiskSelector{Serial: "D"}, contract.FileSystem{Type: "NTFS"}, false)), nil)
	before, err := r.b.Expand(r.ctx, backend.ExpandRequest{VolumeID: "v", StagingPath: staging})
	wantErr(t, "Expand of a volume that fills its disk", err, nil)

	if err := r.sim.ResizeDisk(n, 3<<30); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		req     backend.ExpandRequest
		wantErr error
		check   func(t *testing.T, size int64)
	}{
		{"more than the disk holds", backend.ExpandRequest{RequiredBytes: 4 << 30}, host.ErrNotReady, nil},
		{"capped by the limit", backend.ExpandRequest{RequiredBytes: 2 << 30, LimitBytes: 2 << 30}, nil, func(t *testing.T, size int64) {
			if size <= before || size > 2<<30 {
				t.Errorf("size %d, want more than %d and at most the 2 GiB limit", size, before)
			}
		}},
		{"to the disk's size", backend.ExpandRequest{}, nil, func(t *testing.T, size int64) {
			if size <= 2<<30 || size > 3<<30 {
				t.Errorf("size %d, want between 2 and 3 GiB", size)
			}
		}},
		{"again: nothing left to grow", backend.ExpandRequest{RequiredBytes: 2 << 30}, nil, func(t *testing.T, size int64) {
			if size <= 2<<30 {
				t.Errorf("size %d", size)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.VolumeID, tt.req.StagingPath = "v", staging
			size, err := r.b.Expand(r.ctx, tt.req)
			wantErr(t, "Expand", err, tt.wantErr)
			if tt.check != nil {
				tt.check(t, size)
			}
		})
	}
	_, err = r.b.Expand(r.ctx, backend.ExpandRequest{VolumeID: "w", StagingPath: r.staging("w", true)})
	wantErr(t, "Expand with nothing mounted", err, host.ErrNotFound)
}

// TestUnstage: the unmount, the offline step and their convergence after
// an unstage that stopped between them.
func TestUnstage(t *testing.T) {
	sel := contract.DiskSelector{Serial: "D"}
	entry := journal.Entry{VolumeID: "v", Backend: "disk", Attrs: disk.RecordOf(&contract.DiskSpec{Selector: sel}).Attrs()}
	tests := []struct {
		name        string
		offline     bool                         // Options.OfflineOnUnstage
		before      func(r *rig, staging string) // after the stage
		entry       journal.Entry                // the journal's entry of the volume
		wantErr     error
		wantOffline bool
	}{
		{name: "staged", offline: true, entry: entry, wantOffline: true},
		{name: "staged, disks kept online", offline: false, entry: entry},
		{name: "unmounted by an earlier unstage that stopped before the offline", offline: true, entry: entry, wantOffline: true,
			before: func(r *rig, staging string) {
				if err := r.sim.Host().Volumes.Unmount(r.ctx, staging); err != nil {
					r.t.Fatal(err)
				}
			}},
		{name: "the same, unknown to the journal: nothing says which disk", offline: true,
			before: func(r *rig, staging string) {
				if err := r.sim.Host().Volumes.Unmount(r.ctx, staging); err != nil {
					r.t.Fatal(err)
				}
			}},
		{name: "disk detached under the mount", offline: true, entry: entry,
			before: func(r *rig, _ string) {
				if err := r.sim.DetachDisk(1); err != nil {
					r.t.Fatal(err)
				}
			}},
		{name: "staging path replaced by a link", offline: true, entry: entry, wantErr: host.ErrConflict,
			before: func(r *rig, staging string) {
				if err := r.sim.Host().Volumes.Unmount(r.ctx, staging); err != nil {
					r.t.Fatal(err)
				}
				if err := os.Remove(staging); err != nil {
					r.t.Fatal(err)
				}
				if err := os.Symlink(r.t.TempDir(), staging); err != nil {
					r.t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{OfflineOnUnstage: tt.offline})
			n := r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			if n != 1 {
				t.Fatalf("disk number %d, the table assumes 1", n)
			}
			staging := r.staging("v", true)
			wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, sel, contract.FileSystem{Type: "NTFS"}, false)), nil)
			if tt.before != nil {
				tt.before(r, staging)
			}
			req := backend.UnstageRequest{VolumeID: "v", StagingPath: staging, Entry: tt.entry}
			wantErr(t, "Unstage", r.b.Unstage(r.ctx, req), tt.wantErr)
			if tt.wantErr != nil {
				return
			}
			if guid := r.mountedAt(staging); guid != "" {
				t.Errorf("volume %s still mounted", guid)
			}
			if fi, err := os.Lstat(staging); err != nil || !fi.IsDir() {
				t.Errorf("staging path after unstage: %v, %v; want the empty directory", fi, err)
			}
			for _, d := range r.sim.Snapshot().Disks {
				if d.Serial == "D" && d.Offline != tt.wantOffline {
					t.Errorf("disk offline = %v, want %v", d.Offline, tt.wantOffline)
				}
			}
			wantErr(t, "repeated Unstage", r.b.Unstage(r.ctx, req), nil)
		})
	}
}

// TestUnstageHostErrors: a host call of the unstage that fails fails the
// unstage with the host's sentinel, except a mount point or a disk that is
// gone already; the next unstage converges.
func TestUnstageHostErrors(t *testing.T) {
	sel := contract.DiskSelector{Serial: "D"}
	entry := journal.Entry{VolumeID: "v", Backend: "disk", Attrs: disk.RecordOf(&contract.DiskSpec{Selector: sel}).Attrs()}
	tests := []struct {
		op, err string
		want    error
	}{
		{sim.OpVolumesUnmount, "busy", host.ErrBusy},
		{sim.OpVolumesUnmount, "notfound", nil},
		{sim.OpDisksSetOnline, "inuse", host.ErrInUse},
		{sim.OpDisksSetOnline, "notfound", nil},
	}
	for _, tt := range tests {
		t.Run(tt.op+" "+tt.err, func(t *testing.T) {
			r := newRig(t, disk.Options{OfflineOnUnstage: true})
			r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			staging := r.staging("v", true)
			must(t, r.b.Stage(r.ctx, stageRequest("v", staging, sel, contract.FileSystem{Type: "NTFS"}, false)))
			must(t, r.sim.Faults().Add(sim.Rule{Op: tt.op, Nth: 1, Err: tt.err}))
			req := backend.UnstageRequest{VolumeID: "v", StagingPath: staging, Entry: entry}
			wantErr(t, "Unstage", r.b.Unstage(r.ctx, req), tt.want)
			wantErr(t, "the next Unstage", r.b.Unstage(r.ctx, req), nil)
			if guid := r.mountedAt(staging); guid != "" {
				t.Errorf("volume %s still mounted", guid)
			}
			for _, d := range r.sim.Snapshot().Disks {
				if d.Serial == "D" && !d.Offline {
					t.Error("disk online after the next unstage")
				}
			}
		})
	}
}

// TestHealth reports the conditions of the staged volume and its disk.
func TestHealth(t *testing.T) {
	sel := contract.DiskSelector{Serial: "D"}
	entry := journal.Entry{VolumeID: "v", Backend: "disk", Attrs: disk.RecordOf(&contract.DiskSpec{Selector: sel}).Attrs()}
	off, on, ro := true, false, true
	warning := host.HealthWarning
	tests := []struct {
		name   string
		change func(r *rig, staging string)
		entry  journal.Entry
		want   []string // reasons
	}{
		{name: "healthy", entry: entry},
		{name: "read-only disk", entry: entry, want: []string{"DiskReadOnly"},
			change: func(r *rig, _ string) { must(r.t, r.sim.SetDiskState(1, sim.DiskChange{ReadOnly: &ro})) }},
		{name: "disk health warning", entry: entry, want: []string{"DiskHealthWarning"},
			change: func(r *rig, _ string) { must(r.t, r.sim.SetDiskState(1, sim.DiskChange{Health: &warning})) }},
		{name: "offline disk, found by the record's selector", entry: entry, want: []string{"DiskOffline"},
			change: func(r *rig, _ string) { must(r.t, r.sim.SetDiskState(1, sim.DiskChange{Offline: &off})) }},
		{name: "offline disk without a record looks detached", want: []string{"DiskMissing"},
			change: func(r *rig, _ string) { must(r.t, r.sim.SetDiskState(1, sim.DiskChange{Offline: &off})) }},
		{name: "detached disk", entry: entry, want: []string{"DiskMissing"},
			change: func(r *rig, _ string) { must(r.t, r.sim.DetachDisk(1)) }},
		{name: "mount point gone", entry: entry, want: []string{"MountPointMissing"},
			change: func(r *rig, staging string) { must(r.t, r.sim.Host().Volumes.Unmount(r.ctx, staging)) }},
		{name: "back online", entry: entry,
			change: func(r *rig, _ string) {
				must(r.t, r.sim.SetDiskState(1, sim.DiskChange{Offline: &off}))
				must(r.t, r.sim.SetDiskState(1, sim.DiskChange{Offline: &on}))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			staging := r.staging("v", true)
			wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, sel, contract.FileSystem{Type: "NTFS"}, false)), nil)
			if tt.change != nil {
				tt.change(r, staging)
			}
			if got := healthReasons(t, r, staging, tt.entry); !slices.Equal(got, tt.want) {
				t.Errorf("conditions %v, want %v", got, tt.want)
			}
		})
	}
}

// healthReasons returns the reasons of the conditions Health reports for
// volume "v" staged at staging with the journal entry e.
func healthReasons(t *testing.T, r *rig, staging string, e journal.Entry) []string {
	t.Helper()
	conds, err := r.b.Health(r.ctx, backend.HealthRequest{VolumeID: "v", StagingPath: staging, Entry: e})
	wantErr(t, "Health", err, nil)
	var got []string
	for _, c := range conds {
		got = append(got, c.Reason)
	}
	return got
}

// TestHealthReadOnlyStage: a volume staged read-only is on a disk the
// stage made read-only, which is no condition of it (it was reported
// Degraded, DiskReadOnly, "writes fail"); the same disk under a writable
// stage's entry is.
func TestHealthReadOnlyStage(t *testing.T) {
	sel := contract.DiskSelector{Serial: "D"}
	entry := func(mode string) journal.Entry {
		return journal.Entry{VolumeID: "v", Backend: "disk", AccessMode: mode, Attrs: disk.RecordOf(&contract.DiskSpec{Selector: sel}).Attrs()}
	}
	off := true
	for _, c := range []struct {
		name    string
		mode    string
		offline bool
		want    []string
	}{
		{name: "single-node reader", mode: "SINGLE_NODE_READER_ONLY"},
		{name: "multi-node reader", mode: "MULTI_NODE_READER_ONLY"},
		{name: "reader, disk offline", mode: "SINGLE_NODE_READER_ONLY", offline: true, want: []string{"DiskOffline"}},
		{name: "writer", mode: "SINGLE_NODE_WRITER", want: []string{"DiskReadOnly"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			staging := r.staging("v", true)
			// A file system first (a read-only stage never formats), then
			// the read-only stage, which makes the disk read-only.
			wantErr(t, "Stage", r.b.Stage(r.ctx, stageRequest("v", staging, sel, contract.FileSystem{Type: "NTFS"}, false)), nil)
			wantErr(t, "Unstage", r.b.Unstage(r.ctx, backend.UnstageRequest{VolumeID: "v", StagingPath: staging}), nil)
			wantErr(t, "read-only Stage", r.b.Stage(r.ctx, stageRequest("v", staging, sel, contract.FileSystem{Type: "NTFS"}, true)), nil)
			if c.offline {
				must(t, r.sim.SetDiskState(1, sim.DiskChange{Offline: &off}))
			}
			if got := healthReasons(t, r, staging, entry(c.mode)); !slices.Equal(got, c.want) {
				t.Errorf("conditions %v, want %v", got, c.want)
			}
		})
	}
}

// TestHostErrorsPassThrough: a failing host call fails the operation with
// the host's sentinel, which the node turns into a gRPC code.
func TestHostErrorsPassThrough(t *testing.T) {
	tests := []struct {
		op, err string
		want    error
	}{
		{sim.OpDisksList, "unreachable", host.ErrUnreachable},
		{sim.OpDisksInitialize, "readonly", host.ErrReadOnly},
		{sim.OpDisksCreatePartition, "busy", host.ErrBusy},
		{sim.OpVolumesFormat, "accessdenied", host.ErrAccessDenied},
		{sim.OpVolumesMount, "inuse", host.ErrInUse},
		{sim.OpFilesStat, "notimplemented", host.ErrNotImplemented},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			r.attach(sim.DiskSpec{Serial: "D", Adapter: 1, LUN: 1})
			must(t, r.sim.Faults().Add(sim.Rule{Op: tt.op, Nth: 1, Err: tt.err}))
			err := r.b.Stage(r.ctx, stageRequest("v", r.staging("v", true), contract.DiskSelector{Serial: "D"}, contract.FileSystem{Type: "NTFS"}, false))
			wantErr(t, "Stage", err, tt.want)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
