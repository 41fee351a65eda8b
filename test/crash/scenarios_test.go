package crash

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// Backends of the scenarios.
const (
	kindDisk  = "disk"
	kindSMB   = "smb"
	kindISCSI = "iscsi"
)

// The simulated storage every scenario starts from.
const (
	smbServer = "srv"
	smbShare  = "data"
	smbUser   = "alice"
	smbPass   = "Crash-Pw-0c4e7a91"

	iqn      = "iqn.2024-01.io.wincsi.sim:crash"
	chapUser = "node1"
	chapPass = "crash-chap-01" // 13 bytes: CHAP secrets are 12 to 16
)

var portals = []host.Portal{{Address: "10.0.0.1", Port: 3260}, {Address: "10.0.0.2", Port: 3260}}

// volume is one CSI volume of a scenario.
type volume struct {
	id      string
	kind    string
	vctx    map[string]string
	secrets map[string]string
	// shareDir is the volume's directory on the share (smb only).
	shareDir string
}

var (
	diskVol = volume{id: "vol-disk", kind: kindDisk, vctx: map[string]string{"diskSerial": "vol-disk"}}
	smbVol1 = smbVolume("vol-smb-1", "v1")
	smbVol2 = smbVolume("vol-smb-2", "v2")
	iscVol1 = iscsiVolume("vol-iscsi-1", 1)
	iscVol2 = iscsiVolume("vol-iscsi-2", 2)
)

func smbVolume(id, dir string) volume {
	return volume{id: id, kind: kindSMB, shareDir: dir,
		vctx:    map[string]string{"source": "//" + smbServer + "/" + smbShare, "subDir": dir},
		secrets: map[string]string{"username": smbUser, "password": smbPass}}
}

func iscsiVolume(id string, lun int) volume {
	return volume{id: id, kind: kindISCSI,
		vctx: map[string]string{
			"targetPortal": portals[0].String(), "portals": portals[1].String(), "iqn": iqn,
			"lun": fmt.Sprint(lun), "sessionCHAPAuth": "true",
		},
		secrets: map[string]string{"node.session.auth.username": chapUser, "node.session.auth.password": chapPass}}
}

// scenario is one RPC of the matrix: the host is prepared, the volumes in
// staged are staged (with a file written through a publication of each),
// then the RPC (stage or unstage of vol) is crashed at each of its host
// steps in turn and retried.
type scenario struct {
	name    string
	staged  []volume
	vol     volume
	unstage bool
}

var scenarios = []scenario{
	{name: "disk/stage", vol: diskVol},
	{name: "disk/unstage", staged: []volume{diskVol}, vol: diskVol, unstage: true},
	{name: "smb/stage-first", vol: smbVol1},
	{name: "smb/stage-second", staged: []volume{smbVol1}, vol: smbVol2},
	{name: "smb/unstage-nonlast", staged: []volume{smbVol1, smbVol2}, vol: smbVol2, unstage: true},
	{name: "smb/unstage-last", staged: []volume{smbVol1}, vol: smbVol1, unstage: true},
	{name: "iscsi/stage-first", vol: iscVol1},
	{name: "iscsi/stage-second", staged: []volume{iscVol1}, vol: iscVol2},
	{name: "iscsi/unstage-nonlast", staged: []volume{iscVol1, iscVol2}, vol: iscVol2, unstage: true},
	{name: "iscsi/unstage-last", staged: []volume{iscVol1}, vol: iscVol1, unstage: true},
}

// final returns the volumes staged once the scenario's RPC succeeded.
func (sc scenario) final() []volume {
	var out []volume
	for _, v := range sc.staged {
		if !(sc.unstage && v.id == sc.vol.id) {
			out = append(out, v)
		}
	}
	if !sc.unstage {
		out = append(out, sc.vol)
	}
	return out
}

// setupHost creates the storage of every backend on the simulated host.
func setupHost(s *sim.Sim) error {
	if _, err := s.AttachDisk(sim.DiskSpec{Serial: diskVol.id, Adapter: 1, Target: 0, LUN: 1, Offline: true}); err != nil {
		return err
	}
	if err := s.AddShare(sim.ShareSpec{Server: smbServer, Share: smbShare, Users: map[string]string{smbUser: smbPass}}); err != nil {
		return err
	}
	for _, d := range []string{smbVol1.shareDir, smbVol2.shareDir} {
		if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", smbServer, smbShare, d), 0o750); err != nil {
			return err
		}
	}
	return s.AddTarget(sim.TargetSpec{IQN: iqn, Portals: portals,
		LUNs: []sim.LUNSpec{{LUN: 1}, {LUN: 2}},
		CHAP: &host.CHAP{User: chapUser, Secret: host.NewSecret(chapPass)}})
}

func stageReq(kubelet string, v volume) *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{VolumeId: v.id, StagingTargetPath: simnode.StagingPath(kubelet, v.id),
		VolumeCapability: simnode.MountCap, VolumeContext: v.vctx, Secrets: v.secrets}
}

func unstageReq(kubelet string, v volume) *csi.NodeUnstageVolumeRequest {
	return &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: simnode.StagingPath(kubelet, v.id)}
}

// stager is the part of the node service the matrix calls: the in-process
// *node.Server or a client of the binary.
type stager interface {
	NodeStageVolume(context.Context, *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error)
	NodeUnstageVolume(context.Context, *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error)
}

var _ stager = (*node.Server)(nil)

// rpc sends the scenario's RPC to a node service (in-process or a client).
func (sc scenario) rpc(ctx context.Context, ns stager, kubelet string) error {
	if sc.unstage {
		_, err := ns.NodeUnstageVolume(ctx, unstageReq(kubelet, sc.vol))
		return err
	}
	_, err := ns.NodeStageVolume(ctx, stageReq(kubelet, sc.vol))
	return err
}

// prepare builds the scenario's starting point under base in library mode:
// the host's storage, then each volume of sc.staged staged, published,
// written through the publication and unpublished, as a pod would. It
// returns where each volume's file lives on the simulated host.
func prepare(t testing.TB, base string, sc scenario) map[string]string {
	t.Helper()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := setupHost(n.Sim); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, v := range sc.staged {
		files[v.id] = stageAndWrite(t, n, v)
	}
	return files
}

// stageAndWrite stages v, writes a file through a publication of it and
// unpublishes; it returns the file's path on the simulated host (below the
// volume's or share's own directory, where it lives whatever is mounted).
func stageAndWrite(t testing.TB, n *simnode.Node, v volume) string {
	t.Helper()
	ctx := context.Background()
	staging := simnode.StagingPath(n.Kubelet, v.id)
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Server.NodeStageVolume(ctx, stageReq(n.Kubelet, v)); err != nil {
		t.Fatalf("stage %s: %v", v.id, err)
	}
	target := simnode.TargetPath(n.Kubelet, "pod-"+v.id, v.id)
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Server.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: v.id, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: simnode.MountCap}); err != nil {
		t.Fatalf("publish %s: %v", v.id, err)
	}
	if err := os.WriteFile(filepath.Join(target, fileName(v)), []byte(fileContent(v)), 0o640); err != nil {
		t.Fatalf("write through the publication of %s: %v", v.id, err)
	}
	if _, err := n.Server.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target}); err != nil {
		t.Fatalf("unpublish %s: %v", v.id, err)
	}
	if v.kind == kindSMB {
		return filepath.Join(n.SimDir, "smb", smbServer, smbShare, v.shareDir, fileName(v))
	}
	dir, err := os.Readlink(staging) // a mount point is a link to <sim>/volumes/<guid>
	if err != nil {
		t.Fatalf("read the mount point of %s: %v", v.id, err)
	}
	return filepath.Join(dir, fileName(v))
}

func fileName(v volume) string    { return "data-" + v.id + ".txt" }
func fileContent(v volume) string { return "written before the crash by " + v.id + "\n" }

// sequence runs the scenario's RPC once in library mode on a prepared base
// and returns its host calls in order.
func sequence(t testing.TB, sc scenario) []string {
	t.Helper()
	base := t.TempDir()
	prepare(t, base, sc)
	prepareRPC(t, base, sc)
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	mark := n.Sim.Mark()
	if err := sc.rpc(context.Background(), n.Server, n.Kubelet); err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	return n.Sim.OpsSince(mark)
}

// prepareRPC does what kubelet does before the RPC: it creates the staging
// directory before NodeStageVolume.
func prepareRPC(t testing.TB, base string, sc scenario) {
	t.Helper()
	if sc.unstage {
		return
	}
	kubelet, _, _ := simnode.Dirs(base)
	if err := os.MkdirAll(simnode.StagingPath(kubelet, sc.vol.id), 0o750); err != nil {
		t.Fatal(err)
	}
}
