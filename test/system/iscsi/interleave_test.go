//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

func (e *env) stageAsync(v volume) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- e.stage(v) }()
	return ch
}

// iscsiOpsSince returns the iSCSI host calls since mark.
func (e *env) iscsiOpsSince(mark int) []string {
	var out []string
	for _, op := range e.sim.OpsSince(mark) {
		if strings.HasPrefix(op, "iscsi.") {
			out = append(out, op)
		}
	}
	return out
}

// TestTwoFirstStagesOfATarget: two LUNs of a target nobody is logged in to,
// staged at once: one logs in, the other waits for that login (making no
// iSCSI call meanwhile) and uses it; the target is logged in to once.
func TestTwoFirstStagesOfATarget(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.0.1", iqnOpen, 0)
	b := vol("b", "10.0.0.1", iqnOpen, 1)
	must(t, "hang rule", e.sim.Faults().Add(sim.Rule{Op: sim.OpISCSIConnect, Nth: 1, Hang: true}))
	first := e.stageAsync(a)
	simnode.WaitUntil(t, "the first stage reaches its login", func() bool { return e.sim.Faults().Hung(sim.OpISCSIConnect) == 1 })
	mark := e.sim.Mark()
	second := e.stageAsync(b)
	simnode.WaitUntil(t, "the second stage inspects its staging path", func() bool { return len(e.sim.OpsSince(mark)) > 0 })
	simnode.Settle()
	if ops := e.iscsiOpsSince(mark); len(ops) != 0 {
		t.Fatalf("the second stage called %v while the first logged in: it must wait for the login", ops)
	}
	e.sim.Faults().Release(sim.OpISCSIConnect)
	must(t, "first stage", <-first)
	must(t, "second stage", <-second)
	if n := e.sim.Count(sim.OpISCSIConnect); n != 1 {
		t.Fatalf("%d logins, want 1", n)
	}
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	must(t, "unstage a", e.unstage(a))
	must(t, "unstage b", e.unstage(b))
	if n := len(e.sessions(iqnOpen)); n != 0 || len(e.portals()) != 0 {
		t.Fatalf("%d sessions and portals %v left", n, e.portals())
	}
}

// TestStageWhileTheLastOtherLUNUnstages: the stage of one LUN and the
// unstage of the target's last other LUN meet in either order: the
// sessions are never logged out under the stage, logged out at most once,
// and nothing is left when the stage fails.
func TestStageWhileTheLastOtherLUNUnstages(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hang is held while the other RPC runs: the unstage's logout
		// (the unstage decided first) or the stage's disk listing (the
		// stage is past its login check).
		hang  string
		stage volume
		// fail, when set, fails the stage's first call of this op.
		fail      string
		stageCode codes.Code
		// from the unstage on
		wantLogins, wantLogouts int
		wantSessions            int
	}{
		{name: "unstage first: the stage logs in again", hang: sim.OpISCSIDisconnect, stage: vol("b", "10.0.0.1", iqnOpen, 1),
			wantLogins: 1, wantLogouts: 1, wantSessions: 1},
		{name: "stage first: the unstage keeps the session", hang: sim.OpDisksList, stage: vol("b", "10.0.0.1", iqnOpen, 1),
			wantLogins: 0, wantLogouts: 0, wantSessions: 1},
		{name: "stage first and fails: it logs out", hang: sim.OpDisksList, stage: vol("b", "10.0.0.1", iqnOpen, 1),
			fail: sim.OpDisksInitialize, stageCode: codes.Internal, wantLogins: 0, wantLogouts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			a := vol("a", "10.0.0.1", iqnOpen, 0)
			must(t, "stage a", e.stage(a))
			logins, logouts := e.sim.Count(sim.OpISCSIConnect), e.sim.Count(sim.OpISCSIDisconnect)
			must(t, "hang rule", e.sim.Faults().Add(sim.Rule{Op: tc.hang, Nth: 1, Hang: true}))
			if tc.fail != "" {
				must(t, "fault rule", e.sim.Faults().Add(sim.Rule{Op: tc.fail, Nth: 1, Err: "internal"}))
			}
			hung := func() bool { return e.sim.Faults().Hung(tc.hang) == 1 }
			var stageErr, unstageErr error
			if tc.hang == sim.OpISCSIDisconnect {
				unstaged := make(chan error, 1)
				go func() { unstaged <- e.unstage(a) }()
				simnode.WaitUntil(t, "the unstage reaches its logout", hung)
				mark := e.sim.Mark()
				staged := e.stageAsync(tc.stage)
				simnode.WaitUntil(t, "the stage inspects its staging path", func() bool { return len(e.sim.OpsSince(mark)) > 0 })
				simnode.Settle()
				if ops := e.iscsiOpsSince(mark); len(ops) != 0 {
					t.Fatalf("the stage called %v while the unstage logged out: it must wait", ops)
				}
				e.sim.Faults().Release(tc.hang)
				unstageErr, stageErr = <-unstaged, <-staged
			} else {
				staged := e.stageAsync(tc.stage)
				simnode.WaitUntil(t, "the stage reaches its disk listing", hung)
				unstageErr = e.unstage(a) // does not wait for the stage
				if n := e.sim.Count(sim.OpISCSIDisconnect) - logouts; n != 0 {
					t.Fatalf("%d logouts while a stage of the target runs, want 0", n)
				}
				e.sim.Faults().Release(tc.hang)
				stageErr = <-staged
			}
			must(t, "unstage a", unstageErr)
			wantCode(t, "stage", stageErr, tc.stageCode)
			if n := e.sim.Count(sim.OpISCSIConnect) - logins; n != tc.wantLogins {
				t.Errorf("%d logins, want %d", n, tc.wantLogins)
			}
			if n := e.sim.Count(sim.OpISCSIDisconnect) - logouts; n != tc.wantLogouts {
				t.Errorf("%d logouts, want %d", n, tc.wantLogouts)
			}
			if n := len(e.sessions(iqnOpen)); n != tc.wantSessions {
				t.Errorf("%d sessions, want %d", n, tc.wantSessions)
			}
			if tc.wantSessions > 0 {
				must(t, "unstage "+tc.stage.id, e.unstage(tc.stage))
			}
			if n := len(e.sessions(iqnOpen)); n != 0 || len(e.portals()) != 0 {
				t.Fatalf("%d sessions and portals %v left", n, e.portals())
			}
		})
	}
}

// TestReleaseUnused: the sweep's questions about a target and a portal get
// the answers of the last unstage, through the same transition and lock.
func TestReleaseUnused(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.0.1", iqnOpen, 0)
	must(t, "stage a", e.stage(a))
	target := "iscsi:" + strings.ToLower(iqnOpen)
	portal := "iscsi-portal:" + host.Portal{Address: "10.0.0.1", Port: 3260}.String()
	for _, key := range []string{target, portal} {
		for _, remove := range []bool{false, true} {
			unused, err := e.plugin.ReleaseUnused(e.ctx(), key, remove)
			if err != nil || unused {
				t.Fatalf("ReleaseUnused(%s, remove %t) while a is staged = %t, %v; want false", key, remove, unused, err)
			}
		}
	}
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	// The plugin loses its state (a reinstall with an empty state
	// directory): nothing uses the target any more as far as it knows.
	must(t, "unmount behind the plugin's back", e.sim.Host().Volumes.Unmount(e.ctx(), e.staging(a.id)))
	unused, err := e.plugin.ReleaseUnused(e.ctx(), target, false)
	if err != nil || !unused || len(e.sessions(iqnOpen)) != 1 {
		t.Fatalf("report: unused %t, %v, %d sessions; want true and the session kept", unused, err, len(e.sessions(iqnOpen)))
	}
	unused, err = e.plugin.ReleaseUnused(e.ctx(), target, true)
	if err != nil || !unused {
		t.Fatalf("remove: unused %t, %v; want true", unused, err)
	}
	if n := len(e.sessions(iqnOpen)); n != 0 || len(e.portals()) != 0 {
		t.Fatalf("%d sessions and portals %v left after the target was released", n, e.portals())
	}
	if _, err := e.plugin.ReleaseUnused(e.ctx(), "iscsi-portal:not a portal", true); err == nil {
		t.Fatal("ReleaseUnused of a bad portal key succeeded")
	}
}

// TestReleaseUnusedLeavesWhatIsMadeSince: the sweep's view is a snapshot.
// When the plugin logged out of a target and removed its portal (its last
// volume unstaged) and an administrator added the portal and logged in
// again before the sweep asks, no journal entry names either: they are
// not unused, and neither a report nor a clean round touches them.
func TestReleaseUnusedLeavesWhatIsMadeSince(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.0.1", iqnOpen, 0)
	must(t, "stage a", e.stage(a))
	must(t, "unstage a", e.unstage(a))
	p := host.Portal{Address: "10.0.0.1", Port: 3260}
	h := e.sim.Host()
	must(t, "add the portal as an administrator", h.ISCSI.AddPortal(e.ctx(), p, "", nil))
	if _, err := h.ISCSI.Connect(e.ctx(), host.ConnectRequest{TargetIQN: iqnOpen, Portal: p}); err != nil {
		t.Fatalf("log in as an administrator: %v", err)
	}
	target := "iscsi:" + strings.ToLower(iqnOpen)
	portal := "iscsi-portal:" + p.String()
	disconnects, removals := e.sim.Count(sim.OpISCSIDisconnect), e.sim.Count(sim.OpISCSIRemovePortal)
	for _, key := range []string{target, portal} {
		for _, remove := range []bool{false, true} {
			unused, err := e.plugin.ReleaseUnused(e.ctx(), key, remove)
			if err != nil || unused {
				t.Fatalf("ReleaseUnused(%s, remove %t) of what an administrator made = %t, %v; want false", key, remove, unused, err)
			}
		}
	}
	if n, m := e.sim.Count(sim.OpISCSIDisconnect)-disconnects, e.sim.Count(sim.OpISCSIRemovePortal)-removals; n+m != 0 {
		t.Errorf("%d logouts and %d portal removals of what the plugin did not make", n, m)
	}
	if n := len(e.sessions(iqnOpen)); n != 1 || len(e.portals()) != 1 {
		t.Fatalf("%d sessions and portals %v; want the administrator's session and portal kept", n, e.portals())
	}
}
