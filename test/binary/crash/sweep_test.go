package crash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// The node a clean round of the orphan sweep works on: staged volumes on a
// share and a target that gone volumes shared with them; a disk volume
// gone; an unstage that failed half-way on another share (then its staging
// path removed) and one on another target (session and persistent login
// left); an administrator's mapping.
var (
	halfSMB = volume{id: "vol-smb-half", kind: kindSMB, shareDir: "h", secrets: smbVol1.secrets,
		vctx: map[string]string{"source": "//srv2/half", "subDir": "h"}}
	halfISCSI = volume{id: "vol-iscsi-half", kind: kindISCSI,
		vctx: map[string]string{"targetPortal": "10.0.9.1:3260", "iqn": iqn + "-half", "lun": "1"}}
	sweepKept = []volume{smbVol1, iscVol1}
	sweepGone = []volume{smbVol2, iscVol2, diskVol}
)

// prepareSweep builds that node under base, in process.
func prepareSweep(t testing.TB, base string) {
	t.Helper()
	n, done := simnode.MustOpen(t, simnode.Options{Base: base})
	defer done()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(setupHost(n.Sim))
	must(n.Sim.AddShare(sim.ShareSpec{Server: "srv2", Share: "half", Users: map[string]string{smbUser: smbPass}}))
	must(os.MkdirAll(filepath.Join(n.SimDir, "smb", "srv2", "half", "h"), 0o750))
	must(n.Sim.AddShare(sim.ShareSpec{Server: "admin", Share: "tools", Users: map[string]string{"bob": "Admin-Pw-77"}}))
	must(n.Sim.AddTarget(sim.TargetSpec{IQN: iqn + "-half", Portals: []host.Portal{{Address: "10.0.9.1", Port: 3260}},
		LUNs: []sim.LUNSpec{{LUN: 1}}}))
	for _, v := range append(append([]volume{halfSMB, halfISCSI}, sweepKept...), sweepGone...) {
		stageAndWrite(t, n, v)
	}
	h := n.Sim.Host()
	// kubelet's state cleaned: the gone volumes' staging paths removed.
	for _, v := range sweepGone {
		p := simnode.StagingPath(n.Kubelet, v.id)
		if v.kind != kindSMB {
			must(h.Volumes.Unmount(ctx, p))
		}
		must(os.Remove(p))
	}
	// Unstages that failed half-way and were never retried.
	for _, c := range []struct {
		v  volume
		op string
	}{{halfSMB, sim.OpSMBUnmap}, {halfISCSI, sim.OpISCSIUnregister}} {
		must(n.Sim.Faults().Add(sim.Rule{Op: c.op, Err: "internal"}))
		if _, err := n.Server.NodeUnstageVolume(ctx, unstageReq(n.Kubelet, c.v)); err == nil {
			t.Fatalf("unstage of %s with %s failing succeeded", c.v.id, c.op)
		}
		n.Sim.Faults().Clear()
	}
	must(os.Remove(simnode.StagingPath(n.Kubelet, halfSMB.id)))
	must(h.SMB.Map(ctx, `\\admin\tools`, host.Credential{User: "bob", Password: host.NewSecret("Admin-Pw-77")}, false))
}

// sweepState is what the node holds after a round, for comparison: the
// journal, mount points, mappings, sessions, persistent logins, portals
// and online disks.
func sweepState(t testing.TB, base string) []string {
	t.Helper()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	st := n.Sim.Snapshot()
	var out []string
	for _, e := range n.Journal(t).List(context.Background()) {
		out = append(out, fmt.Sprintf("entry %s staged=%t", e.VolumeID, e.Staged))
	}
	for _, m := range st.Mounts {
		out = append(out, "mount "+strings.TrimPrefix(m.Dir, n.Kubelet))
	}
	for _, m := range st.Mappings {
		out = append(out, "mapping "+strings.ToLower(m.RemotePath))
	}
	for _, s := range st.Sessions {
		out = append(out, "session "+s.Target+"@"+s.Portal)
	}
	for _, l := range st.PersistentLogins {
		out = append(out, "login "+l.Target+"@"+l.Portal)
	}
	for _, p := range st.Portals {
		out = append(out, "portal "+p.Portal)
	}
	for _, d := range st.Disks {
		if !d.Boot && !d.System && !d.Offline {
			out = append(out, "online "+d.Serial)
		}
	}
	// Every volume still recorded is healthy: the round broke none.
	rep, err := n.Plugin.TakeStock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Volumes {
		if v.VolumeID != halfISCSI.id && v.State != inventory.StateHealthy {
			t.Errorf("volume %s: %s %+v", v.VolumeID, v.State, v.Problems)
		}
	}
	slices.Sort(out)
	return out
}

// sweepSequence runs a clean round in process on a copy of the prepared
// node and returns its host calls and the state it leaves.
func sweepSequence(t *testing.T, tmpl template) ([]string, []string) {
	base := testbin.ShortDir(t)
	tmpl.copyTo(t, base)
	n, err := simnode.Open(simnode.Options{Base: base, Args: []string{"--orphan-sweep=clean"}})
	if err != nil {
		t.Fatal(err)
	}
	mark := n.Sim.Mark()
	r, err := n.Plugin.Sweep(context.Background())
	seq := n.Sim.OpsSince(mark)
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, o := range r.Outcomes {
		if o.Result == "removed" {
			removed++
		}
	}
	if removed == 0 {
		t.Fatalf("the round removed nothing: %+v", r.Outcomes)
	}
	return seq, sweepState(t, base)
}

// sweepsDone matches the binary's count of finished rounds on /metrics.
var sweepsDone = regexp.MustCompile(`(?m)^csi_windows_node_orphan_sweeps_total\{result="(ok|incomplete)"\} (\d+)`)

// startSwept starts the binary in clean mode and waits until its first
// round has ended.
func startSwept(t *testing.T, bin, base string) *testbin.Plugin {
	t.Helper()
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: true, Args: []string{"--v=2", "--orphan-sweep=clean"}})
	deadline := time.Now().Add(rpcTimeout) // a liveness bound only
	for {
		m := sweepsDone.FindStringSubmatch(p.Get(t, "/metrics"))
		if m != nil {
			if n, _ := strconv.Atoi(m[2]); n > 0 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no orphan sweep round ended within %s\n%s", rpcTimeout, p.Log.String())
		}
		time.Sleep(retryBackoff)
	}
}

// sweepCases lists the crash points of a round. In full, every step
// before and after (cases). Otherwise the first step, and every step with
// an effect before and after: the round's first part only reads (the
// inventory), and a crash before a read is the state of a crash after the
// step before it, so these are all the states a crash can leave.
func sweepCases(seq []string, full bool) []crashCase {
	if full {
		return cases(seq, true)
	}
	var out []crashCase
	for i, c := range cases(seq, true) {
		if i == 0 || !readOnlyOps(c.op) {
			out = append(out, c)
		}
	}
	return out
}

// TestSweepCrashMatrix crashes the plugin binary before and after the host
// calls of a clean round of the orphan sweep (the round the binary runs at
// start), then restarts it: its first round must finish the job, leaving
// the node as an uninterrupted round does (nothing leaked, no staged
// volume broken). By default the crashes are before the first step and
// before and after every step with an effect (sweepCases);
// CSI_CRASH_MATRIX=full crashes before and after every step.
func TestSweepCrashMatrix(t *testing.T) {
	bin := testbin.BuildNoRace(t)
	tmpl := newTemplate(t, func(base string) map[string]string { prepareSweep(t, base); return nil })
	seq, want := sweepSequence(t, tmpl)
	t.Logf("host calls of a clean round (%d): %s", len(seq), strings.Join(seq, " "))
	cs := sweepCases(seq, os.Getenv(matrixEnv) == "full")
	t.Logf("%d crash cases", len(cs))
	t.Run("binary-matches-library", func(t *testing.T) {
		t.Parallel()
		base := testbin.ShortDir(t)
		tmpl.copyTo(t, base)
		p := startSwept(t, bin, base)
		got := p.HostUsage(t).Calls
		if err := p.Stop(exitTimeout); err != nil {
			t.Fatalf("plugin did not stop cleanly: %v", err)
		}
		wantCalls := map[string]int{}
		for _, op := range seq {
			wantCalls[op]++
		}
		for op, n := range got {
			if wantCalls[op] != n {
				t.Errorf("binary made %d %s calls, the library round %d", n, op, wantCalls[op])
			}
		}
		for op, n := range wantCalls {
			if got[op] == 0 {
				t.Errorf("binary made no %s call, the library round %d", op, n)
			}
		}
		if got := sweepState(t, base); !slices.Equal(got, want) {
			t.Errorf("state after the binary's round:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	})
	for _, c := range cs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			base := testbin.ShortDir(t)
			tmpl.copyTo(t, base)
			_, simDir, _ := simnode.Dirs(base)
			if err := sim.WriteFaultsFile(simDir, c.rule()); err != nil {
				t.Fatal(err)
			}
			// The round at start meets the crash.
			ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
			defer cancel()
			cmd := testbin.Command(ctx, bin, testbin.Options{Dir: base, Args: []string{"--v=2", "--orphan-sweep=clean"}})
			log := &testbin.SyncBuffer{}
			cmd.Stdout, cmd.Stderr = log, log
			err := cmd.Run()
			var xe *exec.ExitError
			if !errors.As(err, &xe) || xe.ExitCode() != sim.DefaultExitCode {
				t.Fatalf("plugin exit = %v, want exit code %d\n%s", err, sim.DefaultExitCode, log.String())
			}
			if !crashLogged(log.String(), c) {
				t.Fatalf("the plugin did not crash at %s\n%s", c, log.String())
			}
			if err := os.Remove(filepath.Join(simDir, "faults.json")); err != nil {
				t.Fatal(err)
			}
			// Restarted, its first round finishes what the crash cut.
			p := startSwept(t, bin, base)
			if err := p.Stop(exitTimeout); err != nil {
				t.Fatalf("plugin did not stop cleanly: %v\n%s", err, p.Log.String())
			}
			if got := sweepState(t, base); !slices.Equal(got, want) {
				t.Errorf("state after the crash and a round:\n  %s\nwant\n  %s\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), p.Log.String())
			}
		})
	}
}
