//go:build linux

// Package selftest runs csi-windows-node preflight and selftest as a user
// would, on the simulated host: every step passes, bad input ends with one
// line and the right exit status, a killed run's leftovers are removed by
// the next run, Ctrl-C removes what the run made, and preflight's one fix
// works. Linux only: the simulated host runs only on Linux.
package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// runTimeout bounds one run of the binary; no test measures time.
const runTimeout = 5 * time.Minute

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	bin := testbin.Build(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// report decodes selftest -o json.
type report struct {
	Run       string   `json:"run"`
	Leftovers []string `json:"leftovers"`
	Steps     []struct {
		Backend, Step, Result, Detail string
	} `json:"steps"`
	NotRemoved  []string `json:"notRemoved"`
	Interrupted bool     `json:"interrupted"`
	Passed      bool     `json:"passed"`
}

func decode(t *testing.T, r result) report {
	t.Helper()
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("selftest -o json printed no report: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return rep
}

// left lists what is in the work directory besides the lock and the
// simulated host.
func left(t *testing.T, work string) []string {
	t.Helper()
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != ".selftest.lock" && e.Name() != "sim" {
			out = append(out, e.Name())
		}
	}
	return out
}

func moduleFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// selftest --host=sim passes every step of every backend: a VHDX, a named
// share and a local one, an iSCSI target with CHAP (the simulated network
// of docs/sim-config.yaml), through the binary, and leaves nothing.
func TestEveryStepPasses(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	smbCred := writeFile(t, dir, "smb", "username=alice\npassword=alice-password\n")
	chap := writeFile(t, dir, "chap", "# session CHAP\nusername=node1\npassword=node1-secret12\n")
	common := []string{"selftest", "--host=sim", "--work-dir=" + work, "--sim-config=" + moduleFile(t, "docs/sim-config.yaml"), "-o", "json"}

	r := run(t, append(common, "--backends=disk,smb,iscsi", "--smb-source=//files/data", "--smb-credentials="+smbCred,
		"--iscsi-portal=127.0.0.1:3260", "--iscsi-iqn=iqn.2026-01.io.example:storage", "--iscsi-lun=1", "--iscsi-chap="+chap)...)
	rep := decode(t, r)
	if r.code != 0 || !rep.Passed {
		t.Fatalf("exit %d, passed %v:\n%s\n%s", r.code, rep.Passed, r.stdout, r.stderr)
	}
	backends := map[string]int{}
	for _, s := range rep.Steps {
		if s.Result != "pass" {
			t.Errorf("%s %s: %s %s", s.Backend, s.Step, s.Result, s.Detail)
		}
		backends[s.Backend]++
	}
	for _, b := range []string{"disk", "disk-refs", "smb", "iscsi"} {
		if backends[b] == 0 {
			t.Errorf("no %s step in %v", b, backends)
		}
	}

	r = run(t, append(common, "--backends=smb", "--smb-local")...)
	if rep := decode(t, r); r.code != 0 || !rep.Passed {
		t.Fatalf("--smb-local: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if l := left(t, work); len(l) != 0 {
		t.Errorf("left in the work directory: %q", l)
	}
	for _, secret := range []string{"alice-password", "node1-secret12"} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the output holds a secret")
		}
	}
}

// The table: one line per step as it ends, a summary, exit 0.
func TestTableOutput(t *testing.T) {
	work := filepath.Join(t.TempDir(), "work")
	r := run(t, "selftest", "--host=sim", "--work-dir="+work)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"BACKEND", "disk      stage: find, online, GPT, partition, format NTFS, mount", "disk      expand", "PASSED"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in\n%s", want, r.stdout)
		}
	}
}

// Bad input: one clear line naming the flag, exit 2, nothing made; a share
// that does not answer: the stage step fails, exit 1, nothing left.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	bad := writeFile(t, dir, "bad", "username=alice\nsecret=x\n")
	good := writeFile(t, dir, "good", "username=alice\npassword=alice-password\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--backends=disk,nfs"}, `--backends: unknown backend "nfs"`},
		{[]string{"--backends=smb"}, "--backends=smb needs --smb-local or --smb-source"},
		{[]string{"--backends=smb", "--smb-source=//files/data", "--smb-credentials=" + filepath.Join(dir, "missing")}, "--smb-credentials: open"},
		{[]string{"--backends=smb", "--smb-source=//files/data", "--smb-credentials=" + bad}, `--smb-credentials: ` + bad + `:2: unknown key "secret"`},
		{[]string{"--backends=iscsi", "--iscsi-portal=127.0.0.1"}, "--backends=iscsi needs --iscsi-portal and --iscsi-iqn"},
		{[]string{"--record=" + filepath.Join(dir, "r.jsonl")}, "--record: only the Windows host's calls are recorded"},
		{[]string{"-o", "yaml"}, "-o=yaml: want table or json"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--work-dir=relative"}, `--work-dir: path "relative"`},
	} {
		r := run(t, append([]string{"selftest", "--host=sim", "--work-dir=" + work}, tt.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "alice-password") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
		if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q: the work directory was made", tt.args)
		}
	}
	if _, err := os.Stat("relative"); !errors.Is(err, os.ErrNotExist) {
		t.Error("a relative --work-dir was made in the current directory")
		_ = os.RemoveAll("relative")
	}

	r := run(t, "selftest", "--host=sim", "--work-dir="+work, "-o", "json", "--backends=smb", "--smb-source=//nosuchserver/share",
		"--smb-credentials="+good)
	rep := decode(t, r)
	var failed []string
	for _, s := range rep.Steps {
		if s.Result == "fail" {
			failed = append(failed, s.Step+": "+s.Detail)
		}
	}
	if r.code != 1 || len(failed) != 1 || !strings.HasPrefix(failed[0], "stage: global mapping, link: Unavailable: //nosuchserver/share: ") {
		t.Errorf("a share that does not answer: exit %d, failed steps %q", r.code, failed)
	}
	if l := left(t, work); len(l) != 0 {
		t.Errorf("left in the work directory: %q", l)
	}
}

// A run killed in the middle leaves its volume staged and published, its
// VHDX attached; the next run removes them first, through the dead run's
// journal, says so, and passes.
func TestKilledRunIsCleanedUpByTheNext(t *testing.T) {
	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(filepath.Join(work, "sim"), 0o750); err != nil {
		t.Fatal(err)
	}
	// The process exits (as if killed) before the expansion's rescan.
	if err := sim.WriteFaultsFile(filepath.Join(work, "sim"), sim.Rule{Op: sim.OpDisksRescan, CrashBefore: true}); err != nil {
		t.Fatal(err)
	}
	r := run(t, "selftest", "--host=sim", "--work-dir="+work)
	if r.code != sim.DefaultExitCode {
		t.Fatalf("the killed run: exit %d, want %d\n%s\n%s", r.code, sim.DefaultExitCode, r.stdout, r.stderr)
	}
	if l := left(t, work); len(l) != 1 || !strings.HasPrefix(l[0], "csiwn-st-") {
		t.Fatalf("the killed run left %q, want its directory", l)
	}
	dead := strings.TrimPrefix(left(t, work)[0], "csiwn-st-")
	if err := os.Remove(filepath.Join(work, "sim", "faults.json")); err != nil {
		t.Fatal(err)
	}

	r = run(t, "selftest", "--host=sim", "--work-dir="+work, "-o", "json")
	rep := decode(t, r)
	if r.code != 0 || !rep.Passed {
		t.Fatalf("the next run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	all := strings.Join(rep.Leftovers, "\n")
	for _, want := range []string{"run " + dead + ": unstaged volume csiwn-st-" + dead + "-disk", "removed virtual disk",
		"run " + dead + ": removed directory"} {
		if !strings.Contains(all, want) {
			t.Errorf("the next run does not say %q:\n%s", want, all)
		}
	}
	if l := left(t, work); len(l) != 0 {
		t.Errorf("left in the work directory: %q", l)
	}
	r = run(t, "selftest", "--host=sim", "--work-dir="+work)
	if r.code != 0 || strings.Contains(r.stdout, "earlier run") {
		t.Errorf("a third run: exit %d, still mentions an earlier run:\n%s", r.code, r.stdout)
	}
}

// Ctrl-C during a step: the run stops, removes what it made, says it was
// interrupted, and exits 1.
func TestInterruptRemovesWhatTheRunMade(t *testing.T) {
	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(filepath.Join(work, "sim"), 0o750); err != nil {
		t.Fatal(err)
	}
	// The stats step waits (ctx-aware) until the interrupt ends it.
	if err := sim.WriteFaultsFile(filepath.Join(work, "sim"), sim.Rule{Op: sim.OpVolumesFreeSpace, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	bin := testbin.Build(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "selftest", "--host=sim", "--work-dir="+work)
	var out, errOut testbin.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "write and read back") {
		select {
		case <-ctx.Done():
			t.Fatalf("no step line:\n%s\n%s", out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "FAILED (interrupted)") || !strings.Contains(errOut.String(), "removing what this run made") {
		t.Errorf("the interrupt is not reported:\n%s\n%s", out.String(), errOut.String())
	}
	if l := left(t, work); len(l) != 0 {
		t.Errorf("left in the work directory: %q", l)
	}
}

// preflight on a fresh (simulated) node fails on the stopped MSiSCSI; --fix
// starts it and sets it to start automatically, says so, and preflight
// then passes; its bad flags exit 2.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	kubelet := filepath.Join(dir, "kubelet")
	if err := os.Mkdir(kubelet, 0o750); err != nil {
		t.Fatal(err)
	}
	args := []string{"preflight", "--host=sim", "--sim-dir=" + filepath.Join(dir, "sim"), "--kubelet-dir=" + kubelet}
	// The simulated host must exist for a read-only look; the message says
	// what makes one.
	if r := run(t, args...); r.code != 1 || !strings.Contains(r.stderr, "no simulated host in --sim-dir") ||
		!strings.Contains(r.stderr, "preflight --fix") {
		t.Fatalf("no simulated host yet: exit %d\n%s", r.code, r.stderr)
	}
	if r := run(t, "selftest", "--host=sim", "--work-dir="+filepath.Join(dir, "w"), "--sim-dir="+filepath.Join(dir, "sim")); r.code != 0 {
		t.Fatalf("selftest: exit %d\n%s", r.code, r.stderr)
	}
	r := run(t, append(args, "-o", "json")...)
	var rep struct {
		Result string `json:"result"`
		Checks []struct{ Check, Result, Detail, Fix string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.stdout, r.stderr)
	}
	results := map[string]string{}
	for _, c := range rep.Checks {
		results[c.Check] = c.Result
	}
	if r.code != 1 || rep.Result != "fail" || results["iscsi-initiator"] != "fail" || results["kubelet-dir"] != "pass" {
		t.Fatalf("a fresh node: exit %d, %v", r.code, results)
	}
	if r := run(t, args...); r.code != 1 || !strings.Contains(r.stdout, "iscsi-initiator   FAIL") || !strings.Contains(r.stdout, ": NOT READY: ") {
		t.Fatalf("a fresh node, as a table: exit %d\n%s", r.code, r.stdout)
	}

	r = run(t, append(args, "--fix")...)
	if r.code != 0 || !strings.Contains(r.stdout, "MSiSCSI: start type manual -> automatic") || !strings.Contains(r.stdout, "MSiSCSI: stopped -> running") {
		t.Fatalf("--fix: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, append(args, "--fix")...)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to change") {
		t.Fatalf("a second --fix: exit %d\n%s", r.code, r.stdout)
	}
	r = run(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "iscsi-initiator   PASS") || !strings.Contains(r.stdout, ": READY\n") {
		t.Fatalf("after the fix: exit %d\n%s", r.code, r.stdout)
	}
	for _, bad := range [][]string{{"--backends=nfs"}, {"-o", "xml"}, {"--timeout=0s"}, {"extra"}} {
		if r := run(t, append(args, bad...)...); r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a short message", bad, r.code, r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"preflight", "selftest"} {
		r := run(t, cmd, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: csi-windows-node "+cmd) || !strings.Contains(r.stdout, "Exit status") || r.stderr != "" {
			t.Errorf("%s --help: exit %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
}
