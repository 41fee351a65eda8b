package crash

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain runs casesPerCPU crash cases at a time per CPU, unless
// -parallel says how many, and removes the plugin build when the tests
// are done.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		n := min(casesPerCPU*runtime.GOMAXPROCS(0), maxParallelCases)
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err) // an int is a valid -test.parallel
		}
	}
	os.Exit(testbin.Main(m))
}

// A crash case mostly waits: for the plugin processes it starts to serve,
// crash and stop, and for the files they and the case write to reach the
// disk. Run go test's default of one case per CPU, the matrix leaves the
// CPUs mostly idle; casesPerCPU keeps them busy, and maxParallelCases
// bounds the processes and files of a run on a large machine.
const (
	casesPerCPU      = 3
	maxParallelCases = 16
)

// matrixEnv set to "subset" runs only the crashes before every step and
// after the steps with an effect (readOnlyOps), for quick local runs; set
// to "full" it crashes before and after every step of every scenario. By
// default the single-RPC scenarios run in full and the concurrent ones as
// the subset (a crash after a read-only step is one before the next step
// of the same call; in a concurrent scenario it differs only in where the
// other call is, which the interleaving decides anyway): make test-crash
// runs everything in full. Each case takes well under a second: the plugin
// starts in milliseconds without the race detector.
const matrixEnv = "CSI_CRASH_MATRIX"

// Bounds of one case. They bound waiting, they assert nothing about speed.
const (
	rpcTimeout   = 30 * time.Second
	exitTimeout  = 30 * time.Second
	maxRetries   = 10
	retryBackoff = 100 * time.Millisecond
)

// rpcArgs are the flags of the binary in the RPC scenarios: the orphan
// sweep is off, so that the host calls a crash point counts are the RPC's
// only (TestSweepCrashMatrix crashes the sweep's own round).
var rpcArgs = []string{"--v=2", "--orphan-sweep=off"}

// readOnlyOps are host calls without effect (sim.ReadsOnly): a crash
// after one is the same as a crash before the next step, so the subset
// leaves out the crash after them (the full matrix keeps every case).
func readOnlyOps(op string) bool { return sim.ReadsOnly(op) }

// crashCase is one crash point: the nth call of op, which is step k of the
// RPC's host-call sequence.
type crashCase struct {
	step  int // 1-based
	op    string
	nth   int
	after bool
}

func (c crashCase) String() string {
	when := "before"
	if c.after {
		when = "after"
	}
	return fmt.Sprintf("%02d-%s-%s-%d", c.step, when, c.op, c.nth)
}

func (c crashCase) rule() sim.Rule {
	return sim.Rule{Op: c.op, Nth: c.nth, CrashBefore: !c.after, CrashAfter: c.after}
}

// cases lists the crash points of a sequence: every step before and
// after, or for the subset every step before and the mutating steps after.
func cases(seq []string, full bool) []crashCase {
	var out []crashCase
	seen := map[string]int{}
	for i, op := range seq {
		seen[op]++
		out = append(out, crashCase{step: i + 1, op: op, nth: seen[op]})
		if full || !readOnlyOps(op) {
			out = append(out, crashCase{step: i + 1, op: op, nth: seen[op], after: true})
		}
	}
	return out
}

// TestCrashMatrix crashes the plugin binary at every host step of
// NodeStageVolume and NodeUnstageVolume of every backend, restarts it and
// retries the RPC as kubelet would; each case must converge (see check).
func TestCrashMatrix(t *testing.T) {
	mode := os.Getenv(matrixEnv)
	if mode != "subset" && mode != "full" {
		mode = "default"
	}
	bin := testbin.BuildNoRace(t) // crash safety, not races: the soak runs under -race
	var total, steps atomic.Int64
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("crash matrix (%s): %d scenarios, %d host steps, %d crash cases, %d converged on the first retry, "+
			"%d crash points of concurrent scenarios not reached in their run's interleaving, %s",
			mode, len(scenarios), steps.Load(), total.Load(), firstRetry.Load(), notReached.Load(), time.Since(start).Round(time.Second))
	})
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			tmpl := newTemplate(t, func(base string) map[string]string { return prepare(t, base, sc) })
			seq := sequence(t, sc, tmpl)
			cs := cases(seq, mode == "full" || (mode == "default" && !sc.concurrent()))
			total.Add(int64(len(cs)))
			steps.Add(int64(len(seq)))
			t.Logf("host calls of %s: %s", sc.name, strings.Join(seq, " "))
			if !sc.concurrent() {
				// A concurrent scenario's calls depend on the interleaving.
				t.Run("binary-matches-library", func(t *testing.T) {
					t.Parallel()
					checkBinaryCalls(t, bin, sc, seq, tmpl)
				})
			}
			for _, c := range cs {
				t.Run(c.String(), func(t *testing.T) {
					t.Parallel()
					runCase(t, bin, sc, c, tmpl)
				})
			}
		})
	}
}

// firstRetry counts the cases whose first retry succeeded; notReached the
// cases of concurrent scenarios whose crash point the interleaving of
// their run did not reach (the run is still checked).
var firstRetry, notReached atomic.Int64

// runCase runs one crash case: prepare, crash, restart, retry, check.
func runCase(t *testing.T, bin string, sc scenario, c crashCase, tmpl template) {
	base := testbin.ShortDir(t)
	files := tmpl.copyTo(t, base)
	prepareRPC(t, base, sc)
	kubelet, simDir, _ := simnode.Dirs(base)
	if err := sim.WriteFaultsFile(simDir, c.rule()); err != nil {
		t.Fatal(err)
	}

	// The RPC meets the crash: the connection drops and the process exits
	// with the sim's crash code, saying where it crashed. The binary
	// serves /metrics so that a concurrent scenario can start its second
	// call where its first has got to.
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: sc.concurrent(), Args: rpcArgs})
	err := callOnce(t, p, sc, kubelet, true)
	if err == nil && sc.concurrent() {
		// This run's interleaving did not make the call the case crashes
		// at (a Map or a logout that another order makes): what it did
		// must still converge.
		notReached.Add(1)
		t.Logf("crash point %s not reached in this interleaving", c)
		if err := p.Stop(exitTimeout); err != nil {
			t.Fatalf("plugin did not stop cleanly: %v\n%s", err, p.Log.String())
		}
		check(t, base, sc, files)
		return
	}
	if err == nil {
		t.Fatalf("%s succeeded although the plugin should have crashed at %s\n%s", sc.name, c, p.Log.String())
	}
	select {
	case <-p.Done():
	case <-time.After(exitTimeout):
		t.Fatalf("plugin still running after the injected crash (RPC error %v)\n%s", err, p.Log.String())
	}
	var xe *exec.ExitError
	if !errors.As(p.ExitErr(), &xe) || xe.ExitCode() != sim.DefaultExitCode {
		t.Fatalf("plugin exit = %v, want exit code %d\n%s", p.ExitErr(), sim.DefaultExitCode, p.Log.String())
	}
	if !crashLogged(p.Log.String(), c) {
		t.Fatalf("the plugin did not crash at %s\n%s", c, p.Log.String())
	}

	// kubelet retries the same RPC against the restarted plugin.
	if err := os.Remove(filepath.Join(simDir, "faults.json")); err != nil {
		t.Fatal(err)
	}
	p = testbin.Start(t, bin, testbin.Options{Dir: base, Args: rpcArgs})
	var errs []string
	for attempt := 1; ; attempt++ {
		err := callOnce(t, p, sc, kubelet, false)
		if err == nil {
			if attempt == 1 {
				firstRetry.Add(1)
			} else {
				t.Logf("converged after %d retries: %s", attempt, strings.Join(errs, "; "))
			}
			break
		}
		errs = append(errs, err.Error())
		if attempt == maxRetries {
			t.Fatalf("%s did not converge in %d retries: %s\n%s", sc.name, maxRetries, strings.Join(errs, "; "), p.Log.String())
		}
		time.Sleep(retryBackoff)
	}
	if err := p.Stop(exitTimeout); err != nil {
		t.Fatalf("plugin did not stop cleanly: %v\n%s", err, p.Log.String())
	}
	check(t, base, sc, files)
	if t.Failed() {
		t.Log(p.Log.String())
	}
}

// callOnce sends the scenario's calls to the running plugin. With ordered,
// the second call of a concurrent scenario starts once the binary's
// host-call counters show the first call's step (or the process is gone);
// kubelet's retries come in no particular order.
func callOnce(t *testing.T, p *testbin.Plugin, sc scenario, kubelet string, ordered bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	var reached func(op string) bool
	if ordered && sc.concurrent() {
		reached = func(op string) bool {
			select {
			case <-p.Done():
				return true
			default:
			}
			u, err := p.ReadHostUsage()
			return err != nil || u.Calls[op] > 0 // an error: the plugin is going away
		}
	}
	return sc.rpc(ctx, nodeClient{csi.NewNodeClient(p.Dial(t))}, kubelet, reached)
}

// crashLogged reports whether the plugin's log has the sim's crash line
// for the case's op and moment.
func crashLogged(log string, c crashCase) bool {
	when := "before"
	if c.after {
		when = "after"
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"injected crash"`) && strings.Contains(line, `method="`+c.op+`"`) &&
			strings.Contains(line, `when="`+when+`"`) {
			return true
		}
	}
	return false
}

// check asserts, offline (the plugin stopped), that the scenario converged.
func check(t *testing.T, base string, sc scenario, files map[string]string) {
	t.Helper()
	kubelet, simDir, jdir := simnode.Dirs(base)
	s, err := sim.New(sim.Config{Dir: simDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := s.Snapshot()
	h := s.Host()
	ctx := context.Background()
	final := sc.final()

	// The journal records exactly the staged volumes, as staged.
	jr, err := journal.Open(jdir)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, e := range jr.List(ctx) {
		got = append(got, fmt.Sprintf("%s staged=%t", e.VolumeID, e.Staged))
	}
	for _, v := range final {
		want = append(want, v.id+" staged=true")
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("journal = %v, want %v", got, want)
	}

	// Staging paths: a mount point or share link for each staged volume;
	// the unstaged volume's path holds nothing.
	var mounts []string
	smbUsers, iscsiUsers := 0, 0
	for _, v := range final {
		staging := simnode.StagingPath(kubelet, v.id)
		info, err := h.Files.Stat(ctx, staging)
		if err != nil {
			t.Fatal(err)
		}
		switch v.kind {
		case kindSMB:
			smbUsers++
			unc := `\\` + smbServer + `\` + smbShare + `\` + v.shareDir
			if info.Kind != host.PathSymlink || !backend.SameTarget(info.Target, unc) {
				t.Errorf("staging path of %s is a %s to %q, want a link to %s", v.id, info.Kind, info.Target, unc)
			}
		default:
			if v.kind == kindISCSI {
				iscsiUsers++
			}
			mounts = append(mounts, staging)
			if info.Kind != host.PathMountPoint {
				t.Errorf("staging path of %s is a %s, want a mount point", v.id, info.Kind)
			}
		}
	}
	for _, v := range sc.unstaged() {
		info, err := h.Files.Stat(ctx, simnode.StagingPath(kubelet, v.id))
		if err != nil {
			t.Fatal(err)
		}
		if info.Kind != host.PathDir && info.Kind != host.PathMissing {
			t.Errorf("staging path of unstaged %s is a %s (%q)", v.id, info.Kind, info.Target)
		}
	}

	// Mount points: exactly those of the staged disks; none leaked.
	var gotMounts []string
	for _, m := range st.Mounts {
		gotMounts = append(gotMounts, m.Dir)
	}
	slices.Sort(gotMounts)
	slices.Sort(mounts)
	if !slices.Equal(gotMounts, mounts) {
		t.Errorf("mount points = %v, want %v", gotMounts, mounts)
	}

	// SMB: one mapping of the share root while a volume uses it, none after.
	var mappings []string
	for _, m := range st.Mappings {
		mappings = append(mappings, fmt.Sprintf("%s status=%d", strings.ToLower(m.RemotePath), m.Status))
	}
	wantMappings := []string(nil)
	if smbUsers > 0 {
		wantMappings = []string{`\\` + smbServer + `\` + smbShare + " status=0"}
	}
	if !slices.Equal(mappings, wantMappings) {
		t.Errorf("SMB mappings = %v, want %v", mappings, wantMappings)
	}

	// iSCSI: one session per portal (multipath), registered portals and
	// persistent logins while a volume uses the target; nothing after.
	wantPaths := []string(nil)
	if iscsiUsers > 0 {
		for _, p := range portals {
			wantPaths = append(wantPaths, iqn+"@"+p.String())
		}
	}
	var sessions, logins, regPortals []string
	for _, x := range st.Sessions {
		sessions = append(sessions, x.Target+"@"+x.Portal)
	}
	for _, x := range st.PersistentLogins {
		logins = append(logins, x.Target+"@"+x.Portal)
	}
	for _, x := range st.Portals {
		regPortals = append(regPortals, iqn+"@"+x.Portal)
	}
	for _, l := range [][]string{sessions, logins, regPortals} {
		slices.Sort(l)
	}
	if !slices.Equal(sessions, wantPaths) {
		t.Errorf("iSCSI sessions = %v, want %v", sessions, wantPaths)
	}
	if !slices.Equal(logins, wantPaths) {
		t.Errorf("iSCSI persistent logins = %v, want %v", logins, wantPaths)
	}
	if !slices.Equal(regPortals, wantPaths) {
		t.Errorf("iSCSI target portals = %v, want %v", regPortals, wantPaths)
	}

	// Disks: a staged volume's disk is online with one formatted data
	// partition (never formatted twice); an unstaged one is offline.
	for _, v := range sc.touched() {
		d, ok := diskOf(st, v)
		staged := slices.ContainsFunc(final, func(f volume) bool { return f.id == v.id })
		switch {
		case v.kind == kindSMB:
		case !ok && staged:
			t.Errorf("disk of staged %s not found", v.id)
		case !ok:
			// an iSCSI LUN disk goes away with the target's sessions
			if v.kind != kindISCSI || iscsiUsers > 0 {
				t.Errorf("disk of %s not found", v.id)
			}
		case staged && d.Offline:
			t.Errorf("disk of staged %s is offline", v.id)
		case !staged && !d.Offline:
			t.Errorf("disk of unstaged %s is online", v.id)
		}
		if ok && staged {
			if n := dataPartitions(d); n != 1 {
				t.Errorf("disk of %s has %d formatted data partitions, want 1: %+v", v.id, n, d.Partitions)
			}
		}
	}

	// Data written before the crash is intact.
	for _, v := range sc.staged {
		b, err := os.ReadFile(files[v.id])
		if err != nil || string(b) != fileContent(v) {
			t.Errorf("file of %s: %q, %v; want it intact", v.id, b, err)
		}
	}
}

// diskOf finds a volume's disk in the host state: by serial for the disk
// backend, by target and LUN for iSCSI.
func diskOf(st sim.State, v volume) (sim.DiskState, bool) {
	for _, d := range st.Disks {
		switch v.kind {
		case kindDisk:
			if d.Serial == v.id {
				return d, true
			}
		case kindISCSI:
			if strings.EqualFold(d.Target, iqn) && fmt.Sprint(d.LUN) == v.vctx["lun"] {
				return d, true
			}
		}
	}
	return sim.DiskState{}, false
}

func dataPartitions(d sim.DiskState) int {
	n := 0
	for _, p := range d.Partitions {
		if p.GptType == host.GptTypeBasicData && p.Volume != nil && p.Volume.FileSystem != "" {
			n++
		} else if p.GptType != host.GptTypeMSR {
			n += 100 // anything else is a leak
		}
	}
	return n
}

// checkBinaryCalls asserts that the plugin binary makes the host calls the
// in-process sequence lists, by running the RPC once on the binary and
// reading its host-call counters from /metrics.
func checkBinaryCalls(t *testing.T, bin string, sc scenario, seq []string, tmpl template) {
	base := testbin.ShortDir(t)
	tmpl.copyTo(t, base)
	prepareRPC(t, base, sc)
	kubelet, _, _ := simnode.Dirs(base)
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: true, Args: rpcArgs})
	if err := callOnce(t, p, sc, kubelet, false); err != nil {
		t.Fatalf("%s on the binary: %v\n%s", sc.name, err, p.Log.String())
	}
	got := p.HostUsage(t).Calls
	if err := p.Stop(exitTimeout); err != nil {
		t.Fatalf("plugin did not stop cleanly: %v", err)
	}
	want := map[string]int{}
	for _, op := range seq {
		want[op]++
	}
	for op := range want {
		if got[op] != want[op] {
			t.Errorf("binary made %d %s calls, the library sequence %d", got[op], op, want[op])
		}
	}
	for op, n := range got {
		if want[op] == 0 {
			t.Errorf("binary made %d %s calls, the library sequence none", n, op)
		}
	}
}

// nodeClient adapts a csi.NodeClient to the two methods rpc uses.
type nodeClient struct{ c csi.NodeClient }

func (n nodeClient) NodeStageVolume(ctx context.Context, r *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	return n.c.NodeStageVolume(ctx, r)
}

func (n nodeClient) NodeUnstageVolume(ctx context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	return n.c.NodeUnstageVolume(ctx, r)
}
