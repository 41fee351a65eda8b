package winhost_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// End-to-end: the disk backend (pkg/backend/disk) and the publisher over
// winhost.New(scripted executor). Each script is the complete, ordered list
// of host calls the algorithm makes; the scripted executor fails the test on
// any call out of order, any other argument and any call left unmade. The
// WMI round trips the scripted executor counts are held to the budgets of
// issue 3.

// Host-call budgets (WMI round trips). A fresh stage re-reads its disk once
// before it first writes to it (issue 25: the disk must still be the one
// chosen), one round trip more than issue 3's budget of 8.
const (
	budgetFreshStage    = 9
	budgetRepeatedStage = 2
	budgetPublish       = 0
)

type rig struct {
	e *scripted.Executor
	h host.Host
	b *disk.Backend
}

func newRig(t *testing.T) *rig {
	e := scripted.New(t)
	h := winhost.New(e)
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := disk.New(h, jr, disk.Options{OfflineOnUnstage: true,
		Backoff: backend.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Attempts: 10}})
	return &rig{e: e, h: h, b: b}
}

// sequence renders the calls made, one short line each.
func (r *rig) sequence() []string {
	var out []string
	for _, c := range r.e.Calls() {
		switch c.Kind {
		case scripted.KindQuery:
			out = append(out, "Query "+strings.Fields(c.WQL[strings.Index(c.WQL, " FROM ")+6:])[0])
		case scripted.KindAssociators:
			out = append(out, "Associators "+c.Assoc)
		case scripted.KindCall:
			out = append(out, c.Method.Class+"."+c.Method.Name)
		default:
			out = append(out, c.Kind)
		}
	}
	return out
}

func checkSequence(t *testing.T, r *rig, want ...string) {
	t.Helper()
	if got := r.sequence(); !reflect.DeepEqual(got, want) {
		t.Fatalf("call sequence:\n got  %q\n want %q", got, want)
	}
}

func stageRequest(sel contract.DiskSelector) backend.StageRequest {
	return backend.StageRequest{VolumeID: "pv-1", StagingPath: staging, Volume: contract.Volume{
		Kind: contract.KindDisk, FS: contract.FileSystem{Type: "NTFS"},
		Disk: &contract.DiskSpec{Selector: sel}}}
}

// A serial as AWS NVMe EBS reports it, with the trailing '.' (csi-proxy PR #116).
const serial = "vol0a1b2c3d4e5f60718_00000001."

var bootDisk = diskSpec{Number: 0, Serial: "os-disk", Location: "PCI Slot 0 : Adapter 0 : Port 0 : Target 0 : LUN 0",
	Style: host.PartitionStyleGPT, Boot: true, System: true, Size: 128 << 30}

func mountPointReparse(guid string) []byte {
	return winhost.BuildReparse(winhost.IOReparseTagMountPoint, `\??\`+guid[4:], "", 0)
}

func formatted(guid string) scripted.Reply {
	return scripted.Reply{Result: winhost.Result{Out: map[string]any{"FormattedVolume": volInst(guid, "NTFS", 14, 10<<30-17<<20)}}}
}

// (a) A fresh disk: offline by SAN policy, read-only (the re-attach bug,
// kubernetes-csi/csi-proxy#437), RAW; found by serial. SetAttributes on the
// offline disk answers 41003 "the disk is offline", the value its page
// documents ("the disk must be online for most attributes to be set",
// learn.microsoft.com/windows-hardware/drivers/storage/msft-disk-setattributes),
// or, on a blank disk, 41000 "the disk has not been initialized" (the
// review's finding): either way the disk comes online first and read-only
// is cleared then.
func TestBackendStageFreshDisk(t *testing.T) {
	for _, refused := range []uint32{41003, 41000} {
		t.Run(strconv.Itoa(int(refused)), func(t *testing.T) {
			r := newRig(t)
			fresh := diskSpec{Number: 1, Serial: serial, Location: "PCI Slot 3 : Adapter 0 : Port 0 : Target 0 : LUN 1",
				ReadOnly: true, Offline: true, OfflineReason: host.OfflineReasonPolicy}
			data := partSpec{Disk: 1, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20, GptType: host.GptTypeBasicData}

			r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir}) // kubelet made it
			r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(fresh)}})
			r.e.ExpectCall(ns, setAttributes(1, false), rv(refused))
			r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Online"}, rv(0))
			r.e.ExpectCall(ns, setAttributes(1, false), rv(0))
			// Read again before the first write: still the disk chosen.
			online := fresh
			online.ReadOnly, online.Offline, online.OfflineReason = false, false, 0
			r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(online)}})
			r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Initialize",
				In: []winhost.Param{{Name: "PartitionStyle", Value: uint16(2)}}}, rv(0))
			// The backend hands over the disk as initialised (GPT): a Basic Data
			// partition is asked for explicitly.
			r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "CreatePartition", In: []winhost.Param{
				{Name: "UseMaximumSize", Value: true}, {Name: "AssignDriveLetter", Value: false},
				{Name: "GptType", Value: host.GptTypeBasicData}}},
				scripted.Reply{Result: winhost.Result{Out: createdPartition(partInst(data))}})
			r.e.ExpectAssociators(ns, partRef(1, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
				scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "", 0, 10<<30-17<<20)}})
			r.e.ExpectCall(ns, format(guidA, formatParams("NTFS", "", 0)...), formatted(guidA))
			r.e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidA}, ok())

			sel := contract.DiskSelector{Serial: "vol0a1b2c3d4e5f60718_00000001"}
			if err := r.b.Stage(context.Background(), stageRequest(sel)); err != nil {
				t.Fatal(err)
			}
			checkSequence(t, r, "GetFileAttributes", "Query MSFT_Disk", "MSFT_Disk.SetAttributes", "MSFT_Disk.Online",
				"MSFT_Disk.SetAttributes", "Query MSFT_Disk", "MSFT_Disk.Initialize", "MSFT_Disk.CreatePartition", "Associators MSFT_PartitionToVolume",
				"MSFT_Volume.Format", "SetVolumeMountPoint")
			if n := r.e.WMIRoundTrips(); n > budgetFreshStage || n != 9 {
				t.Fatalf("fresh stage: %d WMI round trips, budget %d (expected 9)", n, budgetFreshStage)
			}
		})
	}
}

// (b) Repeated stage: the staging path already is a mount point of the
// selected disk's volume.
func TestBackendStageRepeated(t *testing.T) {
	attached := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT}
	t.Run("healthy", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(attached)}})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		if err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial})); err != nil {
			t.Fatal(err)
		}
		checkSequence(t, r, "GetFileAttributes", "ReadReparsePoint", "Query MSFT_Disk", "VolumeDiskExtents")
		if n := r.e.WMIRoundTrips(); n > budgetRepeatedStage || n != 1 {
			t.Fatalf("repeated stage: %d WMI round trips, budget %d (expected 1)", n, budgetRepeatedStage)
		}
	})
	t.Run("disk came back read-only", func(t *testing.T) {
		r := newRig(t)
		ro := attached
		ro.ReadOnly = true
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(ro)}})
		r.e.ExpectCall(ns, setAttributes(1, false), rv(0))
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		if err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial})); err != nil {
			t.Fatal(err)
		}
		if n := r.e.WMIRoundTrips(); n > budgetRepeatedStage {
			t.Fatalf("repeated stage with repair: %d WMI round trips, budget %d", n, budgetRepeatedStage)
		}
	})
	t.Run("disk came back offline", func(t *testing.T) {
		// An offline disk's volume device is gone (its extents cannot be
		// read), so the disk is brought online before the volume is checked.
		r := newRig(t)
		off := attached
		off.Offline = true
		off.OfflineReason = host.OfflineReasonPolicy
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(off)}})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Online"}, rv(0))
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		if err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial})); err != nil {
			t.Fatal(err)
		}
		if n := r.e.WMIRoundTrips(); n > budgetRepeatedStage {
			t.Fatalf("repeated stage with repair: %d WMI round trips, budget %d", n, budgetRepeatedStage)
		}
	})
	t.Run("another disk's volume is mounted there", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidB)})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(attached)}})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidB[:len(guidB)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 6)})
		err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial}))
		if !errors.Is(err, host.ErrAlreadyExists) {
			t.Fatalf("err = %v, want ErrAlreadyExists", err)
		}
	})
}

// (c) Publish, unpublish and stats cost no WMI round trip.
func TestBackendPublishUnpublishStats(t *testing.T) {
	r := newRig(t)
	p := backend.NewPublisher(r.h)
	ctx := context.Background()
	link := winhost.BuildReparse(winhost.IOReparseTagSymlink, `\??\`+staging, staging, 0)

	// Publish over the directory kubelet pre-created (kubernetes#88759).
	r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: attrDir})
	r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: attrDir})
	r.e.ExpectWin32("RemoveDirectory", []any{lTarget}, ok())
	r.e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(3)}, ok())
	// Publish again: the link is there already.
	r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: attrDir | attrReparse})
	r.e.ExpectWin32("ReadReparsePoint", []any{lTarget}, scripted.Reply{Bytes: link})
	// Stats on the target path.
	r.e.ExpectWin32("GetDiskFreeSpaceEx", []any{target + `\`}, scripted.Reply{Space: [3]uint64{6 << 30, 10 << 30, 6 << 30}})
	// Unpublish removes only the link.
	r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: attrDir | attrReparse})
	r.e.ExpectWin32("ReadReparsePoint", []any{lTarget}, scripted.Reply{Bytes: link})
	r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: attrDir | attrReparse})
	r.e.ExpectWin32("ReadReparsePoint", []any{lTarget}, scripted.Reply{Bytes: link})
	r.e.ExpectWin32("RemoveDirectory", []any{lTarget}, ok())
	// Unpublish again: nothing there.
	r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorFileNotFound)})

	if created, err := p.Publish(ctx, staging, target); err != nil || !created {
		t.Fatalf("Publish = %t, %v", created, err)
	}
	if created, err := p.Publish(ctx, staging, target); err != nil || created {
		t.Fatalf("second Publish = %t, %v", created, err)
	}
	sp, err := backend.Stats(ctx, r.h.Volumes, target)
	if err != nil || sp.Total != 10<<30 || sp.AvailableToUse != 6<<30 {
		t.Fatalf("Stats = %+v, %v", sp, err)
	}
	if err := p.Unpublish(ctx, target, staging); err != nil {
		t.Fatal(err)
	}
	if err := p.Unpublish(ctx, target, staging); err != nil {
		t.Fatal(err)
	}
	if n := r.e.WMIRoundTrips(); n != budgetPublish {
		t.Fatalf("publish, unpublish and stats: %d WMI round trips, budget %d", n, budgetPublish)
	}
}

func TestBackendPublishMissingTarget(t *testing.T) {
	t.Run("parent exists, as kubelet makes it", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorFileNotFound)})
		r.e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(3)}, ok())
		if created, err := backend.NewPublisher(r.h).Publish(context.Background(), staging, target); err != nil || !created {
			t.Fatalf("Publish = %t, %v", created, err)
		}
		if n := r.e.WMIRoundTrips(); n != 0 {
			t.Fatalf("%d WMI round trips", n)
		}
	})
	t.Run("parent missing", func(t *testing.T) {
		// CreateSymbolicLinkW fails with ERROR_PATH_NOT_FOUND when the
		// link's directory does not exist; the parent is made, then the
		// link.
		r := newRig(t)
		parent := target[:strings.LastIndex(target, `\`)]
		r.e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorPathNotFound)})
		r.e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(3)}, scripted.Reply{Err: w32("CreateSymbolicLinkW", winhost.ErrorPathNotFound)})
		r.e.ExpectWin32("CreateDirectory", []any{`\\?\` + parent}, ok())
		r.e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(3)}, ok())
		if created, err := backend.NewPublisher(r.h).Publish(context.Background(), staging, target); err != nil || !created {
			t.Fatalf("Publish = %t, %v", created, err)
		}
	})
}

// (d) Unstage: flush, remove the mount point, take the disk offline.
func TestBackendUnstage(t *testing.T) {
	online := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT}
	readOnly := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT, ReadOnly: true}
	// mounted scripts the look at the staging path: a mount point of
	// volume A, on disk 1.
	mounted := func(r *rig) {
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
	}
	t.Run("mounted", func(t *testing.T) {
		r := newRig(t)
		mounted(r)
		r.e.ExpectWin32("FlushVolume", []any{guidA[:len(guidA)-1]}, ok())
		r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(online)}})
		r.e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Offline"}, rv(0))
		if err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging}); err != nil {
			t.Fatal(err)
		}
		// The disk is read while its volume is mounted on it, and taken
		// offline only if the volume is still on that number after the
		// unmount (one IOCTL, no WMI round trip): disk numbers may change
		// in between (disk.Backend.offlineVolumeDisk).
		checkSequence(t, r, "GetFileAttributes", "ReadReparsePoint", "VolumeDiskExtents", "FlushVolume",
			"Query MSFT_Disk", "DeleteVolumeMountPoint", "VolumeDiskExtents", "MSFT_Disk.Offline")
		if n := r.e.WMIRoundTrips(); n != 2 {
			t.Fatalf("unstage: %d WMI round trips, want 2", n)
		}
	})
	// Found by review: the disk was read again by number after the
	// unmount, so a disk that took the number in between was taken offline.
	for _, tt := range []struct {
		name  string
		after scripted.Reply // the volume's disk extents after the unmount
	}{
		{"disk numbers changed after the unmount", scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 2)}},
		{"disk gone after the unmount", scripted.Reply{Err: w32("CreateFileW", winhost.ErrorFileNotFound)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			mounted(r)
			r.e.ExpectWin32("FlushVolume", []any{guidA[:len(guidA)-1]}, ok())
			r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(online)}})
			r.e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
			r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, tt.after)
			if err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging}); err != nil {
				t.Fatalf("Unstage = %v, want success: the volume is unmounted", err)
			}
			checkSequence(t, r, "GetFileAttributes", "ReadReparsePoint", "VolumeDiskExtents", "FlushVolume",
				"Query MSFT_Disk", "DeleteVolumeMountPoint", "VolumeDiskExtents")
		})
	}
	// The review found that the unstage of a read-only volume always
	// flushed it, opening it for writing, which write-protected media
	// refuse: unstage then failed and was retried forever.
	t.Run("read-only volume: write-protected", func(t *testing.T) {
		r := newRig(t)
		mounted(r)
		r.e.ExpectWin32("FlushVolume", []any{guidA[:len(guidA)-1]}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorWriteProtect)})
		r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(readOnly)}})
		r.e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Offline"}, rv(0))
		if err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("read-only volume: access denied", func(t *testing.T) {
		r := newRig(t)
		mounted(r)
		r.e.ExpectWin32("FlushVolume", []any{guidA[:len(guidA)-1]}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorAccessDenied)})
		r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(readOnly)}})
		r.e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Offline"}, rv(0))
		if err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("writable volume: access denied is an error", func(t *testing.T) {
		r := newRig(t)
		mounted(r)
		r.e.ExpectWin32("FlushVolume", []any{guidA[:len(guidA)-1]}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorAccessDenied)})
		r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(online)}})
		err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging})
		if !errors.Is(err, host.ErrAccessDenied) {
			t.Fatalf("err = %v, want ErrAccessDenied", err)
		}
	})
	t.Run("already unstaged", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		if err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging}); err != nil {
			t.Fatal(err)
		}
		if n := r.e.WMIRoundTrips(); n != 0 {
			t.Fatalf("%d WMI round trips", n)
		}
	})
	t.Run("disk detached under the mount point", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorFileNotFound)})
		r.e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
		if err := r.b.Unstage(context.Background(), backend.UnstageRequest{VolumeID: "pv-1", StagingPath: staging}); err != nil {
			t.Fatal(err)
		}
	})
}

// (e) Expand after the disk grew from 10 to 20 GiB.
func TestBackendExpand(t *testing.T) {
	grown := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT, Size: 20 << 30}
	msr := partSpec{Disk: 1, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
	data := partSpec{Disk: 1, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20, GptType: host.GptTypeBasicData,
		AccessPaths: []any{staging + `\`, guidA}}
	supported := func(max uint64) scripted.Reply {
		return scripted.Reply{Result: winhost.Result{Out: map[string]any{
			"SizeMin": "104857600", "SizeMax": itoa64(max)}}}
	}
	prelude := func(r *rig) {
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_StorageSetting", Name: "UpdateHostStorageCache"}, rv(0))
		r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(grown)}})
		r.e.ExpectQuery(ns, wqlPartsOf(1), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(data)}})
	}
	req := backend.ExpandRequest{VolumeID: "pv-1", StagingPath: staging, RequiredBytes: 20 << 30}
	t.Run("grows to the maximum", func(t *testing.T) {
		r := newRig(t)
		max := uint64(20<<30 - 17<<20 - 1<<20)
		prelude(r)
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "GetSupportedSize"}, supported(max))
		// Read again before the resize: the same disk, still holding the volume.
		r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(grown)}})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "Resize",
			In: []winhost.Param{{Name: "Size", Value: itoa64(max)}}}, rv(0))
		r.e.ExpectQuery(ns, wqlVolume(guidA), scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, max)}})
		got, err := r.b.Expand(context.Background(), req)
		if err != nil || got != int64(max) {
			t.Fatalf("Expand = %d, %v; want the real size %d", got, err, max)
		}
		checkSequence(t, r, "GetFileAttributes", "ReadReparsePoint", "VolumeDiskExtents",
			"MSFT_StorageSetting.UpdateHostStorageCache", "Query MSFT_Disk", "Query MSFT_Partition",
			"MSFT_Partition.GetSupportedSize", "Query MSFT_Disk", "VolumeDiskExtents", "MSFT_Partition.Resize", "Query MSFT_Volume")
		if n := r.e.WMIRoundTrips(); n != 7 {
			t.Fatalf("expand: %d WMI round trips, want 7", n)
		}
	})
	t.Run("growth below 1 MiB is a no-op reporting the real size", func(t *testing.T) {
		r := newRig(t)
		prelude(r)
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "GetSupportedSize"},
			supported(10<<30-17<<20+512<<10))
		r.e.ExpectQuery(ns, wqlVolume(guidA), scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, 10<<30-17<<20)}})
		got, err := r.b.Expand(context.Background(), req)
		if err != nil || got != 10<<30-17<<20 {
			t.Fatalf("Expand = %d, %v", got, err)
		}
		if n := r.e.WMIRoundTrips(); n != 5 {
			t.Fatalf("expand no-op: %d WMI round trips, want 5", n)
		}
	})
}

func itoa64(n uint64) string { return strconv.FormatUint(n, 10) }

// (f) Page 83 lookup: one disk's IOCTL fails with ERROR_INVALID_FUNCTION
// (GitHub runners: kubernetes-csi/csi-proxy@eeba470 integrationtests/disk_v1_test.go), another
// has a different identifier;
// the right disk is still found. The boot disk's identifier is never read.
func TestBackendStageByPage83(t *testing.T) {
	r := newRig(t)
	hyperV := append([]byte("MSFT    "), 0x5d, 0x06, 0xa3, 0x1b, 0x0c, 0x4e, 0x47, 0x49, 0x8e, 0x10, 0x9f, 0x2c, 0x73, 0x3a, 0x81, 0x02)
	const want = "4d534654202020205d06a31b0c4e47498e109f2c733a8102"
	broken := diskSpec{Number: 1, Style: host.PartitionStyleGPT}
	other := diskSpec{Number: 2, Style: host.PartitionStyleGPT}
	// An already formatted disk whose partition fills it: no growth.
	match := diskSpec{Number: 3, Style: host.PartitionStyleGPT, Size: 10 << 30}
	msr := partSpec{Disk: 3, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
	data := partSpec{Disk: 3, Number: 2, Offset: dataOffset, Size: 10<<30 - 16<<20 - 1<<20, GptType: host.GptTypeBasicData}

	r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
	r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{
		diskInst(bootDisk), diskInst(broken), diskInst(other), diskInst(match)}})
	r.e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(1)}, scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorInvalidFunction)})
	r.e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(2)}, scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(
		winhost.StorageID{CodeSet: 2, Type: 1, ID: []byte("Google  persistent-disk-7")})})
	r.e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(3)}, scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(
		winhost.StorageID{CodeSet: 1, Type: 3, Assoc: 1, ID: []byte{0x60, 1, 2, 3, 4, 5, 6, 7}}, // port-associated NAA: skipped
		winhost.StorageID{CodeSet: 1, Type: 1, ID: hyperV})})
	r.e.ExpectQuery(ns, wqlPartsOf(3), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(data)}})
	r.e.ExpectAssociators(ns, partRef(3, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
		scripted.Reply{Instances: []winhost.Instance{volInst(guidB, "NTFS", 14, 10<<30-18<<20)}})
	r.e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidB}, ok())

	if err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Page83: want})); err != nil {
		t.Fatal(err)
	}
	if n := r.e.WMIRoundTrips(); n != 3 {
		t.Fatalf("stage of a formatted disk by page 83: %d WMI round trips, want 3", n)
	}
}

// (g) Ambiguity and the boot disk.
func TestBackendFindSafety(t *testing.T) {
	twin1 := diskSpec{Number: 1, Serial: "dup", Style: host.PartitionStyleGPT}
	twin2 := diskSpec{Number: 2, Serial: "dup", Style: host.PartitionStyleGPT}
	t.Run("two matches", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(twin1), diskInst(twin2)}})
		_, err := r.b.Find(context.Background(), contract.DiskSelector{Serial: "dup"})
		if !errors.Is(err, host.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
	t.Run("only the boot disk matches", func(t *testing.T) {
		r := newRig(t)
		lun0 := uint32(0)
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(twin1)}})
		_, err := r.b.Find(context.Background(), contract.DiskSelector{LUN: &lun0})
		if !errors.Is(err, host.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
	t.Run("boot disk and a data disk match: the data disk", func(t *testing.T) {
		r := newRig(t)
		lun0 := uint32(0)
		data := diskSpec{Number: 4, Serial: "d", Location: "PCI Slot 3 : Adapter 1 : Port 0 : Target 0 : LUN 0"}
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(data)}})
		d, err := r.b.Find(context.Background(), contract.DiskSelector{LUN: &lun0})
		if err != nil || d.Number != 4 {
			t.Fatalf("Find = disk %d, %v", d.Number, err)
		}
	})
	t.Run("disk appears after a rescan", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk)}})
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_StorageSetting", Name: "UpdateHostStorageCache"}, rv(0))
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(twin1)}})
		d, err := r.b.Find(context.Background(), contract.DiskSelector{Serial: "dup"})
		if err != nil || d.Number != 1 {
			t.Fatalf("Find = disk %d, %v", d.Number, err)
		}
	})
	t.Run("hung provider ends with the deadline", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Block: true})
		err := r.b.Stage(r.e.BlockedContext(), stageRequest(contract.DiskSelector{Serial: "dup"}))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

// (h) A clone of an attached disk: offline with OfflineReason Collision
// and read-only. Clearing read-only first lets it come online
// (csi-proxy#287, azuredisk PR #1909, gcp-pd#664; docs/windows.md, "Signature collisions").
func TestBackendStageSignatureCollision(t *testing.T) {
	clone := diskSpec{Number: 2, Serial: serial, Style: host.PartitionStyleGPT, ReadOnly: true, Offline: true,
		OfflineReason: host.OfflineReasonCollision}
	msr := partSpec{Disk: 2, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
	data := partSpec{Disk: 2, Number: 2, Offset: dataOffset, Size: 10<<30 - 16<<20 - 1<<20, GptType: host.GptTypeBasicData}
	prelude := func(r *rig) {
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(clone)}})
		// Read again before its volumes come online: still the disk chosen.
		r.e.ExpectQuery(ns, wqlDisk(2), scripted.Reply{Instances: []winhost.Instance{diskInst(clone)}})
		r.e.ExpectCall(ns, setAttributes(2, false), rv(0))
	}
	online := winhost.Method{Class: "MSFT_Disk", Path: diskRef(2), Name: "Online"}
	t.Run("brought online after clearing read-only", func(t *testing.T) {
		r := newRig(t)
		prelude(r)
		r.e.ExpectCall(ns, online, rv(0))
		r.e.ExpectQuery(ns, wqlPartsOf(2), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(data)}})
		r.e.ExpectAssociators(ns, partRef(2, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
			scripted.Reply{Instances: []winhost.Instance{volInst(guidB, "NTFS", 14, 10<<30-18<<20)}})
		r.e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidB}, ok())
		if err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial})); err != nil {
			t.Fatal(err)
		}
		checkSequence(t, r, "GetFileAttributes", "Query MSFT_Disk", "Query MSFT_Disk", "MSFT_Disk.SetAttributes", "MSFT_Disk.Online",
			"Query MSFT_Partition", "Associators MSFT_PartitionToVolume", "SetVolumeMountPoint")
	})
	t.Run("still refused: a conflict saying what happened", func(t *testing.T) {
		r := newRig(t)
		prelude(r)
		r.e.ExpectCall(ns, online, rv(4))
		err := r.b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial}))
		if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "signature collides") {
			t.Fatalf("err = %v, want ErrConflict naming the collision", err)
		}
	})
}

// (i) A read-only stage of an offline, writable, formatted disk (issue 23
// item 2): read-only is set before the disk comes online, so that NTFS
// never mounts it writable. Windows' answer to SetAttributes on an
// offline disk is uncertain (docs/windows.md): success, then Online; or
// 41003 "the disk is offline", then the stage fails with a conflict
// naming the disk and the disk stays offline (no Online call).
func TestBackendReadOnlyStageOfAnOfflineDisk(t *testing.T) {
	off := diskSpec{Number: 2, Serial: serial, Style: host.PartitionStyleGPT, Offline: true, OfflineReason: host.OfflineReasonPolicy}
	msr := partSpec{Disk: 2, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
	data := partSpec{Disk: 2, Number: 2, Offset: dataOffset, Size: 10<<30 - 16<<20 - 1<<20, GptType: host.GptTypeBasicData}
	readOnly := stageRequest(contract.DiskSelector{Serial: serial})
	readOnly.ReadOnly = true
	prelude := func(r *rig, answer uint32) {
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(off)}})
		r.e.ExpectQuery(ns, wqlDisk(2), scripted.Reply{Instances: []winhost.Instance{diskInst(off)}})
		r.e.ExpectCall(ns, setAttributes(2, true), rv(answer))
	}
	t.Run("Windows sets read-only while offline", func(t *testing.T) {
		r := newRig(t)
		prelude(r, 0)
		r.e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(2), Name: "Online"}, rv(0))
		r.e.ExpectQuery(ns, wqlPartsOf(2), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(data)}})
		r.e.ExpectAssociators(ns, partRef(2, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
			scripted.Reply{Instances: []winhost.Instance{volInst(guidB, "NTFS", 14, 10<<30-18<<20)}})
		r.e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidB}, ok())
		if err := r.b.Stage(context.Background(), readOnly); err != nil {
			t.Fatal(err)
		}
		checkSequence(t, r, "GetFileAttributes", "Query MSFT_Disk", "Query MSFT_Disk", "MSFT_Disk.SetAttributes", "MSFT_Disk.Online",
			"Query MSFT_Partition", "Associators MSFT_PartitionToVolume", "SetVolumeMountPoint")
	})
	t.Run("Windows refuses while offline", func(t *testing.T) {
		r := newRig(t)
		prelude(r, 41003)
		err := r.b.Stage(context.Background(), readOnly)
		if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "disk 2") {
			t.Fatalf("err = %v, want a conflict naming disk 2", err)
		}
		checkSequence(t, r, "GetFileAttributes", "Query MSFT_Disk", "Query MSFT_Disk", "MSFT_Disk.SetAttributes")
	})
}

// Health of a staged volume: two WMI queries (the disk and the volume).
func TestBackendHealth(t *testing.T) {
	r := newRig(t)
	ro := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT, ReadOnly: true}
	vol := volInst(guidA, "NTFS", 14, 10<<30)
	vol.Props["HealthStatus"] = int64(1) // Warning (Scan Needed on the MSFT_Volume page)
	r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
	r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
	r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
	r.e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(ro)}})
	r.e.ExpectQuery(ns, wqlVolume(guidA), scripted.Reply{Instances: []winhost.Instance{vol}})
	conds, err := r.b.Health(context.Background(), backend.HealthRequest{VolumeID: "pv-1", StagingPath: staging})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, c := range conds {
		reasons = append(reasons, c.Reason)
	}
	if !reflect.DeepEqual(reasons, []string{"DiskReadOnly", "VolumeHealthWarning"}) {
		t.Fatalf("conditions %q", reasons)
	}
	if n := r.e.WMIRoundTrips(); n != 2 {
		t.Fatalf("health: %d WMI round trips, want 2", n)
	}
}
