package crash

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/sim"
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

// scenario is one case of the matrix: the host is prepared, the volumes in
// staged are staged (with a file written through a publication of each),
// then the scenario's calls are crashed at each of their host steps in turn
// and retried. A scenario of one call is one RPC; a scenario of two calls
// runs them at the same time, the second starting once the first has
// reached its after step (new interleavings of issue 13).
type scenario struct {
	name   string
	staged []volume
	calls  []call
}

// call is one RPC of a scenario: the stage or unstage of a volume.
type call struct {
	vol     volume
	unstage bool
	// after, for the second call of a concurrent scenario, is the host
	// call (an op of pkg/sim) whose first completion starts it, so
	// that it meets the first call there; the second call also starts
	// when the first returns (it crashed before that step).
	after string
}

func stage(v volume) call   { return call{vol: v} }
func unstage(v volume) call { return call{vol: v, unstage: true} }

// then returns c to start once the scenario's first call completed op.
func (c call) then(op string) call { c.after = op; return c }

var scenarios = []scenario{
	{name: "disk/stage", calls: []call{stage(diskVol)}},
	{name: "disk/unstage", staged: []volume{diskVol}, calls: []call{unstage(diskVol)}},
	{name: "smb/stage-first", calls: []call{stage(smbVol1)}},
	{name: "smb/stage-second", staged: []volume{smbVol1}, calls: []call{stage(smbVol2)}},
	{name: "smb/unstage-nonlast", staged: []volume{smbVol1, smbVol2}, calls: []call{unstage(smbVol2)}},
	{name: "smb/unstage-last", staged: []volume{smbVol1}, calls: []call{unstage(smbVol1)}},
	{name: "iscsi/stage-first", calls: []call{stage(iscVol1)}},
	{name: "iscsi/stage-second", staged: []volume{iscVol1}, calls: []call{stage(iscVol2)}},
	{name: "iscsi/unstage-nonlast", staged: []volume{iscVol1, iscVol2}, calls: []call{unstage(iscVol2)}},
	{name: "iscsi/unstage-last", staged: []volume{iscVol1}, calls: []call{unstage(iscVol1)}},

	// Two first stages of one share or target racing: the second comes
	// while the first makes the mapping or logs in (its first look at the
	// share or target), and waits for it; a crash right after the Map or
	// Connect is a crash between "ready" and the per-volume work of both.
	{name: "smb/two-first-stages", calls: []call{stage(smbVol1), stage(smbVol2).then(sim.OpSMBMapping)}},
	{name: "iscsi/two-first-stages", calls: []call{stage(iscVol1), stage(iscVol2).then(sim.OpISCSISessions)}},
	// The stage of one volume while the last other volume of the share or
	// target unstages, in both orders: the unstage has done its
	// per-volume work and is removing the mapping or logging out when the
	// stage comes (its MakeDir done, its logout's session listing done),
	// or the stage has acquired the share or target when the unstage
	// comes.
	{name: "smb/stage-while-last-unstages", staged: []volume{smbVol1},
		calls: []call{unstage(smbVol1), stage(smbVol2).then(sim.OpFilesMakeDir)}},
	{name: "smb/last-unstages-while-stage", staged: []volume{smbVol1},
		calls: []call{stage(smbVol2), unstage(smbVol1).then(sim.OpSMBMapping)}},
	{name: "iscsi/stage-while-last-unstages", staged: []volume{iscVol1},
		calls: []call{unstage(iscVol1), stage(iscVol2).then(sim.OpISCSISessions)}},
	{name: "iscsi/last-unstages-while-stage", staged: []volume{iscVol1},
		calls: []call{stage(iscVol2), unstage(iscVol1).then(sim.OpISCSISessions)}},
}

// concurrent reports whether the scenario runs two calls at once.
func (sc scenario) concurrent() bool { return len(sc.calls) > 1 }

// final returns the volumes staged once the scenario's calls succeeded.
func (sc scenario) final() []volume {
	gone := map[string]bool{}
	var out []volume
	for _, c := range sc.calls {
		gone[c.vol.id] = true
		if !c.unstage {
			out = append(out, c.vol)
		}
	}
	for _, v := range sc.staged {
		if !gone[v.id] {
			out = append(out, v)
		}
	}
	return out
}

// unstaged returns the volumes the scenario unstages.
func (sc scenario) unstaged() []volume {
	var out []volume
	for _, c := range sc.calls {
		if c.unstage {
			out = append(out, c.vol)
		}
	}
	return out
}

// touched returns every volume of the scenario: staged before or by it.
func (sc scenario) touched() []volume {
	out := append([]volume(nil), sc.staged...)
	for _, c := range sc.calls {
		if !c.unstage && !slices.ContainsFunc(out, func(v volume) bool { return v.id == c.vol.id }) {
			out = append(out, c.vol)
		}
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
	return simnode.StageRequest(kubelet, v.id, v.vctx, v.secrets)
}

func unstageReq(kubelet string, v volume) *csi.NodeUnstageVolumeRequest {
	return simnode.UnstageRequest(kubelet, v.id)
}

// stager is the part of the node service the matrix calls: the in-process
// *node.Server or a client of the binary.
type stager interface {
	NodeStageVolume(context.Context, *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error)
	NodeUnstageVolume(context.Context, *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error)
}

var _ stager = (*node.Server)(nil)

// do sends one call to a node service.
func (c call) do(ctx context.Context, ns stager, kubelet string) error {
	if c.unstage {
		_, err := ns.NodeUnstageVolume(ctx, unstageReq(kubelet, c.vol))
		return err
	}
	_, err := ns.NodeStageVolume(ctx, stageReq(kubelet, c.vol))
	return err
}

// rpc sends the scenario's calls to a node service (in-process or a
// client). The second call of a concurrent scenario starts once reached
// reports that the first completed the second's after step, or once the
// first returned; a nil reached starts both at once (as kubelet's
// independent retries do).
func (sc scenario) rpc(ctx context.Context, ns stager, kubelet string, reached func(op string) bool) error {
	if !sc.concurrent() {
		return sc.calls[0].do(ctx, ns, kubelet)
	}
	first := make(chan error, 1)
	go func() { first <- sc.calls[0].do(ctx, ns, kubelet) }()
	var err1 error
	done := false
	for reached != nil && !done && !reached(sc.calls[1].after) {
		select {
		case err1 = <-first:
			done = true
		case <-time.After(200 * time.Microsecond): // polling the host-call count, not timing anything
		}
	}
	err2 := sc.calls[1].do(ctx, ns, kubelet)
	if !done {
		err1 = <-first
	}
	return errors.Join(err1, err2)
}

// prepare builds the scenario's starting point under base in library mode
// (once per scenario, into its template):
// the host's storage, then each volume of sc.staged staged, published,
// written through the publication and unpublished, as a pod would. It
// returns where each volume's file lives on the simulated host.
func prepare(t testing.TB, base string, sc scenario) map[string]string {
	t.Helper()
	n, done := simnode.MustOpen(t, simnode.Options{Base: base})
	defer done()
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

// learnRuns is how many times a concurrent scenario runs in library mode
// to learn its host calls: the interleaving may differ between runs, and
// the crash points are the union of what the runs called.
const learnRuns = 3

// sequence runs the scenario once in library mode on a copy of its
// prepared template and returns its host calls in order. For a concurrent
// scenario it runs it learnRuns times and returns the longest run's calls
// followed by the calls another run made more often.
func sequence(t testing.TB, sc scenario, tmpl template) []string {
	t.Helper()
	runs := 1
	if sc.concurrent() {
		runs = learnRuns
	}
	var seq []string
	counts := map[string]int{}
	for range runs {
		ops := sequenceOnce(t, sc, tmpl)
		if len(ops) > len(seq) {
			seq = ops
		}
		c := map[string]int{}
		for _, op := range ops {
			c[op]++
			counts[op] = max(counts[op], c[op])
		}
	}
	have := map[string]int{}
	for _, op := range seq {
		have[op]++
	}
	for _, op := range slices.Sorted(maps.Keys(counts)) {
		for ; have[op] < counts[op]; have[op]++ {
			seq = append(seq, op)
		}
	}
	return seq
}

func sequenceOnce(t testing.TB, sc scenario, tmpl template) []string {
	t.Helper()
	base := t.TempDir()
	tmpl.copyTo(t, base)
	prepareRPC(t, base, sc)
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	mark := n.Sim.Mark()
	reached := func(op string) bool { return slices.Contains(n.Sim.OpsSince(mark), op) }
	if err := sc.rpc(context.Background(), n.Server, n.Kubelet, reached); err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	return n.Sim.OpsSince(mark)
}

// prepareRPC does what kubelet does before the RPCs: it creates the
// staging directory before NodeStageVolume.
func prepareRPC(t testing.TB, base string, sc scenario) {
	t.Helper()
	kubelet, _, _ := simnode.Dirs(base)
	for _, c := range sc.calls {
		if c.unstage {
			continue
		}
		if err := os.MkdirAll(simnode.StagingPath(kubelet, c.vol.id), 0o750); err != nil {
			t.Fatal(err)
		}
	}
}
