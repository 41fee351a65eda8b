//go:build linux

// Linux only: the simulated host runs only on Linux (pkg/sim doc.go).

package controller

import (
	"context"
	"maps"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// node records what reaches the node service.
type node struct {
	csi.UnimplementedNodeServer
	stage  *csi.NodeStageVolumeRequest
	expand *csi.NodeExpandVolumeRequest
}

func (n *node) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	n.stage = req
	return &csi.NodeStageVolumeResponse{}, nil
}

func (n *node) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	n.expand = req
	return &csi.NodeExpandVolumeResponse{}, nil
}

func newSim(t *testing.T) *sim.Sim {
	t.Helper()
	s, err := sim.New(sim.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// disks returns the serials of the attached disks but the boot disk.
func disks(s *sim.Sim) map[string]uint64 {
	out := map[string]uint64{}
	for _, d := range s.Snapshot().Disks {
		if !d.Boot {
			out[d.Serial] = max(d.Size, d.PendingSize)
		}
	}
	return out
}

var mount = &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}

// TestStage: the stand-in names the disk of a disk volume that names none
// and attaches the disks named by the volume ID, and nothing for any other
// volume: an iSCSI volume's disk comes from its target, an SMB volume has
// none, a disk named otherwise is not the stand-in's.
func TestStage(t *testing.T) {
	iscsi := map[string]string{"targetPortal": "10.0.0.1", "iqn": "iqn.2024-01.io.example:t", "lun": "0"}
	tests := []struct {
		name        string
		attach      bool
		copts       contract.Options
		vctx, pctx  map[string]string
		wantPublish map[string]string // publish_context the node sees
		wantDisk    bool              // a disk with serial vol-1 is attached
	}{
		{name: "disk naming no disk", attach: true, pctx: map[string]string{"device": "/dev/mock"},
			wantPublish: map[string]string{"device": "/dev/mock", "diskSerial": "vol-1"}, wantDisk: true},
		{name: "disk named by the volume ID", attach: true, vctx: map[string]string{"diskSerial": "vol-1"},
			wantDisk: true},
		{name: "disk named by the volume ID through --volume-id-disk", attach: true,
			copts: contract.Options{VolumeIDDisk: contract.VolumeIDDiskSerial}, wantDisk: true},
		{name: "disk named otherwise", attach: true, vctx: map[string]string{"diskLUN": "3"}},
		{name: "disk named by serial and LUN", attach: true, vctx: map[string]string{"diskSerial": "vol-1", "diskLUN": "3"}},
		{name: "disk named by serial and NVMe namespace", attach: true, vctx: map[string]string{"diskSerial": "vol-1", "diskNVMeNSID": "3"}},
		{name: "disk without attaching", pctx: map[string]string{}, wantPublish: map[string]string{"diskSerial": "vol-1"}},
		{name: "iscsi", attach: true, vctx: iscsi},
		{name: "smb", attach: true, vctx: map[string]string{"source": "//srv/data"}},
		{name: "smb by default backend", attach: true, copts: contract.Options{DefaultKind: contract.KindSMB}},
		{name: "refused by the contract", attach: true, vctx: map[string]string{"backend": "tape"}},
		{name: "disk refused by the contract", attach: true, vctx: map[string]string{"fsType": "ext4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t)
			n := &node{}
			srv := Wrap(s, Options{Attach: tt.attach, DiskSize: 2 << 30})(n, tt.copts)
			req := &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/k/s", VolumeCapability: mount,
				VolumeContext: tt.vctx, PublishContext: tt.pctx}
			orig := proto.Clone(req)
			if _, err := srv.NodeStageVolume(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(req, orig) {
				t.Errorf("the caller's request was changed: %v", req)
			}
			want := tt.pctx
			if tt.wantPublish != nil {
				want = tt.wantPublish
			}
			if got := n.stage.GetPublishContext(); !maps.Equal(got, want) {
				t.Errorf("the node saw publish_context %v, want %v", got, want)
			}
			if !maps.Equal(n.stage.GetVolumeContext(), tt.vctx) || n.stage.GetVolumeId() != "vol-1" {
				t.Errorf("the node saw %v", n.stage)
			}
			d := disks(s)
			if size, ok := d["vol-1"]; ok != tt.wantDisk || ok && size != 2<<30 {
				t.Errorf("disks %v; want a 2 GiB disk vol-1: %v", d, tt.wantDisk)
			}
			if len(d) > 1 || len(d) == 1 && !tt.wantDisk {
				t.Errorf("disks %v attached", d)
			}
		})
	}
}

// TestStageBringsBackADetachedDisk: a volume staged again after its disk
// was detached gets the same disk, contents included, as a controller
// attaches the volume's own disk.
func TestStageBringsBackADetachedDisk(t *testing.T) {
	s := newSim(t)
	srv := Wrap(s, Options{Attach: true})(&node{}, contract.Options{})
	stage := func() {
		t.Helper()
		if _, err := srv.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: "vol-1", VolumeCapability: mount}); err != nil {
			t.Fatal(err)
		}
	}
	stage()
	st := s.Snapshot()
	first := st.Disks[len(st.Disks)-1]
	if err := s.DetachDisk(first.Number); err != nil {
		t.Fatal(err)
	}
	stage()
	stage()
	st = s.Snapshot()
	if len(st.Disks) != 2 || len(st.Detached) != 0 || st.Disks[1].Serial != "vol-1" || st.Disks[1].Location != first.Location {
		t.Errorf("after restaging: disks %+v, detached %+v", st.Disks, st.Detached)
	}
}

// TestExpand: the disk of the volume grows to the requested size before the
// node sees the expansion; nothing grows without Attach, without a size or
// without such a disk.
func TestExpand(t *testing.T) {
	tests := []struct {
		name     string
		attach   bool
		volume   string
		required int64
		want     uint64
	}{
		{"grows", true, "vol-1", 3 << 30, 3 << 30},
		{"rounds up to whole MiB", true, "vol-1", 3<<30 + 1, 3<<30 + 1<<20},
		{"never shrinks", true, "vol-1", 1 << 20, 2 << 30},
		{"no size", true, "vol-1", 0, 2 << 30},
		{"another volume", true, "vol-2", 8 << 30, 2 << 30},
		{"without attaching", false, "vol-1", 8 << 30, 2 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t)
			if _, _, err := s.AttachVolumeDisk("vol-1", 2<<30); err != nil {
				t.Fatal(err)
			}
			n := &node{}
			srv := Wrap(s, Options{Attach: tt.attach})(n, contract.Options{})
			req := &csi.NodeExpandVolumeRequest{VolumeId: tt.volume, VolumePath: "/k/s",
				CapacityRange: &csi.CapacityRange{RequiredBytes: tt.required}}
			if _, err := srv.NodeExpandVolume(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if n.expand != req {
				t.Errorf("the node saw %v, not the request", n.expand)
			}
			if d := disks(s); len(d) != 1 || d["vol-1"] != tt.want {
				t.Errorf("disks %v, want vol-1 of %d bytes", d, tt.want)
			}
		})
	}
}
