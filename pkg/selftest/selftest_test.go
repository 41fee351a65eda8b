//go:build linux

// Linux only: the simulated host runs only on Linux.

package selftest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/selftest"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

const (
	iqn    = "iqn.2026-01.io.example:selftest"
	portal = "127.0.0.1:3260"
)

type rig struct {
	sim  *sim.Sim
	work string
	node selftest.Node
}

func newRig(t *testing.T) *rig {
	t.Helper()
	base := t.TempDir()
	s, err := sim.New(sim.Config{Dir: filepath.Join(base, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{{Address: "127.0.0.1", Port: 3260}}, LUNs: []sim.LUNSpec{{LUN: 0, Size: 2 << 30}},
		CHAP: &host.CHAP{User: "node1", Secret: host.NewSecret("node1-secret12")}}); err != nil {
		t.Fatal(err)
	}
	return &rig{sim: s, work: filepath.Join(base, "work"), node: selftest.Node{
		Host: s.Host(), Admin: s.Admin(), Style: winpath.POSIX,
		RoundTrips: func() int {
			n := 0
			for _, c := range s.Calls() {
				n += c
			}
			return n
		},
	}}
}

func (r *rig) config(backends ...string) selftest.Config {
	return selftest.Config{
		Backends: backends,
		WorkDir:  r.work,
		Plugin: plugin.Options{OfflineDiskOnUnstage: true,
			Backoff: backend.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 20}},
		SMB:   selftest.SMBTarget{Local: true},
		ISCSI: selftest.ISCSITarget{Portal: portal, IQN: iqn, CHAPUser: "node1", CHAPSecret: host.NewSecret("node1-secret12")},
	}
}

// nothingLeft fails unless the node holds nothing the run made: no VHDX,
// no extra disk, no local share, user, mapping or session, and nothing in
// the work directory but the lock file.
func (r *rig) nothingLeft(t *testing.T) {
	t.Helper()
	st := r.sim.Snapshot()
	if len(st.VirtualDisks) != 0 || len(st.LocalUsers) != 0 || len(st.LocalShares) != 0 || len(st.Mappings) != 0 ||
		len(st.Sessions) != 0 || len(st.Disks) != 1 {
		t.Errorf("left on the node: %d VHDX, %d users, %d shares, %d mappings, %d sessions, %d disks",
			len(st.VirtualDisks), len(st.LocalUsers), len(st.LocalShares), len(st.Mappings), len(st.Sessions), len(st.Disks))
	}
	entries, err := os.ReadDir(r.work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".selftest.lock" {
			t.Errorf("left in the work directory: %s", e.Name())
		}
	}
}

func steps(rep *selftest.Report) []string { return rep.Outcome() }

// Every step of every backend passes on the simulated host, through the
// real node service, and nothing is left behind.
func TestEveryBackendPasses(t *testing.T) {
	r := newRig(t)
	var seen []string
	cfg := r.config(selftest.AllBackends...)
	cfg.Progress = func(s selftest.Step) { seen = append(seen, s.Backend+" "+s.Name) }
	rep, err := selftest.Run(context.Background(), r.node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Steps {
		if s.Result != selftest.Pass {
			t.Errorf("%s %s: %s %s", s.Backend, s.Name, s.Result, s.Detail)
		}
		if s.RoundTrips == 0 && s.Name != "wire the plugin" {
			t.Errorf("%s %s made no host call", s.Backend, s.Name)
		}
	}
	if !rep.Passed() || len(rep.Leftovers) != 0 {
		t.Errorf("Passed() = %v, leftovers %q, not removed %q", rep.Passed(), rep.Leftovers, rep.NotRemoved)
	}
	for _, want := range []string{"disk expand", "disk unstage", "disk read back after the second stage", "disk-refs delete virtual disk",
		"smb create local share", "smb delete local user", "iscsi unstage: log out"} {
		if !slices.Contains(seen, want) {
			t.Errorf("no step %q among %q", want, seen)
		}
	}
	if rep.Windows.ComputerName == "" || len(rep.Run) != 8 {
		t.Errorf("report: %+v", rep)
	}
	r.nothingLeft(t)
}

// A failing step ends its backend's steps; what the backend made is
// removed; the other backends still run.
func TestFailedStepIsCleanedUp(t *testing.T) {
	r := newRig(t)
	if err := r.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Err: "internal"}); err != nil {
		t.Fatal(err)
	}
	rep, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk, selftest.BackendSMB))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() {
		t.Fatal("a run whose format failed passed")
	}
	out := strings.Join(steps(rep), "\n")
	for _, want := range []string{"disk stage: find, online, GPT, partition, format NTFS, mount: fail", "disk publish: skip",
		"disk delete virtual disk: skip", "smb unstage: pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if len(rep.NotRemoved) != 0 {
		t.Errorf("not removed: %q", rep.NotRemoved)
	}
	r.sim.Faults().Clear()
	r.nothingLeft(t)
}

// Interrupted (Ctrl-C) after a write, the run removes what it made.
func TestInterruptedRunCleansUp(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := r.config(selftest.AllBackends...)
	cfg.Progress = func(s selftest.Step) {
		if s.Backend == selftest.BackendDisk && s.Name == "write and read back" {
			cancel()
		}
	}
	rep, err := selftest.Run(ctx, r.node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Passed() {
		t.Errorf("Interrupted = %v, Passed() = %v", rep.Interrupted, rep.Passed())
	}
	if out := strings.Join(steps(rep), "\n"); !strings.Contains(out, "disk volume stats: skip") || !strings.Contains(out, "iscsi publish: skip") {
		t.Errorf("steps after the interrupt were not skipped:\n%s", out)
	}
	r.nothingLeft(t)
}

// A run that could not remove what it made says so; the next run removes
// it first and says so too.
func TestNextRunRemovesLeftovers(t *testing.T) {
	r := newRig(t)
	// The unstage and everything after fail: a volume stays staged and
	// published, the VHDX attached, the share and user in place.
	for _, op := range []string{sim.OpVolumesUnmount, sim.OpFilesRemove, sim.OpVirtualDiskDetach, sim.OpLocalSMBDeleteShare,
		sim.OpLocalSMBDeleteUser, sim.OpSMBUnmap} {
		if err := r.sim.Faults().Add(sim.Rule{Op: op, Err: "inuse"}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk, selftest.BackendSMB))
	if err != nil {
		t.Fatal(err)
	}
	if first.Passed() || len(first.NotRemoved) == 0 {
		t.Fatalf("a run that could not clean up: Passed() = %v, not removed %q", first.Passed(), first.NotRemoved)
	}
	r.sim.Faults().Clear()

	second, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk))
	if err != nil {
		t.Fatal(err)
	}
	left := strings.Join(second.Leftovers, "\n")
	for _, want := range []string{"run " + first.Run + ": unstaged volume " + selftest.Prefix + first.Run + "-disk",
		"removed share " + selftest.Prefix + first.Run, "removed local user " + selftest.Prefix + first.Run,
		"removed virtual disk", "run " + first.Run + ": removed directory"} {
		if !strings.Contains(left, want) {
			t.Errorf("leftovers report lacks %q:\n%s", want, left)
		}
	}
	if !second.Passed() {
		t.Errorf("the second run failed: %q %q", steps(second), second.NotRemoved)
	}
	r.nothingLeft(t)
}

// Interrupted while Windows still creates the local user (the call is
// abandoned at the interrupt and completes afterwards), the run cannot
// remove the user: it says so and keeps its directory, and the next run
// removes the user.
func TestInterruptedCreationIsRemovedByTheNextRun(t *testing.T) {
	r := newRig(t)
	if err := r.sim.Faults().Add(sim.Rule{Op: sim.OpLocalSMBCreateUser, Hang: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for r.sim.Faults().Hung(sim.OpLocalSMBCreateUser) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	first, err := selftest.Run(ctx, r.node, r.config(selftest.BackendSMB))
	if err != nil {
		t.Fatal(err)
	}
	if first.Passed() || !strings.Contains(strings.Join(first.NotRemoved, "\n"), "local user "+selftest.Prefix+first.Run) {
		t.Errorf("Passed() = %v, not removed %q; want the local user named", first.Passed(), first.NotRemoved)
	}
	r.sim.Faults().Clear() // the abandoned call completes: the user now exists
	for len(r.sim.Snapshot().LocalUsers) == 0 {
		time.Sleep(time.Millisecond)
	}
	second, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk))
	if err != nil {
		t.Fatal(err)
	}
	if left := strings.Join(second.Leftovers, "\n"); !strings.Contains(left, "removed local user "+selftest.Prefix+first.Run) {
		t.Errorf("leftovers report lacks the user:\n%s", left)
	}
	r.nothingLeft(t)
}

// Interrupted after it wrote its test file on the operator's share (a
// share selftest does not own), the run removes the file before it
// unpublishes: nothing of the run stays on the share.
func TestInterruptedRunLeavesNothingOnTheShare(t *testing.T) {
	r := newRig(t)
	if err := r.sim.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": "alice-password"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := r.config(selftest.BackendSMB)
	cfg.SMB = selftest.SMBTarget{Source: `//files/data`, User: "alice", Password: host.NewSecret("alice-password")}
	cfg.Progress = func(s selftest.Step) {
		if s.Name == "write and read back" {
			cancel()
		}
	}
	rep, err := selftest.Run(ctx, r.node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.NotRemoved) != 0 {
		t.Errorf("Interrupted = %v, not removed %q", rep.Interrupted, rep.NotRemoved)
	}
	entries, err := os.ReadDir(filepath.Join(r.sim.Dir(), "smb", "files", "data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left on the operator's share: %s", e.Name())
	}
	r.nothingLeft(t)
}

// staleDisks answers Get for a detached disk from a stale cache until the
// next rescan: what Windows' storage provider may do after a detach
// (undocumented either way).
type staleDisks struct {
	host.Disks
	last    host.Disk
	stale   bool
	rescans int
}

func (d *staleDisks) Get(ctx context.Context, n uint32) (host.Disk, error) {
	if d.stale && n == d.last.Number {
		return d.last, nil
	}
	disk, err := d.Disks.Get(ctx, n)
	if err == nil {
		d.last = disk
	}
	return disk, err
}

func (d *staleDisks) Rescan(ctx context.Context) error {
	d.stale = false
	d.rescans++
	return d.Disks.Rescan(ctx)
}

type detachNotice struct {
	host.VirtualDisks
	d *staleDisks
}

func (v detachNotice) Detach(ctx context.Context, path string) error {
	err := v.VirtualDisks.Detach(ctx, path)
	v.d.stale = err == nil
	return err
}

// A disk the host still lists right after the detach, and no longer after
// a rescan, passes the detach step.
func TestDetachedDiskListedUntilRescan(t *testing.T) {
	r := newRig(t)
	d := &staleDisks{Disks: r.node.Host.Disks}
	r.node.Host.Disks = d
	r.node.Admin.VirtualDisks = detachNotice{VirtualDisks: r.node.Admin.VirtualDisks, d: d}
	rep, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Errorf("failed: %q", steps(rep))
	}
	if d.rescans == 0 {
		t.Error("the stale disk was never rescanned away")
	}
	r.nothingLeft(t)
}

// A run sweeps only what dead runs of its own work directory left: the
// lock holds one work directory, so a share and user named for a run
// elsewhere (which may be running) are not its to remove.
func TestOtherWorkDirIsLeftAlone(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	other := selftest.Prefix + "0123abcd"
	dir := filepath.Join(t.TempDir(), other, "share")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	smb := r.node.Admin.LocalSMB
	if err := smb.CreateUser(ctx, other, selftest.NewPassword()); err != nil {
		t.Fatal(err)
	}
	if err := smb.CreateShare(ctx, other, dir, other); err != nil {
		t.Fatal(err)
	}
	rep, err := selftest.Run(ctx, r.node, r.config(selftest.BackendDisk))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() || len(rep.Leftovers) != 0 {
		t.Errorf("Passed() = %v, leftovers %q", rep.Passed(), rep.Leftovers)
	}
	st := r.sim.Snapshot()
	if len(st.LocalUsers) != 1 || len(st.LocalShares) != 1 {
		t.Errorf("the other run's user and share were touched: %d users, %d shares", len(st.LocalUsers), len(st.LocalShares))
	}
}

// Bad input: a share that does not answer fails the stage step with one
// line saying so; nothing is left.
func TestShareThatDoesNotAnswer(t *testing.T) {
	r := newRig(t)
	cfg := r.config(selftest.BackendSMB)
	cfg.SMB = selftest.SMBTarget{Source: `\\nosuchserver\share`, User: "alice", Password: host.NewSecret("pw")}
	rep, err := selftest.Run(context.Background(), r.node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	failed := failedSteps(rep)
	if len(failed) != 1 || !strings.HasPrefix(failed[0].Name, "stage") || !strings.Contains(failed[0].Detail, "nosuchserver") {
		t.Errorf("failed steps %+v, want the stage naming the server", failed)
	}
	r.nothingLeft(t)
}

// Without credentials (no --smb-credentials) the share is mapped as a
// volume with mapWithoutCredentials is: the plugin asks the server, which
// here wants a user, rather than refusing the volume for its missing
// secret; the failed stage names the share and the flag to give.
func TestShareWithoutCredentials(t *testing.T) {
	r := newRig(t)
	if err := r.sim.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": "alice-password"}}); err != nil {
		t.Fatal(err)
	}
	cfg := r.config(selftest.BackendSMB)
	cfg.SMB = selftest.SMBTarget{Source: `//files/data`}
	rep, err := selftest.Run(context.Background(), r.node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	failed := failedSteps(rep)
	if len(failed) != 1 || !strings.HasPrefix(failed[0].Detail, "Unauthenticated: //files/data: ") ||
		!strings.Contains(failed[0].Detail, "mapWithoutCredentials") || !strings.Contains(failed[0].Detail, "--smb-credentials") {
		t.Errorf("failed steps %+v, want the stage mapping without credentials, naming the share and --smb-credentials", failed)
	}
	r.nothingLeft(t)

	cfg.SMB = selftest.SMBTarget{Source: `//files/data`, User: "alice", Password: host.NewSecret("alice-password")}
	if rep, err := selftest.Run(context.Background(), r.node, cfg); err != nil || !rep.Passed() {
		t.Errorf("with credentials: %+v, %v", rep, err)
	}
	r.nothingLeft(t)
}

// A target that refuses the login names the target and the flag that
// gives CHAP, or that the flag's file holds the wrong CHAP.
func TestTargetRefusesTheLogin(t *testing.T) {
	r := newRig(t)
	for _, tt := range []struct {
		name       string
		user, pass string
		want       string
	}{
		{"no CHAP", "", "", "give the target's CHAP user and secret with --iscsi-chap FILE"},
		{"wrong CHAP", "node1", "wrong-secret12", "check the username= and password= lines of --iscsi-chap"},
	} {
		cfg := r.config(selftest.BackendISCSI)
		cfg.ISCSI.CHAPUser, cfg.ISCSI.CHAPSecret = tt.user, host.NewSecret(tt.pass)
		rep, err := selftest.Run(context.Background(), r.node, cfg)
		if err != nil {
			t.Fatal(err)
		}
		failed := failedSteps(rep)
		if len(failed) != 1 || !strings.HasPrefix(failed[0].Detail, "Unauthenticated: "+iqn+" at "+portal+", LUN 0: ") ||
			!strings.Contains(failed[0].Detail, tt.want) {
			t.Errorf("%s: failed steps %+v, want the stage naming the target and %q", tt.name, failed, tt.want)
		}
		r.nothingLeft(t)
	}
}

// failedSteps returns the steps of a report that failed.
func failedSteps(rep *selftest.Report) []selftest.Step {
	var failed []selftest.Step
	for _, s := range rep.Steps {
		if s.Result == selftest.Fail {
			failed = append(failed, s)
		}
	}
	return failed
}

// A second selftest on the node at once is refused.
func TestOneAtATime(t *testing.T) {
	r := newRig(t)
	started := make(chan struct{})
	release := make(chan struct{})
	cfg := r.config(selftest.BackendDisk)
	cfg.Progress = func(s selftest.Step) {
		if s.Name == "wire the plugin" {
			close(started)
			<-release
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := selftest.Run(context.Background(), r.node, cfg)
		done <- err
	}()
	<-started
	_, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk))
	close(release)
	if err == nil || !strings.Contains(err.Error(), "another selftest") {
		t.Errorf("a second run at once = %v, want refused", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConfigRefused(t *testing.T) {
	r := newRig(t)
	for name, mod := range map[string]func(*selftest.Config){
		"no backend":      func(c *selftest.Config) { c.Backends = nil },
		"unknown backend": func(c *selftest.Config) { c.Backends = []string{"nfs"} },
		"bad run ID":      func(c *selftest.Config) { c.Run = "XYZ" },
		"smb without a share": func(c *selftest.Config) {
			c.Backends, c.SMB = []string{selftest.BackendSMB}, selftest.SMBTarget{}
		},
		"iscsi without a target": func(c *selftest.Config) {
			c.Backends, c.ISCSI = []string{selftest.BackendISCSI}, selftest.ISCSITarget{}
		},
		"relative work directory": func(c *selftest.Config) { c.WorkDir = "work" },
	} {
		cfg := r.config(selftest.BackendDisk)
		mod(&cfg)
		if _, err := selftest.Run(context.Background(), r.node, cfg); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
	}
}

// TestWorkDirProtected: Run protects its work directory as the plugin's
// state directory (journal.ProtectDir) before it reads anything there, and
// a directory that protection refuses (another account owns it) stops the
// run with an error naming --work-dir, before the leftover sweep.
func TestWorkDirProtected(t *testing.T) {
	r := newRig(t)
	var protected []string
	selftest.SetProtectWorkDir(t, func(dir string) error {
		protected = append(protected, dir)
		return journal.ProtectDir(dir)
	})
	if _, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(protected, []string{r.work}) {
		t.Fatalf("protected %q, want the work directory %s", protected, r.work)
	}

	// A leftover of a dead run that a user planted is never acted on.
	if err := os.MkdirAll(filepath.Join(r.work, selftest.Prefix+"0123abcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	selftest.SetProtectWorkDir(t, func(dir string) error {
		return fmt.Errorf("%s: %w (owner S-1-5-21-1-2-3-1001)", dir, journal.ErrUntrustedOwner)
	})
	rep, err := selftest.Run(context.Background(), r.node, r.config(selftest.BackendDisk))
	if !errors.Is(err, journal.ErrUntrustedOwner) || !strings.Contains(err.Error(), "--work-dir") || rep != nil {
		t.Fatalf("Run in a directory a user owns = %v, %v; want refused naming --work-dir", rep, err)
	}
	if _, err := os.Stat(filepath.Join(r.work, selftest.Prefix+"0123abcd")); err != nil {
		t.Fatalf("the planted directory: %v", err)
	}
}
