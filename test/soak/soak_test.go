package soak

import (
	"context"
	"fmt"
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
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
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

// Per shared resource: volumes per SMB share and LUNs per iSCSI target.
const (
	perShare  = 8
	perTarget = 8
)

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

// setup creates the storage: one disk per disk volume, a share per
// perShare SMB volumes, a target per perTarget iSCSI volumes (targets
// share two array portals, half of them multipath over both).
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
			share := fmt.Sprintf("share%03d", idx/perShare)
			if idx%perShare == 0 {
				if err := s.AddShare(sim.ShareSpec{Server: "filer", Share: share, Users: map[string]string{"alice": smbPW}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", "filer", share, id), 0o750); err != nil {
				t.Fatal(err)
			}
			v.vctx = map[string]string{"source": `\\filer\` + share, "subDir": id}
			v.secrets = map[string]string{"username": "alice", "password": smbPW}
		case kindISCSI:
			tgt := idx / perTarget
			iqn := fmt.Sprintf("iqn.2024-01.io.wincsi.soak:t%03d", tgt)
			lun := idx%perTarget + 1
			if idx%perTarget == 0 {
				var luns []sim.LUNSpec
				for l := 1; l <= perTarget; l++ {
					luns = append(luns, sim.LUNSpec{LUN: uint32(l)})
				}
				if err := s.AddTarget(sim.TargetSpec{IQN: iqn, Portals: portals, LUNs: luns}); err != nil {
					t.Fatal(err)
				}
			}
			v.vctx = map[string]string{"targetPortal": portals[0].String(), "iqn": iqn, "lun": strconv.Itoa(lun)}
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
	rpcs, aborted, dups, rounds, chaos atomic.Int64
	byOp                               sync.Map // op -> *atomic.Int64
}

func (s *stats) count(op string) {
	c, _ := s.byOp.LoadOrStore(op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

// TestSoak drives hundreds of volumes of every backend through random
// interleavings of stage, publish, stats, expand, health, unpublish and
// unstage from a goroutine per volume, doubles some calls (the duplicate
// must be Aborted or succeed idempotently), while chaos goroutines send
// read-only RPCs at random volumes. At the end every volume is unstaged,
// nothing is left on the host (no mount point, mapping, session, portal or
// persistent login; every data disk offline), the journal is empty and no
// goroutine is left behind.
func TestSoak(t *testing.T) {
	c := configFromEnv(t)
	start := time.Now()
	n, err := simnode.Open(simnode.Options{Base: t.TempDir(),
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
		"(%d duplicated pairs, %d Aborted, %d chaos) in %s; per op: %s",
		len(vols), count(vols, kindDisk), count(vols, kindSMB), (count(vols, kindSMB)+perShare-1)/perShare,
		count(vols, kindISCSI), (count(vols, kindISCSI)+perTarget-1)/perTarget, c.seed,
		st.rounds.Load(), st.rpcs.Load(), st.dups.Load(), st.aborted.Load(), st.chaos.Load(), work.Round(time.Millisecond),
		strings.Join(ops, " "))
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
	if es := n.Journal.List(context.Background()); len(es) != 0 {
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
