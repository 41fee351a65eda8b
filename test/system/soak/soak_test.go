package soak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// Knobs of the long variant (make test-soak); the defaults are the short
// variant make test runs.
const (
	envVolumes  = "CSI_SOAK_VOLUMES"  // volumes, spread over the backends (default 200)
	envDuration = "CSI_SOAK_DURATION" // keep starting rounds until this elapsed (default: one round per volume)
	envSeed     = "CSI_SOAK_SEED"     // seed of every random choice (default 1)
	envChaos    = "CSI_SOAK_CHAOS"    // goroutines sending read-only RPCs at random volumes (default 8)
)

// Volumes per shared resource (an SMB share, an iSCSI target): half the
// volumes of each kind come in pairs, so that a share or target is often
// left by its last volume while the other is being staged again, or
// reached by two first stages at once; the others in groups of eight.
const (
	pairSize  = 2
	perShared = 8
)

// grouping returns the shared resource (share or target number) of the
// idx-th of n volumes of a kind, and the volume's place in it.
func grouping(idx, n int) (group, pos int) {
	half := n / 2 &^ 1
	if idx < half {
		return idx / pairSize, idx % pairSize
	}
	return half/pairSize + (idx-half)/perShared, (idx - half) % perShared
}

// groups returns how many shared resources the n volumes of a kind use.
func groups(n int) int {
	if n == 0 {
		return 0
	}
	g, _ := grouping(n-1, n)
	return g + 1
}

// ofKind returns how many of total volumes are of kind k (every third).
func ofKind(total int, k kind) int { return (total - int(k) + 2) / 3 }

type kind int

const (
	kindDisk kind = iota
	kindSMB
	kindISCSI
)

func (k kind) String() string { return [...]string{"disk", "smb", "iscsi"}[k] }

// vol is one soaked volume.
type vol struct {
	id      string
	kind    kind
	vctx    map[string]string
	secrets map[string]string
	staging string
	// share (SMB) or iqn (iSCSI) is the shared resource it uses.
	share, iqn string

	// staged is true from a stage's success to the start of the unstage:
	// while it is, the volume's mapping or session must be on the host
	// (checkShared). mu is held across that check.
	mu     sync.Mutex
	staged bool
}

func (v *vol) setStaged(b bool) {
	v.mu.Lock()
	v.staged = b
	v.mu.Unlock()
}

// config is one soak run.
type config struct {
	volumes  int
	duration time.Duration
	seed     uint64
	chaos    int
}

func configFromEnv(t *testing.T) config {
	c := config{volumes: 200, seed: 1, chaos: 8}
	if v := os.Getenv(envVolumes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 {
			t.Fatalf("%s=%q: want a number of volumes, at least 3", envVolumes, v)
		}
		c.volumes = n
	}
	if v := os.Getenv(envDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", envDuration, v, err)
		}
		c.duration = d
	}
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, v, err)
		}
		c.seed = n
	}
	if v := os.Getenv(envChaos); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a number of goroutines", envChaos, v)
		}
		c.chaos = n
	}
	return c
}

const smbPW = "Soak-Pw-3f6a9c2e"

// setup creates the storage: one disk per disk volume, shares of SMB
// volumes and targets of iSCSI volumes (grouping; targets share two array
// portals, half of them multipath over both).
func setup(t *testing.T, n *simnode.Node, c config) []*vol {
	t.Helper()
	s := n.Sim
	var vols []*vol
	portals := []host.Portal{{Address: "10.9.0.1", Port: 3260}, {Address: "10.9.0.2", Port: 3260}}
	for i := 0; i < c.volumes; i++ {
		k := kind(i % 3)
		id := fmt.Sprintf("soak-%s-%04d", k, i)
		v := &vol{id: id, kind: k, staging: simnode.StagingPath(n.Kubelet, id)}
		idx := i / 3
		switch k {
		case kindDisk:
			if _, err := s.AttachDisk(sim.DiskSpec{Serial: id, Offline: true}); err != nil {
				t.Fatal(err)
			}
			v.vctx = map[string]string{"diskSerial": id}
		case kindSMB:
			g, pos := grouping(idx, ofKind(c.volumes, kindSMB))
			share := fmt.Sprintf("share%03d", g)
			if pos == 0 {
				if err := s.AddShare(sim.ShareSpec{Server: "filer", Share: share, Users: map[string]string{"alice": smbPW}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", "filer", share, id), 0o750); err != nil {
				t.Fatal(err)
			}
			v.vctx = map[string]string{"source": `\\filer\` + share, "subDir": id}
			v.secrets = map[string]string{"username": "alice", "password": smbPW}
			v.share = `\\filer\` + share
		case kindISCSI:
			tgt, pos := grouping(idx, ofKind(c.volumes, kindISCSI))
			iqn := fmt.Sprintf("iqn.2024-01.io.wincsi.soak:t%03d", tgt)
			lun := pos + 1
			if pos == 0 {
				var luns []sim.LUNSpec
				for l := 1; l <= perShared; l++ {
					luns = append(luns, sim.LUNSpec{LUN: uint32(l)})
				}
				if err := s.AddTarget(sim.TargetSpec{IQN: iqn, Portals: portals, LUNs: luns}); err != nil {
					t.Fatal(err)
				}
			}
			v.vctx = map[string]string{"targetPortal": portals[0].String(), "iqn": iqn, "lun": strconv.Itoa(lun)}
			v.iqn = iqn
			if tgt%2 == 1 {
				v.vctx["portals"] = portals[1].String() // multipath over both
			}
		}
		vols = append(vols, v)
	}
	return vols
}

// stats counts what the soak did.
type stats struct {
	rpcs, aborted, dups, rounds, chaos, checks atomic.Int64
	byOp                                       sync.Map // op -> *atomic.Int64
}

func (s *stats) count(op string) {
	c, _ := s.byOp.LoadOrStore(op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

// TestSoak drives hundreds of volumes of every backend through random
// interleavings of stage, publish, stats, expand, health, unpublish and
// unstage from a goroutine per volume, doubles some calls (the duplicate
// must be Aborted or succeed idempotently), while chaos goroutines send
// read-only RPCs at random volumes and a checker looks for the mapping or
// session of staged volumes on the host. At the end every volume is
// unstaged, nothing is left on the host (no mount point, mapping, session,
// portal or persistent login; every data disk offline), every shared
// resource made was removed once, the journal is empty and no goroutine is
// left behind.
func TestSoak(t *testing.T) {
	c := configFromEnv(t)
	start := time.Now()
	tr := &transitions{n: map[string]int{}}
	n, err := simnode.Open(simnode.Options{Base: t.TempDir(), WrapHost: tr.wrap,
		Backoff: backend.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Attempts: 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() }) // closed below; a second Close is a no-op
	vols := setup(t, n, c)
	baseline := runtime.NumGoroutine()

	var st stats
	deadline := time.Now().Add(c.duration)
	stop := make(chan struct{})
	var chaosWG sync.WaitGroup
	for i := 0; i < c.chaos; i++ {
		chaosWG.Add(1)
		go func(i int) {
			defer chaosWG.Done()
			chaos(t, n, vols, rand.New(rand.NewPCG(c.seed, uint64(1_000_000+i))), stop, &st)
		}(i)
	}
	chaosWG.Add(1)
	go func() {
		defer chaosWG.Done()
		checkShared(t, n, vols, rand.New(rand.NewPCG(c.seed, 2_000_000)), stop, &st)
	}()
	var wg sync.WaitGroup
	for i, v := range vols {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(c.seed, uint64(i)))
			for first := true; first || time.Now().Before(deadline); first = false {
				if !lifecycle(t, n, v, r, &st) {
					return
				}
				st.rounds.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	chaosWG.Wait()
	work := time.Since(start)

	checkEmpty(t, n)
	tr.check(t)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	settleGoroutines(t, baseline)

	var ops []string
	st.byOp.Range(func(k, v any) bool {
		ops = append(ops, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(ops)
	t.Logf("soak: %d volumes (%d disk, %d smb on %d shares, %d iscsi on %d targets), seed %d: %d rounds, %d RPCs "+
		"(%d duplicated pairs, %d Aborted, %d chaos), %d checks of the shared resources of staged volumes, in %s; "+
		"per op: %s; shared resources made and removed: %s",
		len(vols), count(vols, kindDisk), count(vols, kindSMB), groups(count(vols, kindSMB)),
		count(vols, kindISCSI), groups(count(vols, kindISCSI)), c.seed,
		st.rounds.Load(), st.rpcs.Load(), st.dups.Load(), st.aborted.Load(), st.chaos.Load(), st.checks.Load(),
		work.Round(time.Millisecond), strings.Join(ops, " "), tr.String())
}

func count(vols []*vol, k kind) int {
	n := 0
	for _, v := range vols {
		if v.kind == k {
			n++
		}
	}
	return n
}

// lifecycle runs one round on v: stage, a random mix of publications and
// read or expand calls, unpublish everything, unstage. Some calls are sent
// twice at once. It reports false after a failure.
func lifecycle(t *testing.T, n *simnode.Node, v *vol, r *rand.Rand, st *stats) bool {
	ctx := context.Background()
	ns := n.Server
	call := func(op string, dup bool, rpc func() error) bool {
		return do(t, v, op, dup && r.IntN(4) == 0, rpc, st)
	}
	if err := os.MkdirAll(v.staging, 0o750); err != nil {
		t.Error(err)
		return false
	}
	stage := func() error {
		_, err := ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging,
			VolumeCapability: simnode.MountCap, VolumeContext: v.vctx, Secrets: v.secrets})
		return err
	}
	if !call("stage", true, stage) {
		return false
	}
	v.setStaged(true)
	var targets []string
	steps := 2 + r.IntN(6)
	for i := 0; i < steps; i++ {
		switch op := r.IntN(6); {
		case op <= 1 && len(targets) < 2:
			target := simnode.TargetPath(n.Kubelet, fmt.Sprintf("pod-%d-%d", r.IntN(1000), i), v.id)
			if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
				t.Error(err)
				return false
			}
			if !call("publish", true, func() error {
				_, err := ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging,
					TargetPath: target, VolumeCapability: simnode.MountCap})
				return err
			}) {
				return false
			}
			targets = append(targets, target)
			// Data goes through the publication and is seen at the stage.
			name := fmt.Sprintf("f-%d.txt", r.IntN(1_000_000))
			if err := os.WriteFile(filepath.Join(target, name), []byte(v.id), 0o640); err != nil {
				t.Errorf("%s: write through %s: %v", v.id, target, err)
				return false
			}
			if b, err := os.ReadFile(filepath.Join(v.staging, name)); err != nil || string(b) != v.id {
				t.Errorf("%s: read back at the staging path: %q, %v", v.id, b, err)
				return false
			}
		case op == 2:
			path := v.staging
			if len(targets) > 0 {
				path = targets[r.IntN(len(targets))]
			}
			if !call("stats", false, func() error {
				_, err := ns.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: path})
				return err
			}) {
				return false
			}
		case op == 3:
			if !call("expand", true, func() error {
				_, err := ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: v.id, VolumePath: v.staging})
				return err
			}) {
				return false
			}
		case op == 4:
			if !call("health", false, func() error {
				_, err := ns.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.id, StagingTargetPath: v.staging})
				return err
			}) {
				return false
			}
		default:
			if !call("stage-again", true, stage) {
				return false
			}
		}
	}
	for _, target := range targets {
		if !call("unpublish", true, func() error {
			_, err := ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target})
			return err
		}) {
			return false
		}
	}
	v.setStaged(false)
	return call("unstage", true, func() error {
		_, err := ns.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging})
		return err
	})
}

// retryBound bounds how long a call may keep meeting Aborted: a liveness
// bound (a lock that is never released fails the soak instead of hanging
// it), far above what any interleaving needs; nothing is timed.
const retryBound = 2 * time.Minute

// do runs rpc until it succeeds, as kubelet would (with a backoff),
// accepting Aborted (another call on the volume is in flight: a duplicate
// or a chaos call) and nothing else. With dup the call is sent twice at
// once; each copy must succeed or be Aborted.
func do(t *testing.T, v *vol, op string, dup bool, rpc func() error, st *stats) bool {
	giveUp := time.Now().Add(retryBound)
	wait := 100 * time.Microsecond
	for {
		var errs [2]error
		if dup {
			st.dups.Add(1)
			var wg sync.WaitGroup
			wg.Add(2)
			for i := range errs {
				go func() {
					defer wg.Done()
					errs[i] = rpc()
				}()
			}
			wg.Wait()
		} else {
			errs[0] = rpc()
		}
		ok := false
		for i, err := range errs {
			if i == 1 && !dup {
				break
			}
			st.rpcs.Add(1)
			st.count(op)
			switch status.Code(err) {
			case codes.OK:
				ok = true
			case codes.Aborted:
				st.aborted.Add(1)
			default:
				t.Errorf("%s %s: %v (want OK or Aborted)", op, v.id, err)
				return false
			}
		}
		if ok {
			return true
		}
		if time.Now().After(giveUp) {
			buf := make([]byte, 8<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%s %s: still Aborted after %s; goroutines:\n%s", op, v.id, retryBound, buf)
			return false
		}
		time.Sleep(wait)
		if wait < 20*time.Millisecond {
			wait *= 2
		}
	}
}

// chaos sends read-only and expand RPCs at random volumes until stop: they
// may find a volume in any state, so NotFound and Aborted are fine too;
// FailedPrecondition is not, and neither is any other error.
func chaos(t *testing.T, n *simnode.Node, vols []*vol, r *rand.Rand, stop <-chan struct{}, st *stats) {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		v := vols[r.IntN(len(vols))]
		var err error
		var op string
		switch r.IntN(3) {
		case 0:
			op = "chaos-stats"
			_, err = n.Server.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: v.staging})
		case 1:
			op = "chaos-health"
			_, err = n.Server.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.id, StagingTargetPath: v.staging})
		default:
			op = "chaos-expand"
			_, err = n.Server.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: v.id, VolumePath: v.staging})
		}
		st.chaos.Add(1)
		st.count(op)
		switch status.Code(err) {
		case codes.OK, codes.NotFound, codes.Aborted:
		default:
			t.Errorf("%s %s: %v (want OK, NotFound or Aborted)", op, v.id, err)
			return
		}
		runtime.Gosched()
	}
}

// checkEmpty asserts that every volume was unstaged without leaving
// anything on the host or in the journal.
func checkEmpty(t *testing.T, n *simnode.Node) {
	t.Helper()
	for _, left := range simnode.Leftovers(n.Sim.Snapshot()) {
		t.Error(left)
	}
	if es := n.Journal(t).List(context.Background()); len(es) != 0 {
		t.Errorf("%d journal entries left, e.g. %+v", len(es), es[0])
	}
}

// settleGoroutines waits until the goroutine count is back to baseline:
// goroutines that end a little after the RPCs (host-call trackers, the
// persister) get the time to go. It loops on the count, not on a timer
// assertion, and fails with every stack when the count never settles.
func settleGoroutines(t *testing.T, baseline int) {
	t.Helper()
	var now int
	for i := 0; i < 6000; i++ { // a minute at least: a liveness bound, not a timing
		runtime.GC()
		if now = runtime.NumGoroutine(); now <= baseline {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Errorf("%d goroutines left, %d before the soak:\n%s", now, baseline, buf)
}

// checkShared checks, until stop, that the SMB mapping or iSCSI session of
// a staged volume is on the host: the plugin never removes a shared
// resource while a volume uses it, whatever other volumes of the share or
// target are doing.
func checkShared(t *testing.T, n *simnode.Node, vols []*vol, r *rand.Rand, stop <-chan struct{}, st *stats) {
	ctx := context.Background()
	h := n.Sim.Host()
	var shared []*vol
	for _, v := range vols {
		if v.kind != kindDisk {
			shared = append(shared, v)
		}
	}
	if len(shared) == 0 {
		return
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		v := shared[r.IntN(len(shared))]
		v.mu.Lock()
		if v.staged {
			st.checks.Add(1)
			switch v.kind {
			case kindSMB:
				m, err := h.SMB.Mapping(ctx, v.share)
				if err != nil || m.Status != host.MappingOK {
					t.Errorf("%s is staged, but the mapping of %s is %+v, %v", v.id, v.share, m, err)
				}
			case kindISCSI:
				ss, err := h.ISCSI.Sessions(ctx, v.iqn)
				if err != nil || len(ss) == 0 {
					t.Errorf("%s is staged, but target %s has %d sessions, %v", v.id, v.iqn, len(ss), err)
				}
			}
		}
		v.mu.Unlock()
		if t.Failed() {
			return
		}
		time.Sleep(100 * time.Microsecond) // pacing: the checker must not take a core from the soak
	}
}

// transitions counts, by result, the host calls that make and remove the
// shared resources: every mapping, session and portal made must be removed
// exactly once (never twice, which would show as a removal of something
// already gone), and nothing left.
type transitions struct {
	mu sync.Mutex
	n  map[string]int // "smb.Map ok", "smb.Unmap notfound", ...
}

func (tr *transitions) count(op string, err error) {
	res := "ok"
	switch {
	case errors.Is(err, host.ErrNotFound):
		res = "notfound"
	case err != nil:
		res = "failed"
	}
	tr.mu.Lock()
	tr.n[op+" "+res]++
	tr.mu.Unlock()
}

func (tr *transitions) get(key string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.n[key]
}

func (tr *transitions) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(tr.n)) {
		out = append(out, fmt.Sprintf("%s=%d", k, tr.n[k]))
	}
	return strings.Join(out, " ")
}

// check asserts that each made resource was removed once.
func (tr *transitions) check(t *testing.T) {
	t.Helper()
	for _, p := range [][2]string{{"smb.Map", "smb.Unmap"}, {"iscsi.Connect", "iscsi.Disconnect"}, {"iscsi.AddPortal", "iscsi.RemovePortal"}} {
		made, removed := tr.get(p[0]+" ok"), tr.get(p[1]+" ok")
		if made != removed {
			t.Errorf("%d %s but %d %s", made, p[0], removed, p[1])
		}
		for _, res := range []string{"notfound", "failed"} {
			if k := tr.get(p[1] + " " + res); k != 0 {
				t.Errorf("%d %s calls %s: a resource removed twice, or a removal that failed", k, p[1], res)
			}
		}
	}
}

func (tr *transitions) wrap(h host.Host) host.Host {
	h.SMB = countingSMB{h.SMB, tr}
	h.ISCSI = countingISCSI{h.ISCSI, tr}
	return h
}

type countingSMB struct {
	host.SMB
	tr *transitions
}

func (c countingSMB) Map(ctx context.Context, remotePath string, cred host.Credential, requirePrivacy bool) error {
	err := c.SMB.Map(ctx, remotePath, cred, requirePrivacy)
	c.tr.count("smb.Map", err)
	return err
}

func (c countingSMB) Unmap(ctx context.Context, remotePath string) error {
	err := c.SMB.Unmap(ctx, remotePath)
	c.tr.count("smb.Unmap", err)
	return err
}

type countingISCSI struct {
	host.ISCSI
	tr *transitions
}

func (c countingISCSI) Connect(ctx context.Context, r host.ConnectRequest) (host.ISCSISession, error) {
	s, err := c.ISCSI.Connect(ctx, r)
	c.tr.count("iscsi.Connect", err)
	return s, err
}

func (c countingISCSI) Disconnect(ctx context.Context, s host.ISCSISession) error {
	err := c.ISCSI.Disconnect(ctx, s)
	c.tr.count("iscsi.Disconnect", err)
	return err
}

func (c countingISCSI) AddPortal(ctx context.Context, p host.Portal, initiatorPortal string, chap *host.CHAP) error {
	err := c.ISCSI.AddPortal(ctx, p, initiatorPortal, chap)
	c.tr.count("iscsi.AddPortal", err)
	return err
}

func (c countingISCSI) RemovePortal(ctx context.Context, p host.Portal) error {
	err := c.ISCSI.RemovePortal(ctx, p)
	c.tr.count("iscsi.RemovePortal", err)
	return err
}
