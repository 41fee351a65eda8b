// Package diagnose runs csi-windows-node diagnose, the real binary, on a
// simulated node put in every state it reports (test/harness/nodestates):
// its JSON and its table, that it changes nothing, and that it works while
// the plugin binary serves the same node.
package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
	"github.com/wincsi/csi-windows-node/test/harness/nodestates"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// runTimeout only keeps a wedged run from hanging the suite; no test
// depends on how long a run takes.
const runTimeout = 2 * time.Minute

// diagnose runs the binary's diagnose on the node under base and returns
// its stdout and stderr; a non-zero exit fails the test.
func diagnose(t *testing.T, bin, base string, args ...string) (string, string) {
	t.Helper()
	kubelet, simDir, _ := simnode.Dirs(base)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"diagnose", "--host=sim", "--sim-dir=" + simDir,
		"--kubelet-dir=" + kubelet, "--driver-name=" + simnode.DriverName}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("diagnose %q: %v\nstderr:\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// report decodes diagnose -o json strictly: fields the report does not
// define fail.
func report(t *testing.T, out string) *inventory.Report {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var rep inventory.Report
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("diagnose -o json printed no report: %v\n%s", err, out)
	}
	return &rep
}

// requiredKeys are the JSON fields scripts may rely on (the issue's
// contract): every volume and every unexplained item carries them.
var requiredKeys = map[string][]string{
	"volumes":     {"volumeID", "backend", "stagingPath", "state", "problems"},
	"unexplained": {"kind", "id", "reason"},
}

// topLevel are the report's arrays, present even when empty
// (docs/troubleshooting.md lists them side by side): a script can index
// them without checking for null or a missing key.
var topLevel = []string{"volumes", "resources", "unexplained", "incomplete"}

func checkKeys(t *testing.T, out string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range topLevel {
		if v, ok := top[k]; !ok || !bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
			t.Errorf("%q is %s, want an array (empty or not)", k, v)
		}
	}
	for list, keys := range requiredKeys {
		var objs []map[string]json.RawMessage
		if err := json.Unmarshal(top[list], &objs); err != nil {
			t.Fatalf("%s: %v", list, err)
		}
		if len(objs) == 0 {
			t.Fatalf("%s is empty: the check would prove nothing", list)
		}
		for i, obj := range objs {
			for _, k := range keys {
				if _, ok := obj[k]; !ok {
					t.Errorf("%s[%d] has no %q", list, i, k)
				}
			}
		}
	}
}

// snapshot returns the contents of every file below dir, by path.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[p] = "-> " + target
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		case d.IsDir():
			out[p] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReportsEveryState(t *testing.T) {
	bin := testbin.Build(t)
	base := t.TempDir()
	want := nodestates.Build(t, base)
	before := snapshot(t, base)

	out, errOut := diagnose(t, bin, base, "-o", "json")
	nodestates.Check(t, report(t, out), want)
	checkKeys(t, out)

	table, _ := diagnose(t, bin, base)
	checkTable(t, table, report(t, out))

	// The preflight checks, as the plugin runs them at start: every check,
	// in JSON and in the table (the node's journal holds iSCSI volumes, so
	// the stopped MSiSCSI of a fresh node fails).
	pf := report(t, out).Preflight
	if pf == nil || len(pf.Findings) != len(preflight.Checks) {
		t.Fatalf("diagnose -o json reports the preflight checks as %+v", pf)
	}
	for _, f := range pf.Findings {
		if f.Check == preflight.CheckISCSIInitiator && f.Result != preflight.Fail {
			t.Errorf("iscsi-initiator: %s %q, want fail on a node with iSCSI volumes", f.Result, f.Detail)
		}
	}
	if !strings.Contains(table, "PREFLIGHT (10)") || !strings.Contains(table, "fix: csi-windows-node preflight --fix") {
		t.Errorf("the table lacks the preflight section:\n%s", table)
	}

	for _, text := range []string{out, errOut, table} {
		for _, s := range nodestates.Secrets {
			if strings.Contains(text, s) {
				t.Errorf("diagnose printed a secret")
			}
		}
		if strings.Contains(text, want.OtherPublication) {
			t.Errorf("diagnose names another driver's publication %s", want.OtherPublication)
		}
	}
	after := snapshot(t, base)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("diagnose changed %s", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("diagnose created %s", p)
		}
	}
}

// checkTable: the table shows every section, one row per volume with its
// state, every problem, publication, resource and unexplained item.
func checkTable(t *testing.T, table string, rep *inventory.Report) {
	t.Helper()
	lines := strings.Split(table, "\n")
	row := func(what string, cells ...string) {
		t.Helper()
		for _, l := range lines {
			f := strings.Fields(l)
			ok := len(f) >= len(cells)
			for i := 0; ok && i < len(cells); i++ {
				ok = f[i] == cells[i]
			}
			if ok {
				return
			}
		}
		t.Errorf("the table has no row for %s starting %q:\n%s", what, cells, table)
	}
	for _, sec := range []string{"VOLUMES (", "PROBLEMS (", "PUBLICATIONS (", "SHARED RESOURCES (", "UNEXPLAINED ("} {
		if !strings.Contains(table, "\n"+sec) && !strings.HasPrefix(table, sec) {
			t.Errorf("the table has no section %s", sec)
		}
	}
	for _, v := range rep.Volumes {
		row("volume "+v.VolumeID, v.VolumeID, v.Backend, string(v.State))
		for _, p := range v.Problems {
			row("a problem of "+v.VolumeID, v.VolumeID, p.Reason)
		}
		for _, p := range v.Publications {
			row("a publication of "+v.VolumeID, v.VolumeID, p.TargetPath)
		}
	}
	for _, r := range rep.Resources {
		row("resource "+r.ID, string(r.Kind), r.ID, string(r.Owner))
	}
	for _, it := range rep.Unexplained {
		row("unexplained "+it.ID, string(it.Kind), it.ID)
	}
}

// TestWhilePluginServes: diagnose runs beside the plugin binary serving
// the same simulated host (which holds the sim directory's lock) and the
// same journal, while the plugin stages and unstages: diagnose neither
// waits for the plugin nor disturbs it, and reports the node.
func TestWhilePluginServes(t *testing.T) {
	bin := testbin.Build(t)
	base := t.TempDir()
	want := nodestates.Build(t, base)
	p := testbin.Start(t, bin, testbin.Options{Dir: base})

	// Idle plugin: the report is the node's.
	out, _ := diagnose(t, bin, base, "-o", "json")
	nodestates.Check(t, report(t, out), want)

	// Busy plugin: volumes staged and unstaged while diagnose runs.
	node := csi.NewNodeClient(p.Dial(t))
	ctx := testbin.Context(t, runTimeout)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rpcErr error // read once the goroutine is done
	var rounds atomic.Int32
	var failed atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { failed.Store(rpcErr != nil) }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			vol := "vol-live"
			staging := simnode.StagingPath(p.Kubelet, vol)
			if err := os.MkdirAll(staging, 0o750); err != nil {
				rpcErr = err
				return
			}
			if _, err := node.NodeStageVolume(ctx, simnode.StageRequest(p.Kubelet, vol, nil, nil)); err != nil {
				rpcErr = err
				return
			}
			if _, err := node.NodeUnstageVolume(ctx, simnode.UnstageRequest(p.Kubelet, vol)); err != nil {
				rpcErr = err
				return
			}
			rounds.Add(1)
		}
	}()
	// At least three reports, and at least two stage/unstage rounds while
	// they are taken (the RPCs stop when the reports do).
	for n := 0; n < 3 || rounds.Load() < 2; n++ {
		if failed.Load() {
			break
		}
		out, _ := diagnose(t, bin, base, "-o", "json")
		rep := report(t, out)
		// The scenario's volumes are untouched by the RPCs; vol-live may
		// show in any state of its stage or unstage.
		seen := 0
		for _, v := range rep.Volumes {
			if w, ok := want.Volumes[v.VolumeID]; ok {
				seen++
				if v.State != w.State {
					t.Errorf("while the plugin stages: volume %s is %s, want %s", v.VolumeID, v.State, w.State)
				}
			}
		}
		if seen != len(want.Volumes) {
			t.Errorf("while the plugin stages: %d of the %d volumes reported", seen, len(want.Volumes))
		}
	}
	close(stop)
	wg.Wait()
	if rpcErr != nil {
		t.Fatalf("the plugin failed an RPC while diagnose ran: %v\nplugin log:\n%s", rpcErr, p.Log.String())
	}
	select {
	case <-p.Done():
		t.Fatalf("the plugin exited while diagnose ran: %v\n%s", p.ExitErr(), p.Log.String())
	default:
	}
	if err := p.Stop(30 * time.Second); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("the plugin did not stop cleanly: %v", err)
	}
	t.Logf("%d stage/unstage rounds ran beside diagnose", rounds.Load())
}
