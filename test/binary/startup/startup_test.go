package startup

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/rpc"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// exitTimeout bounds a run that must end by itself: a liveness bound.
const exitTimeout = time.Minute

// result is a finished run of the binary.
type result struct {
	code   int
	stdout string
	stderr string
}

// runToExit runs the binary with args as they are (no defaults added).
func runToExit(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr testbin.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not exit\n%s", args, stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// simArgs are the flags of a plugin on the simulated host in base.
func simArgs(base string, extra ...string) []string {
	return append([]string{"--host=sim", "--sim-dir=" + filepath.Join(base, "sim"), "--kubelet-dir=" + filepath.Join(base, "kubelet"),
		"--driver-name=sim.csi.wincsi.io", "--node-id=test-node", "--endpoint=unix://" + filepath.Join(base, "csi.sock")}, extra...)
}

func TestHelp(t *testing.T) {
	bin := testbin.Build(t)
	r := runToExit(t, bin, "--help")
	if r.code != 0 {
		t.Fatalf("--help: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"Usage: csi-windows-node ", "docs/flags.md", "\nPlugin flags:\n", "\nCloud flags:\n",
		"\nWindows host flags:\n", "\nSimulated host flags (--host=sim):\n", "\nLogging flags:\n", "  --sim-config string"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--help lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Index(r.stdout, "Logging flags") < strings.Index(r.stdout, "Simulated host flags") {
		t.Errorf("klog's flags are not last:\n%s", r.stdout)
	}
}

// TestFlagErrorsBeforeStarting: every flag error, including one found
// only by reading a file or parsing the endpoint, ends the binary with
// status 2 and a message naming the flag, before it logs "Starting" or
// creates anything.
func TestFlagErrorsBeforeStarting(t *testing.T) {
	bin := testbin.Build(t)
	badConfig := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("shares:\n  - path: //f/d\n    users: [{name: a, passwd: x}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args func(base string) []string
		want string // in the message
	}{
		{"unknown flag", func(b string) []string { return simArgs(b, "--no-such-flag") }, "no-such-flag"},
		{"an argument", func(b string) []string { return simArgs(b, "extra") }, `"extra"`},
		{"malformed endpoint", func(b string) []string { return simArgs(b, "--endpoint=tcp://127.0.0.1:10000") }, "--endpoint"},
		{"endpoint without a path", func(b string) []string { return simArgs(b, "--endpoint=unix://") }, "--endpoint"},
		{"endpoint too long for a socket", func(b string) []string {
			return simArgs(b, "--endpoint=unix://"+filepath.Join(b, strings.Repeat("e", 110)))
		}, "--endpoint"},
		{"registration socket too long", func(b string) []string {
			return simArgs(b, "--kubelet-registration", "--kubelet-dir="+filepath.Join(b, strings.Repeat("k", 80)))
		}, "--kubelet-dir, named after --driver-name: socket path"},
		{"http endpoint without a port", func(b string) []string { return simArgs(b, "--http-endpoint=localhost") }, "--http-endpoint"},
		{"relative kubelet dir", func(b string) []string { return simArgs(b, "--kubelet-dir=kubelet") }, "--kubelet-dir"},
		{"bad alias", func(b string) []string { return simArgs(b, "--context-alias=lun=nosuchkey") }, "--context-alias"},
		{"sim config missing", func(b string) []string { return simArgs(b, "--sim-config="+filepath.Join(b, "none.yaml")) }, "--sim-config"},
		{"sim config with an unknown key", func(b string) []string { return simArgs(b, "--sim-config="+badConfig) }, `shares[0].users[0]: unknown key "passwd"`},
		{"sim config without sim", func(b string) []string {
			return []string{"--host=windows", "--driver-name=a.b", "--sim-config=" + badConfig}
		}, "--sim-config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			r := runToExit(t, bin, tt.args(base)...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("the message does not name %q:\n%s", tt.want, r.stderr)
			}
			if strings.Contains(r.stderr, `"Starting"`) {
				t.Errorf("a flag error after the Starting line:\n%s", r.stderr)
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a flag error left %v in the base directory", entries)
			}
		})
	}
}

// TestHTTPPortTaken: a taken --http-endpoint port is a clear error, and
// the plugin fails before its socket exists.
func TestHTTPPortTaken(t *testing.T) {
	bin := testbin.Build(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	base := t.TempDir()
	r := runToExit(t, bin, simArgs(base, "--http-endpoint="+taken.Addr().String())...)
	if r.code != 1 || !strings.Contains(r.stderr, "another process already listens on this port") || !strings.Contains(r.stderr, taken.Addr().String()) {
		t.Fatalf("exit %d, want 1 with a message naming the taken port\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, `"Ready"`) {
		t.Errorf("the plugin got ready with its port taken:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(base, "csi.sock")); !os.IsNotExist(err) {
		t.Errorf("the socket exists (%v): a sidecar could have reached a plugin that then exited", err)
	}
	// The claim was released: the next start on the socket serves.
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: true})
	if ok, err := rpc.Probe(testbin.Context(t, exitTimeout), p.Dial(t)); err != nil || !ok {
		t.Fatalf("start after the failed one: %v %v", ok, err)
	}
	if body := p.Get(t, "/healthz"); body != "ok" {
		t.Fatalf("/healthz = %q", body)
	}
}

// TestSocketRace starts several plugins on one socket at once, round
// after round, on a fresh path and (after killing the winner) over its
// stale socket: exactly one serves each round, and every other one exits
// with status 1 saying the endpoint is served by another process, never
// with a raw "address already in use". Who wins is up to the race; nothing
// waits for a time.
func TestSocketRace(t *testing.T) {
	bin := testbin.BuildNoRace(t) // many starts: a race build would only make each slower
	const rounds, plugins = 8, 4
	base := t.TempDir()
	for round := 0; round < rounds; round++ {
		type run struct {
			cmd  *exec.Cmd
			log  *testbin.SyncBuffer
			done chan error
		}
		runs := make([]*run, plugins)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range runs {
			r := &run{log: &testbin.SyncBuffer{}, done: make(chan error, 1)}
			r.cmd = exec.Command(bin, simArgs(base, "--v=2")...)
			r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
			runs[i] = r
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := r.cmd.Start(); err != nil {
					r.done <- err
					return
				}
				go func() { r.done <- r.cmd.Wait() }()
			}()
		}
		close(start)
		wg.Wait()
		// The losers exit by themselves; the winner serves until killed.
		// Wait for all but one to exit, then check that one serves.
		var exited []*run
		var winner *run
		giveUp := time.Now().Add(exitTimeout) // a liveness bound: two winners would never exit
		for len(exited) < plugins-1 {
			if time.Now().After(giveUp) {
				for _, r := range runs {
					if r.cmd.Process != nil {
						_ = r.cmd.Process.Kill()
					}
					t.Logf("plugin log:\n%s", r.log.String())
				}
				t.Fatalf("round %d: only %d of %d plugins exited: more than one serves the socket", round, len(exited), plugins)
			}
			for _, r := range runs {
				select {
				case err := <-r.done:
					r.done <- err // keep it for the checks below
					if !contains(exited, r) {
						exited = append(exited, r)
					}
				default:
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		for _, r := range runs {
			if !contains(exited, r) {
				winner = r
			}
		}
		for _, r := range exited {
			err := <-r.done
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(r.log.String(), "endpoint is served by another process") {
				t.Fatalf("round %d: a loser exited with %v, want status 1 and \"served by another process\"\n%s", round, err, r.log.String())
			}
			if strings.Contains(r.log.String(), "address already in use") {
				t.Fatalf("round %d: a loser met a raw bind error\n%s", round, r.log.String())
			}
		}
		// The winner holds the socket's lock from its start, and serves
		// once its host is up: wait for its "Ready" line (the bound is for
		// liveness only).
		ready := time.Now().Add(exitTimeout)
		for !strings.Contains(winner.log.String(), `"Ready"`) {
			if time.Now().After(ready) {
				t.Fatalf("round %d: the winner never became ready\n%s", round, winner.log.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		conn := testbin.Dial(t, "unix://"+filepath.Join(base, "csi.sock"))
		if ok, err := rpc.Probe(testbin.Context(t, exitTimeout), conn); err != nil || !ok {
			t.Fatalf("round %d: the winner does not serve: %v %v\n%s", round, ok, err, winner.log.String())
		}
		// A crash leaves a stale socket for the next round.
		_ = winner.cmd.Process.Kill()
		<-winner.done
		if round > 0 && !strings.Contains(winner.log.String(), "Removed a stale socket") {
			t.Errorf("round %d: the winner replaced the stale socket without saying so\n%s", round, winner.log.String())
		}
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSimConfig: make run's network file is applied at start, kept as it
// is at the next start, and a file that contradicts the state stops the
// start-up with status 1 naming the entry (and never the password).
func TestSimConfig(t *testing.T) {
	bin := testbin.Build(t)
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	network := filepath.Join(root, "docs", "sim-config.yaml")
	base := t.TempDir()
	for i, want := range []string{`share \\\\files\\data: added (users alice)`, `share \\\\files\\data: kept`} {
		p := testbin.Start(t, bin, testbin.Options{Dir: base, Args: []string{"--sim-config=" + network}})
		if err := p.Stop(exitTimeout); err != nil {
			t.Fatalf("start %d: %v\n%s", i, err, p.Log.String())
		}
		if !strings.Contains(p.Log.String(), want) {
			t.Errorf("start %d does not log %s:\n%s", i, want, p.Log.String())
		}
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(other, []byte("shares:\n  - path: //files/data\n    users: [{name: alice, password: not-alices-pw}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runToExit(t, bin, simArgs(base, "--sim-config="+other)...)
	if r.code != 1 || !strings.Contains(r.stderr, `shares[0] (\\\\files\\data): conflicts with the simulated host's state`) {
		t.Fatalf("exit %d, want 1 naming the conflicting entry\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "not-alices-pw") {
		t.Errorf("the error shows the password:\n%s", r.stderr)
	}
}
