package hang

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// deadline is the deadline of the RPCs that wait for a lock a hung call
// holds: they fail at it whenever it comes, so its length decides nothing.
const deadline = 200 * time.Millisecond

// grace bounds how long after its deadline an RPC may take to return: it
// must not wait for the hung call. It is a liveness bound (the RPC honours
// its deadline instead of blocking for the hang), far above any real
// return time, not a performance assertion.
const grace = 30 * time.Second

// volume is one test volume.
type volume struct {
	id      string
	vctx    map[string]string
	secrets map[string]string
}

const (
	iqnA   = "iqn.2024-01.io.wincsi.sim:hang-a"
	iqnB   = "iqn.2024-01.io.wincsi.sim:hang-b"
	smbPW  = "Hang-Pw-5d1e0c7b"
	chapPW = "hang-chap-001"
)

func diskVol(id string) volume { return volume{id: id, vctx: map[string]string{"diskSerial": id}} }

func smbVol(id, share string) volume {
	return volume{id: id, vctx: map[string]string{"source": `\\srv\` + share, "subDir": id},
		secrets: map[string]string{"username": "alice", "password": smbPW}}
}

func iscsiVol(id, iqn, portal string, lun int) volume {
	return volume{id: id, vctx: map[string]string{"targetPortal": portal, "iqn": iqn, "lun": string(rune('0' + lun))}}
}

// env is a node service on a simulated host with disks, two shares and two
// targets.
type env struct {
	t    *testing.T
	n    *simnode.Node
	work *workCounter
}

func newEnv(t *testing.T) *env {
	t.Helper()
	work := &workCounter{}
	n, err := simnode.Open(simnode.Options{Base: t.TempDir(), WrapHost: work.wrap,
		Backoff: backend.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	s := n.Sim
	for _, id := range []string{"disk-a", "disk-b"} {
		if _, err := s.AttachDisk(sim.DiskSpec{Serial: id, Offline: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, share := range []string{"data", "other"} {
		if err := s.AddShare(sim.ShareSpec{Server: "srv", Share: share, Users: map[string]string{"alice": smbPW}}); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"smb-a", "smb-b", "smb-c"} {
			if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", "srv", share, d), 0o750); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqnA, Portals: []host.Portal{{Address: "10.0.0.1"}}, LUNs: []sim.LUNSpec{{LUN: 1}, {LUN: 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqnB, Portals: []host.Portal{{Address: "10.0.0.2"}}, LUNs: []sim.LUNSpec{{LUN: 1}}}); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, n: n, work: work}
}

func (e *env) staging(v volume) string { return simnode.StagingPath(e.n.Kubelet, v.id) }

func (e *env) stageCtx(ctx context.Context, v volume) error {
	return e.n.Stage(ctx, v.id, v.vctx, v.secrets)
}

func (e *env) unstageCtx(ctx context.Context, v volume) error {
	return e.n.Unstage(ctx, v.id)
}

func (e *env) stage(v volume) error   { return e.stageCtx(context.Background(), v) }
func (e *env) unstage(v volume) error { return e.unstageCtx(context.Background(), v) }

// withDeadline runs rpc with the short deadline and returns its error. It
// fails the test when the RPC does not return within the deadline plus
// grace, that is when it waits for the hung call.
func (e *env) withDeadline(what string, rpc func(context.Context) error) error {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rpc(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(deadline + grace):
		e.t.Fatalf("%s did not return at its deadline: it waits for the hung host call", what)
		return nil
	}
}

// whenHung runs rpc with a deadline that passes once op's hung call is
// registered, and returns its error: the RPC meets its deadline in the hung
// call, however long the steps before it take on a loaded machine (a
// deadline set by the clock could pass before the hang is reached). It
// fails the test when the RPC does not return within grace of its
// deadline, that is when it waits for the hung call.
func (e *env) whenHung(op, what string, rpc func(context.Context) error) error {
	e.t.Helper()
	ctx := newExpiringContext()
	done := make(chan error, 1)
	go func() { done <- rpc(ctx) }()
	for e.hung(op) == 0 {
		select {
		case err := <-done:
			return err // it never reached the hang; the caller says why that is wrong
		case <-time.After(time.Millisecond):
		}
	}
	ctx.expire()
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		e.t.Fatalf("%s did not return at its deadline: it waits for the hung host call", what)
		return nil
	}
}

// expiringContext is a context whose deadline passes when expire is
// called. Until then Deadline reports a time an hour away.
type expiringContext struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
}

func newExpiringContext() *expiringContext {
	return &expiringContext{Context: context.Background(), deadline: time.Now().Add(time.Hour), done: make(chan struct{})}
}

func (c *expiringContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *expiringContext) Done() <-chan struct{}       { return c.done }

func (c *expiringContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *expiringContext) expire() { c.once.Do(func() { close(c.done) }) }

// untilNotAborted retries rpc, as kubelet would, while it answers Aborted
// because the volume's lock is still held; it returns the first other
// result. The loop settles on an event (the lock's release), it does not
// time anything: go test's -timeout bounds it.
func untilNotAborted(t *testing.T, rpc func() error) error {
	t.Helper()
	for {
		err := rpc()
		if status.Code(err) != codes.Aborted {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitHung waits until the op's hung call is registered (it is, before
// the RPC returns; this only guards the count).
func (e *env) hung(op string) int { return e.n.Sim.Faults().Hung(op) }

// hangCase is one backend's hung host call.
type hangCase struct {
	name string
	op   string // the op that hangs (its first call from now on)
	// hungVol meets the hang; sameResource shares its disk, share or
	// target; otherVol shares nothing with it.
	hungVol, sameResource, otherVol volume
	// sameWaits is the policy for sameResource while the call hangs:
	// true when it waits for the shared resource's lock (and so fails at
	// its own deadline), false when it proceeds.
	sameWaits bool
	// unstage hangs the unstage of hungVol (staged first) instead of its
	// stage.
	unstage bool
	// redo: the retry may do the hung call's work once itself, because
	// kubelet's re-creating the staging directory before the retry can
	// make the released call fail (a link needs the path free).
	redo bool
	// whileHung, when set, runs while the call hangs, after the volume
	// sharing the resource was staged.
	whileHung func(t *testing.T, e *env, hc hangCase)
	// afterRetry, when set, checks the state once the retry succeeded.
	afterRetry func(t *testing.T, e *env)
}

// unstageSameKeepsTheResource unstages the volume sharing the hung
// volume's share or target while the hung call runs: it is the last other
// volume, but the hung volume's stage or unstage still works on the
// resource, so the mapping or session must stay.
func unstageSameKeepsTheResource(t *testing.T, e *env, hc hangCase) {
	t.Helper()
	s := e.n.Sim
	unmaps, logouts := s.Count(sim.OpSMBUnmap), s.Count(sim.OpISCSIDisconnect)
	mustOK(t, "unstage of the last other volume of the resource during the hang", e.unstage(hc.sameResource))
	if n := s.Count(sim.OpSMBUnmap) - unmaps + s.Count(sim.OpISCSIDisconnect) - logouts; n != 0 {
		t.Fatalf("%d Unmap or Disconnect calls while a call of another volume of the resource hangs, want 0", n)
	}
	st := s.Snapshot()
	if len(st.Mappings) == 0 && len(st.Sessions) == 0 {
		t.Fatal("the shared resource is gone while a call of a volume using it hangs")
	}
}

var hangCases = []hangCase{
	{name: "disk/hung-format", op: sim.OpVolumesFormat,
		hungVol: diskVol("disk-a"), otherVol: diskVol("disk-b")},
	{name: "disk/hung-offline-at-unstage", op: sim.OpDisksSetOnline, unstage: true,
		hungVol: diskVol("disk-a"), otherVol: diskVol("disk-b")},
	{name: "smb/hung-map", op: sim.OpSMBMap,
		hungVol: smbVol("smb-a", "data"), sameResource: smbVol("smb-b", "data"), otherVol: smbVol("smb-c", "other"), sameWaits: true,
		afterRetry: func(t *testing.T, e *env) {
			// The hung Map made the mapping: the note of its user must
			// still be there, or a later volume naming another user
			// would not be noticed.
			if u, ok, err := e.n.Journal(t).Note(context.Background(), smb.MappingNotePrefix+`\\srv\data`); !ok || u != "alice" {
				t.Errorf("note of the mapping's user = %q, %v, %v; want alice", u, ok, err)
			}
		}},
	{name: "smb/hung-unmap", op: sim.OpSMBUnmap, unstage: true,
		hungVol: smbVol("smb-a", "data"), sameResource: smbVol("smb-b", "data"), otherVol: smbVol("smb-c", "other"), sameWaits: true},
	{name: "iscsi/hung-connect", op: sim.OpISCSIConnect,
		hungVol: iscsiVol("isc-a", iqnA, "10.0.0.1", 1), sameResource: iscsiVol("isc-b", iqnA, "10.0.0.1", 2),
		otherVol: iscsiVol("isc-c", iqnB, "10.0.0.2", 1), sameWaits: true},
	{name: "iscsi/hung-disconnect", op: sim.OpISCSIDisconnect, unstage: true,
		hungVol: iscsiVol("isc-a", iqnA, "10.0.0.1", 1), sameResource: iscsiVol("isc-b", iqnA, "10.0.0.1", 2),
		otherVol: iscsiVol("isc-c", iqnB, "10.0.0.2", 1), sameWaits: true},

	// A hung call of one volume's own work (not a transition of the
	// shared resource) holds only that volume: another volume of the same
	// share or target stages beside it, and unstaging that other volume
	// (the last besides the hung one) keeps the mapping or session.
	{name: "smb/hung-link", op: sim.OpFilesSymlink, redo: true,
		hungVol: smbVol("smb-a", "data"), sameResource: smbVol("smb-b", "data"), otherVol: smbVol("smb-c", "other"),
		whileHung: unstageSameKeepsTheResource},
	{name: "iscsi/hung-format", op: sim.OpVolumesFormat,
		hungVol: iscsiVol("isc-a", iqnA, "10.0.0.1", 1), sameResource: iscsiVol("isc-b", iqnA, "10.0.0.1", 2),
		otherVol: iscsiVol("isc-c", iqnB, "10.0.0.2", 1), whileHung: unstageSameKeepsTheResource},
	{name: "iscsi/hung-unmount-at-unstage", op: sim.OpVolumesUnmount, unstage: true,
		hungVol: iscsiVol("isc-a", iqnA, "10.0.0.1", 1), sameResource: iscsiVol("isc-b", iqnA, "10.0.0.1", 2),
		otherVol: iscsiVol("isc-c", iqnB, "10.0.0.2", 1), whileHung: unstageSameKeepsTheResource},
}

// TestHungHostCall: a host call that never returns makes the RPC fail with
// DeadlineExceeded at its deadline; a retry of the same volume during the
// hang gets Aborted; volumes sharing nothing with it keep working; a volume
// sharing its SMB share or iSCSI target waits for a hung transition of that
// resource and fails at its own deadline without touching the resource,
// or proceeds beside a hung call of the other volume's own work (whose
// volume keeps the resource from being removed); once the hang clears, the
// retry succeeds without doing the hung work twice.
func TestHungHostCall(t *testing.T) {
	for _, hc := range hangCases {
		t.Run(hc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.n.Sim
			rpc := e.stageCtx
			if hc.unstage {
				mustOK(t, "stage before the hung unstage", e.stage(hc.hungVol))
				rpc = e.unstageCtx
			}
			mustOK(t, "hang rule", s.Faults().Add(sim.Rule{Op: hc.op, Nth: 1, Hang: true}))
			err := e.whenHung(hc.op, "the RPC meeting the hang", func(ctx context.Context) error { return rpc(ctx, hc.hungVol) })
			wantCode(t, "RPC meeting the hang", err, codes.DeadlineExceeded)
			if n := e.hung(hc.op); n != 1 {
				t.Fatalf("%d hung %s calls, want 1", n, hc.op)
			}

			// The same volume is locked while its host call runs.
			wantCode(t, "retry during the hang", rpc(context.Background(), hc.hungVol), codes.Aborted)
			wantCode(t, "another RPC on the volume during the hang",
				e.withDeadline("stats", func(ctx context.Context) error {
					_, err := e.n.Server.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: hc.hungVol.id, VolumePath: e.staging(hc.hungVol)})
					return err
				}), codes.Aborted)

			// A volume sharing nothing proceeds.
			mustOK(t, "stage of an unrelated volume", e.stage(hc.otherVol))
			mustOK(t, "unstage of an unrelated volume", e.unstage(hc.otherVol))

			// A volume sharing the share or target.
			if hc.sameResource.id != "" {
				mark := s.Mark()
				if hc.sameWaits {
					err := e.withDeadline("stage sharing the resource", func(ctx context.Context) error { return e.stageCtx(ctx, hc.sameResource) })
					wantCode(t, "stage sharing the hung resource", err, codes.DeadlineExceeded)
					for _, op := range s.OpsSince(mark) {
						if op != sim.OpFilesStat && op != sim.OpFilesIsEmptyDir && op != sim.OpFilesMakeDir {
							t.Errorf("stage waiting for the shared resource called %s: only its staging path may be inspected", op)
						}
					}
				} else {
					mustOK(t, "stage sharing the resource", e.stage(hc.sameResource))
				}
			}
			if hc.whileHung != nil {
				hc.whileHung(t, e, hc)
			}

			// The hang clears: the held locks go, the retry succeeds and
			// does not repeat the hung work.
			before, doneBefore := s.Count(hc.op), e.work.done(hc.op)
			if n := s.Faults().Release(hc.op); n != 1 {
				t.Fatalf("released %d hung calls, want 1", n)
			}
			mustOK(t, "retry after the hang", untilNotAborted(t, func() error { return rpc(context.Background(), hc.hungVol) }))
			// A stage's retry must not call the hung op again; an unstage's
			// retry may call it once to verify, but must find nothing left
			// to do (the call fails with NotFound), since the hung call
			// did the work once it was released.
			extra, did := s.Count(hc.op)-before, e.work.done(hc.op)-doneBefore
			switch {
			case hc.redo && did <= 1 && extra <= 1:
			case did != 0:
				t.Errorf("the retry did the work of %s %d more times: the hung call's work was repeated", hc.op, did)
			case !hc.unstage && extra != 0:
				t.Errorf("the retry called %s %d more times: the hung call's work was repeated", hc.op, extra)
			case extra > 1:
				t.Errorf("the retry called %s %d more times to verify, want at most 1", hc.op, extra)
			}
			if hc.afterRetry != nil {
				hc.afterRetry(t, e)
			}
			if hc.sameResource.id != "" {
				mustOK(t, "stage sharing the resource after the hang", untilNotAborted(t, func() error { return e.stage(hc.sameResource) }))
				mustOK(t, "unstage sharing the resource", e.unstage(hc.sameResource))
			}
			if !hc.unstage {
				mustOK(t, "unstage", e.unstage(hc.hungVol))
			}
			for _, left := range simnode.Leftovers(s.Snapshot()) {
				t.Errorf("host state left: %s", left)
			}
		})
	}
}

// workCounter counts the calls of the ops the hang cases hang that
// returned success, as seen by the backends: a call that did its work. A
// hung call returns an error to its caller at the deadline and is not
// counted even when it completes later.
type workCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *workCounter) count(op string, err error) {
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[op]++
}

func (w *workCounter) done(op string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[op]
}

func (w *workCounter) wrap(h host.Host) host.Host {
	h.Disks = countingDisks{h.Disks, w}
	h.Volumes = countingVolumes{h.Volumes, w}
	h.Files = countingFiles{h.Files, w}
	h.SMB = countingSMB{h.SMB, w}
	h.ISCSI = countingISCSI{h.ISCSI, w}
	return h
}

type countingDisks struct {
	host.Disks
	w *workCounter
}

func (c countingDisks) SetOnline(ctx context.Context, d host.Disk, online bool) error {
	err := c.Disks.SetOnline(ctx, d, online)
	c.w.count(sim.OpDisksSetOnline, err)
	return err
}

type countingVolumes struct {
	host.Volumes
	w *workCounter
}

func (c countingVolumes) Unmount(ctx context.Context, dir string) error {
	err := c.Volumes.Unmount(ctx, dir)
	c.w.count(sim.OpVolumesUnmount, err)
	return err
}

type countingFiles struct {
	host.Files
	w *workCounter
}

func (c countingFiles) Symlink(ctx context.Context, link, target string) error {
	err := c.Files.Symlink(ctx, link, target)
	c.w.count(sim.OpFilesSymlink, err)
	return err
}

func (c countingVolumes) Format(ctx context.Context, v host.Volume, o host.FormatOptions) (host.Volume, error) {
	out, err := c.Volumes.Format(ctx, v, o)
	c.w.count(sim.OpVolumesFormat, err)
	return out, err
}

type countingSMB struct {
	host.SMB
	w *workCounter
}

func (c countingSMB) Map(ctx context.Context, remotePath string, cred host.Credential, requirePrivacy bool) error {
	err := c.SMB.Map(ctx, remotePath, cred, requirePrivacy)
	c.w.count(sim.OpSMBMap, err)
	return err
}

func (c countingSMB) Unmap(ctx context.Context, remotePath string) error {
	err := c.SMB.Unmap(ctx, remotePath)
	c.w.count(sim.OpSMBUnmap, err)
	return err
}

type countingISCSI struct {
	host.ISCSI
	w *workCounter
}

func (c countingISCSI) Connect(ctx context.Context, r host.ConnectRequest) (host.ISCSISession, error) {
	s, err := c.ISCSI.Connect(ctx, r)
	c.w.count(sim.OpISCSIConnect, err)
	return s, err
}

func (c countingISCSI) Disconnect(ctx context.Context, s host.ISCSISession) error {
	err := c.ISCSI.Disconnect(ctx, s)
	c.w.count(sim.OpISCSIDisconnect, err)
	return err
}
