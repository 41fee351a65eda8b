//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestCriticalDiskProtected(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	h := s.Host()
	d0, err := h.Disks.Get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := h.Disks.Partitions(ctx, d0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Volumes.OfPartition(ctx, parts[len(parts)-1])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"offline", func() error { return h.Disks.SetOnline(ctx, d0, false) }, host.ErrConflict},
		{"online is a no-op", func() error { return h.Disks.SetOnline(ctx, d0, true) }, nil},
		{"initialize", func() error { return h.Disks.Initialize(ctx, d0, host.PartitionStyleGPT) }, host.ErrConflict},
		{"create partition", func() error { _, err := h.Disks.CreatePartition(ctx, d0); return err }, host.ErrConflict},
		{"read-only", func() error { return h.Disks.SetReadOnly(ctx, d0, true) }, host.ErrConflict},
		{"format C:", func() error { _, err := h.Volumes.Format(ctx, c, host.FormatOptions{FileSystem: "NTFS"}); return err }, host.ErrConflict},
		{"detach", func() error { return s.DetachDisk(0) }, host.ErrConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.name, tc.do(), tc.want) })
	}
	if c.FileSystem != "NTFS" || len(parts[len(parts)-1].AccessPaths) == 0 || parts[len(parts)-1].AccessPaths[0] != `C:\` {
		t.Errorf("C: volume %+v / partition %+v", c, parts[len(parts)-1])
	}
}

func TestDiskNumbersLowestFreeAndStaleRef(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	a, _ := s.AttachDisk(DiskSpec{Serial: "a"})
	b, _ := s.AttachDisk(DiskSpec{Serial: "b"})
	if a != 1 || b != 2 {
		t.Fatalf("numbers %d, %d; want 1, 2", a, b)
	}
	old, err := s.Host().Disks.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DetachDisk(a); err != nil {
		t.Fatal(err)
	}
	c, _ := s.AttachDisk(DiskSpec{Serial: "c"})
	if c != a {
		t.Fatalf("new disk got %d, want reused %d", c, a)
	}
	// A Disk handle of the detached disk does not reach the new one.
	_, err = s.Host().Disks.DeviceIDs(ctx, old)
	wantErr(t, "DeviceIDs on stale handle", err, host.ErrNotFound)
	list, err := s.Host().Disks.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range list {
		if d.Number != uint32(i) {
			t.Errorf("List()[%d].Number = %d", i, d.Number)
		}
	}
}

func TestDeviceIDs(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	ascii, _ := s.AttachDisk(DiskSpec{Serial: "x", Page83: "Google  pd-1"})
	naa, _ := s.AttachDisk(DiskSpec{Serial: "z", Page83: "60022480f48d294f40f18727df9a6349", Adapter: 1, Target: 3, LUN: 2})
	without, _ := s.AttachDisk(DiskSpec{Serial: "y"})
	for _, tt := range []struct {
		n    uint32
		want string
		ok   bool
	}{{ascii, "Google  pd-1", true}, {naa, "60022480f48d294f40f18727df9a6349", true}, {without, "", false}} {
		ids, err := s.Host().Disks.DeviceIDs(ctx, host.Disk{Number: tt.n})
		if got, ok := host.Page83(ids); err != nil || got != tt.want || ok != tt.ok {
			t.Errorf("disk %d: page 83 of %v = %q %v, %v; want %q", tt.n, ids, got, ok, err, tt.want)
		}
	}
	ids, _ := s.Host().Disks.DeviceIDs(ctx, host.Disk{Number: naa})
	if len(ids) != 1 || ids[0].Type != host.DesignatorFCPHName || ids[0].CodeSet != host.CodeSetBinary {
		t.Errorf("a hex page 83 is one binary NAA designator: %v", ids)
	}
	// The address its Location names: adapter 1 is port 1.
	a, err := s.Host().Disks.SCSIAddress(ctx, host.Disk{Number: naa})
	if err != nil || a != (host.SCSIAddress{Port: 1, Target: 3, LUN: 2}) {
		t.Errorf("SCSIAddress = %v, %v", a, err)
	}
}

func TestInitialize(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		spec  DiskSpec
		style host.PartitionStyle
		want  error
	}{
		{"gpt", DiskSpec{}, host.PartitionStyleGPT, nil},
		{"mbr", DiskSpec{}, host.PartitionStyleMBR, nil},
		{"raw style", DiskSpec{}, host.PartitionStyleRAW, host.ErrInvalid},
		{"offline", DiskSpec{Offline: true}, host.PartitionStyleGPT, host.ErrNotReady},
		{"read-only", DiskSpec{ReadOnly: true}, host.PartitionStyleGPT, host.ErrReadOnly},
		{"initialized", DiskSpec{PartitionStyle: host.PartitionStyleMBR}, host.PartitionStyleGPT, host.ErrAlreadyExists},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			n, err := s.AttachDisk(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, "Initialize", s.Host().Disks.Initialize(ctx, host.Disk{Number: n}, tc.style), tc.want)
			if tc.want != nil {
				return
			}
			parts, err := s.Host().Disks.Partitions(ctx, host.Disk{Number: n})
			if err != nil {
				t.Fatal(err)
			}
			if tc.style == host.PartitionStyleMBR {
				if len(parts) != 0 {
					t.Errorf("MBR disk has partitions %+v", parts)
				}
				return
			}
			if len(parts) != 1 || parts[0].GptType != host.GptTypeMSR || parts[0].Offset != 17408 || parts[0].Size != 16759808 || !parts[0].IsReserved() {
				t.Errorf("GPT disk partitions %+v, want the MSR partition", parts)
			}
			_, err = s.Host().Volumes.OfPartition(ctx, parts[0])
			wantErr(t, "OfPartition(MSR)", err, host.ErrNotFound)
		})
	}
}

func TestCreatePartition(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	h := s.Host().Disks
	gpt, _ := s.AttachDisk(DiskSpec{Size: 1 << 30})
	if err := h.Initialize(ctx, host.Disk{Number: gpt}, host.PartitionStyleGPT); err != nil {
		t.Fatal(err)
	}
	p, err := h.CreatePartition(ctx, host.Disk{Number: gpt})
	if err != nil {
		t.Fatal(err)
	}
	if p.Number != 2 || p.Offset != 16*mib || p.GptType != host.GptTypeBasicData || p.Offset+p.Size != (1<<30)-16896 {
		t.Errorf("partition %+v", p)
	}
	if len(p.AccessPaths) != 1 {
		t.Errorf("access paths %v, want the volume GUID path", p.AccessPaths)
	}
	v, err := s.Host().Volumes.OfPartition(ctx, p)
	if err != nil || v.FileSystem != "" || v.GUIDPath != p.AccessPaths[0] {
		t.Errorf("volume %+v, %v; want a RAW volume at %s", v, err, p.AccessPaths[0])
	}
	_, err = h.CreatePartition(ctx, host.Disk{Number: gpt})
	wantErr(t, "CreatePartition on a full disk", err, host.ErrOutOfRange)

	mbr, _ := s.AttachDisk(DiskSpec{PartitionStyle: host.PartitionStyleMBR})
	p, err = h.CreatePartition(ctx, host.Disk{Number: mbr})
	if err != nil || p.MbrType != host.MbrTypeIFS || p.GptType != "" || p.Offset != mib {
		t.Errorf("MBR partition %+v, %v", p, err)
	}

	tests := []struct {
		name string
		spec DiskSpec
		want error
	}{
		{"raw", DiskSpec{}, host.ErrConflict},
		{"offline", DiskSpec{PartitionStyle: host.PartitionStyleGPT, Offline: true}, host.ErrNotReady},
		{"read-only", DiskSpec{PartitionStyle: host.PartitionStyleGPT, ReadOnly: true}, host.ErrReadOnly},
		{"mbr table full", DiskSpec{PartitionStyle: host.PartitionStyleMBR, Size: 1 << 30, Partitions: []PartitionSpec{
			{Size: 100 * mib}, {Size: 100 * mib}, {Size: 100 * mib}, {Size: 100 * mib}}}, host.ErrOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := s.AttachDisk(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.CreatePartition(ctx, host.Disk{Number: n})
			wantErr(t, "CreatePartition", err, tc.want)
		})
	}
}

func TestResizePartition(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	h := s.Host()
	n, guid := formattedDisk(t, s, "grow")
	part := func() host.Partition {
		parts, err := h.Disks.Partitions(ctx, host.Disk{Number: n})
		if err != nil {
			t.Fatal(err)
		}
		return parts[len(parts)-1]
	}
	p := part()
	max, err := h.Disks.MaxPartitionSize(ctx, p)
	if err != nil || max != p.Size {
		t.Fatalf("MaxPartitionSize = %d, %v; want %d (disk full)", max, err, p.Size)
	}
	wantErr(t, "same size", h.Disks.ResizePartition(ctx, p, p.Size), nil)
	wantErr(t, "beyond the disk", h.Disks.ResizePartition(ctx, p, p.Size+4*mib), host.ErrOutOfRange)

	if err := s.ResizeDisk(n, 2<<30); err != nil {
		t.Fatal(err)
	}
	if d, _ := h.Disks.Get(ctx, n); d.Size != 1<<30 {
		t.Errorf("disk size %d before rescan, want the old size", d.Size)
	}
	if err := h.Disks.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := h.Disks.Get(ctx, n); d.Size != 2<<30 {
		t.Errorf("disk size %d after rescan, want 2 GiB", d.Size)
	}
	max, err = h.Disks.MaxPartitionSize(ctx, p)
	if err != nil || max != p.Size+1<<30 {
		t.Fatalf("MaxPartitionSize = %d, %v; want %d", max, err, p.Size+1<<30)
	}
	tests := []struct {
		name string
		size uint64
		want error
	}{
		{"growth below 1 MiB", p.Size + 4096, host.ErrOutOfRange},
		{"not a sector multiple", p.Size + 2*mib + 1, host.ErrInvalid},
		{"beyond max", max + mib, host.ErrOutOfRange},
		{"to max", max, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.name, h.Disks.ResizePartition(ctx, p, tc.size), tc.want) })
	}
	v, err := h.Volumes.Get(ctx, guid)
	if err != nil || v.Size != max || part().Size != max {
		t.Errorf("after growth volume %+v, %v; want size %d", v, err, max)
	}
	wantErr(t, "shrink below the data", h.Disks.ResizePartition(ctx, part(), 2*mib), host.ErrOutOfRange)
	wantErr(t, "reserved", h.Disks.ResizePartition(ctx, host.Partition{DiskNumber: n, Number: 1}, 32*mib), host.ErrInvalid)
	if err := s.SetDiskState(n, DiskChange{ReadOnly: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "read-only", h.Disks.ResizePartition(ctx, part(), max-8*mib), host.ErrReadOnly)
}

func ptr[T any](v T) *T { return &v }

func TestSetOnlineCollision(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	h := s.Host().Disks
	n, err := s.AttachDisk(DiskSpec{Serial: "clone", Collision: true})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Get(ctx, n)
	if !d.IsOffline || d.OfflineReason != host.OfflineReasonCollision || !d.IsReadOnly {
		t.Fatalf("collided disk %+v", d)
	}
	wantErr(t, "online while read-only", h.SetOnline(ctx, d, true), host.ErrConflict)
	wantErr(t, "clear read-only while offline", h.SetReadOnly(ctx, d, false), nil)
	wantErr(t, "online after clearing read-only", h.SetOnline(ctx, d, true), nil)
	d, _ = h.Get(ctx, n)
	if d.IsOffline || d.OfflineReason != host.OfflineReasonNone || s.Snapshot().Disks[n].Collision {
		t.Errorf("disk after online %+v", d)
	}
	wantErr(t, "offline", h.SetOnline(ctx, d, false), nil)
	d, _ = h.Get(ctx, n)
	if !d.IsOffline || d.OfflineReason != host.OfflineReasonPolicy {
		t.Errorf("offlined disk %+v", d)
	}
}

// TestAttachVolumeDisk: a volume's disk is attached once, blank, offline
// by SAN policy, at the next free LUN of adapter 1.
func TestAttachVolumeDisk(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	h := s.Host().Disks
	for i, want := range []bool{true, false} {
		n, attached, err := s.AttachVolumeDisk("pvc-123", 2<<30)
		if err != nil || n != 1 || attached != want {
			t.Fatalf("attach %d: disk %d, attached %v, %v; want disk 1, attached %v", i, n, attached, err, want)
		}
	}
	list, _ := h.List(ctx)
	if len(list) != 2 {
		t.Fatalf("%d disks after two attaches of one volume's disk, want 2", len(list))
	}
	d := list[1]
	if d.SerialNumber != "pvc-123" || d.Size != 2<<30 || !d.IsOffline || d.OfflineReason != host.OfflineReasonPolicy ||
		d.IsReadOnly || d.PartitionStyle != host.PartitionStyleRAW || d.BusType != host.BusTypeSCSI ||
		d.Location != "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 0" {
		t.Errorf("attached disk %+v", d)
	}
	if ids, err := h.DeviceIDs(ctx, d); err != nil || len(ids) != 1 || ids[0].Text() != page83For("pvc-123") || len(ids[0].Value) != 16 {
		t.Errorf("DeviceIDs = %v, %v", ids, err)
	}
	loc, ok := host.ParseLocation(d.Location)
	if !ok || *loc.LUN != 0 || *loc.Adapter != 1 {
		t.Errorf("location %q does not parse", d.Location)
	}
	if n, _, err := s.AttachVolumeDisk("pvc-456", 0); err != nil || s.Snapshot().Disks[n].Size != DefaultDiskSize {
		t.Errorf("attach with size 0: disk %d, %v; want %d bytes", n, err, DefaultDiskSize)
	}
	for _, bad := range []struct {
		serial string
		size   uint64
	}{{"", 0}, {"pvc-odd", 1<<30 + 1}} {
		_, _, err := s.AttachVolumeDisk(bad.serial, bad.size)
		wantErr(t, fmt.Sprintf("attach %q of %d bytes", bad.serial, bad.size), err, host.ErrInvalid)
	}
}

// TestGrowVolumeDisk grows the disk with the serial to the request (whole
// MiB), visible after a rescan, never shrinks it, and leaves iSCSI LUNs
// alone.
func TestGrowVolumeDisk(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		serial  string
		size    uint64
		want    uint64 // size of pvc-1's disk after the rescan
		wantErr error
	}{
		{"grows to the request", "pvc-1", 3 << 30, 3 << 30, nil},
		{"rounds up to whole MiB", "pvc-1", 3<<30 + 1, 3<<30 + 1<<20, nil},
		{"never shrinks", "pvc-1", 1 << 20, 2 << 30, nil},
		{"a disk that is not attached", "pvc-2", 8 << 30, 2 << 30, host.ErrNotFound},
		{"an iSCSI LUN", "lun-serial", 8 << 30, 2 << 30, host.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t)
			if _, err := s.AttachDisk(DiskSpec{Serial: "pvc-1", Size: 2 << 30, Adapter: 1, LUN: 1}); err != nil {
				t.Fatal(err)
			}
			portal := host.Portal{Address: "10.0.0.1", Port: 3260}
			if err := s.AddTarget(TargetSpec{IQN: "iqn.2024-01.io.example:t", Portals: []host.Portal{portal},
				LUNs: []LUNSpec{{LUN: 0, Serial: "lun-serial"}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Host().ISCSI.AddPortal(ctx, portal, "", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Host().ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: "iqn.2024-01.io.example:t", Portal: portal}); err != nil {
				t.Fatal(err)
			}
			_, from, to, err := s.GrowVolumeDisk(tt.serial, tt.size)
			if !errors.Is(err, tt.wantErr) || (err == nil && (from != 2<<30 || to != tt.want)) {
				t.Fatalf("GrowVolumeDisk = from %d to %d, %v; want from %d to %d, %v", from, to, err, uint64(2<<30), tt.want, tt.wantErr)
			}
			if err := s.Host().Disks.Rescan(ctx); err != nil {
				t.Fatal(err)
			}
			for _, d := range s.Snapshot().Disks {
				if d.Serial == "pvc-1" && (d.Size != tt.want || d.PendingSize != 0) {
					t.Errorf("disk pvc-1: size %d (pending %d), want %d", d.Size, d.PendingSize, tt.want)
				}
				if d.Serial == "lun-serial" && d.Size != DefaultDiskSize {
					t.Errorf("the iSCSI LUN's disk grew to %d", d.Size)
				}
			}
		})
	}
}

func TestDetachReattachKeepsContents(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	n, guid := formattedDisk(t, s, "cloud-1")
	if err := s.DetachDisk(n); err != nil {
		t.Fatal(err)
	}
	_, err := s.Host().Volumes.DiskNumber(ctx, guid)
	wantErr(t, "DiskNumber of a detached disk's volume", err, host.ErrNotFound)
	wantErr(t, "detach again", s.DetachDisk(n), host.ErrNotFound)
	_, err = s.AttachDisk(DiskSpec{Serial: "cloud-1", FileSystem: "NTFS"})
	wantErr(t, "attach with layout over stored contents", err, host.ErrAlreadyExists)
	// Attaching the volume's disk brings the same disk back, offline by
	// SAN policy.
	if _, attached, err := s.AttachVolumeDisk("cloud-1", 0); err != nil || !attached {
		t.Fatalf("AttachVolumeDisk of a detached disk: attached %v, %v", attached, err)
	}
	st := s.Snapshot()
	back := st.Disks[len(st.Disks)-1]
	if back.Serial != "cloud-1" || !back.Offline || len(back.Partitions) != 2 || back.Partitions[1].Volume.GUID != guid[11:47] {
		t.Fatalf("re-attached disk %+v", back)
	}
	if err := s.Host().Disks.SetOnline(ctx, host.Disk{Number: back.Number}, true); err != nil {
		t.Fatal(err)
	}
	v, err := s.Host().Volumes.Get(ctx, guid)
	if err != nil || v.FileSystem != "NTFS" {
		t.Errorf("volume after re-attach %+v, %v", v, err)
	}
}

func TestSetDiskStateAndHealth(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	n, guid := formattedDisk(t, s, "h")
	if err := s.SetDiskState(n, DiskChange{Health: ptr(host.HealthUnhealthy), Offline: ptr(true),
		OfflineReason: ptr(host.OfflineReasonWriteFailures)}); err != nil {
		t.Fatal(err)
	}
	d, _ := s.Host().Disks.Get(ctx, n)
	if d.HealthStatus != host.HealthUnhealthy || !d.IsOffline || d.OfflineReason != host.OfflineReasonWriteFailures {
		t.Errorf("disk %+v", d)
	}
	wantErr(t, "SetDiskState on a missing disk", s.SetDiskState(42, DiskChange{}), host.ErrNotFound)
	if err := s.SetDiskState(n, DiskChange{Offline: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVolumeHealth(guid, host.HealthWarning); err != nil {
		t.Fatal(err)
	}
	v, err := s.Host().Volumes.Get(ctx, guid)
	if err != nil || v.HealthStatus != host.HealthWarning {
		t.Errorf("volume %+v, %v", v, err)
	}
}
