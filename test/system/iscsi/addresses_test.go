//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// TestTargetAnsweringElsewhere: the portals of a multipath target answer
// on other addresses than the portals (host names; a redirecting array),
// so a session's connection never reports its portal. 50 stages and
// unstages of the target's LUNs, two staged at a time, leave exactly one
// session (and, being persistent, one persistent login) per portal while
// any LUN is staged, health never reports a path down, and nothing is
// left after the last unstage.
func TestTargetAnsweringElsewhere(t *testing.T) {
	for _, c := range []struct {
		name, iqn, portal, other string
	}{
		{"host names", iqnNamed, "array-a.example.com:3260", "array-b.example.com"},
		{"redirect", iqnMoved, "10.0.6.1", "10.0.6.2:3260"},
		{"a name and one of its addresses", iqnMixed, "array-c.example.com", "10.0.7.2"},
		{"a name whose first address is the other portal", iqnMixed2, "array-d.example.com", "10.0.8.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false)
			v := func(i int) volume {
				return vol(fmt.Sprintf("v%d", i), c.portal, c.iqn, i%4, "portals", c.other, "persistent", "true")
			}
			check := func(round int, want int) {
				t.Helper()
				ss := e.sessions(c.iqn)
				perPortal := map[string]int{}
				for _, s := range ss {
					perPortal[s.Portal]++
				}
				if len(ss) != want || (want > 0 && len(perPortal) != want) {
					t.Fatalf("round %d: sessions %+v, want %d (one per portal)", round, ss, want)
				}
				if n := e.logins(c.iqn); n != want {
					t.Fatalf("round %d: %d persistent logins, want %d", round, n, want)
				}
			}
			const rounds = 50
			for i := range rounds {
				must(t, fmt.Sprintf("round %d: stage", i), e.stage(v(i)))
				check(i, 2)
				if r := reasons(e.health(v(i))); len(r) != 0 {
					t.Fatalf("round %d: health %v, want none", i, r)
				}
				if i > 0 {
					must(t, fmt.Sprintf("round %d: unstage", i), e.unstage(v(i-1)))
					check(i, 2)
				}
			}
			must(t, "last unstage", e.unstage(v(rounds-1)))
			check(rounds, 0)
			if ps := e.portals(); len(ps) != 0 {
				t.Fatalf("portals left: %v", ps)
			}
		})
	}
}

// TestRestartForgetsNothing: after a plugin restart (the record in the
// journal is all that says which portal a redirected session went
// through) a stage of another LUN logs in nowhere again, and a reboot
// that brings the persistent logins back makes no third session.
func TestRestartForgetsNothing(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.6.1", iqnMoved, 0, "portals", "10.0.6.2", "persistent", "true")
	b := vol("b", "10.0.6.1", iqnMoved, 1, "portals", "10.0.6.2", "persistent", "true")
	must(t, "stage a", e.stage(a))
	e.restart()
	must(t, "stage b after a restart", e.stage(b))
	if n := len(e.sessions(iqnMoved)); n != 2 {
		t.Fatalf("%d sessions after a restart and a stage, want 2", n)
	}
	// The record watched the redirect (the sessions answer on 10.0.6.11
	// and 10.0.6.12); the reboot restores the persistent logins with new
	// session identifiers, which their addresses match to their portals:
	// no login is made again.
	e.reboot()
	must(t, "stage a after a reboot", e.stage(a))
	must(t, "stage b after a reboot", e.stage(b))
	if n := len(e.sessions(iqnMoved)); n != 2 {
		t.Fatalf("%d sessions after a reboot and two stages, want 2", n)
	}
	must(t, "unstage a", e.unstage(a))
	must(t, "unstage b", e.unstage(b))
	if n := len(e.sessions(iqnMoved)); n != 0 {
		t.Fatalf("%d sessions after the last unstage, want none", n)
	}
}

// TestRebootMakesNoSession: a persistent multipath target whose sessions
// answer on other addresses than its portals is staged, the node reboots
// (Windows replays the persistent logins; the sessions come back with new
// identifiers, which the record does not know) and its volumes are staged
// again: the restage matches the restored sessions to their portals and
// logs in nowhere, whether one LUN or several were staged before the
// reboot. With one LUN, what the record learned at the login is all that
// matches a redirected session: no later stage listed the sessions before
// the reboot.
func TestRebootMakesNoSession(t *testing.T) {
	for _, c := range []struct {
		name, iqn, portal, other string
		luns                     int
	}{
		{"redirect, one LUN", iqnMoved, "10.0.6.1", "10.0.6.2", 1},
		{"redirect, two LUNs", iqnMoved, "10.0.6.1", "10.0.6.2", 2},
		{"host names, one LUN", iqnNamed, "array-a.example.com", "array-b.example.com", 1},
		// The session through 10.0.7.2 answers on 10.0.7.2, which the
		// name also resolves to: it is 10.0.7.2's, not the name's.
		{"a name and one of its addresses, two LUNs", iqnMixed, "array-c.example.com", "10.0.7.2", 2},
		{"a name and one of its addresses, one LUN", iqnMixed, "array-c.example.com", "10.0.7.2", 1},
		// Both sessions answer on 10.0.8.2: one is the address's, the
		// other the name's.
		{"a name whose first address is the other portal", iqnMixed2, "array-d.example.com", "10.0.8.2", 2},
		{"the same, the address first", iqnMixed2, "10.0.8.2", "array-d.example.com", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false)
			var vols []volume
			for i := range c.luns {
				vols = append(vols, vol(fmt.Sprintf("v%d", i), c.portal, c.iqn, i, "portals", c.other, "persistent", "true"))
			}
			for _, v := range vols {
				must(t, "stage "+v.id, e.stage(v))
			}
			onePerPortal(t, e, c.iqn, "before the reboot", 2)
			e.reboot()
			for _, v := range vols {
				must(t, "stage "+v.id+" after the reboot", e.stage(v))
			}
			onePerPortal(t, e, c.iqn, "after the reboot and the restage", 2)
			for _, v := range vols {
				must(t, "unstage "+v.id, e.unstage(v))
			}
			onePerPortal(t, e, c.iqn, "after the last unstage", 0)
		})
	}
}

// onePerPortal checks that target iqn has want sessions, each through
// another portal, and as many persistent logins.
func onePerPortal(t *testing.T, e *env, iqn, when string, want int) {
	t.Helper()
	ss := e.sessions(iqn)
	perPortal := map[string]int{}
	for _, s := range ss {
		perPortal[s.Portal]++
	}
	if len(ss) != want || len(perPortal) != want {
		t.Fatalf("%s: %d sessions (by portal %v), want %d, one per portal", when, len(ss), perPortal, want)
	}
	if n := e.logins(iqn); n != want {
		t.Fatalf("%s: %d persistent logins, want %d", when, n, want)
	}
}

// TestSecondPersistentLogin: a session of a persistent multipath volume is
// logged out behind the plugin's back (its persistent login stays), and
// the restage logs in through its portal again, persistently. Whether
// Windows then lists one persistent login for the portal or two is
// uncertain (sim.WindowsAnswers.SecondPersistentLogin); with two, the
// reboot restores two sessions through the portal. Either way the restage
// after the reboot logs in nowhere, and the last unstage leaves no session
// and no persistent login, so that nothing comes back at the next boot.
func TestSecondPersistentLogin(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		answer   string
		logins   int // after the second login through portal 1
		restored int // sessions after the reboot
	}{
		{sim.SecondPersistentLoginReplace, 2, 2},
		{sim.SecondPersistentLoginAdd, 3, 3},
	} {
		t.Run(c.answer, func(t *testing.T) {
			e := newEnv(t, false)
			e.windows.SecondPersistentLogin = c.answer
			e.restart()
			v := vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1", "persistent", "true")
			must(t, "stage", e.stage(v))
			onePerPortal(t, e, iqnOpen, "after the stage", 2)
			for _, s := range e.sessions(iqnOpen) {
				if s.Portal == "10.0.0.1:3260" {
					must(t, "log out behind the plugin's back", e.sim.Host().ISCSI.Disconnect(ctx, host.ISCSISession{SessionID: s.ID}))
				}
			}
			must(t, "stage again", e.stage(v))
			if ss := e.sessions(iqnOpen); len(ss) != 2 || ss[0].Portal == ss[1].Portal {
				t.Fatalf("sessions after the restage: %+v, want one through each portal", ss)
			}
			if n := e.logins(iqnOpen); n != c.logins {
				t.Fatalf("%d persistent logins after the second login through 10.0.0.1, want %d", n, c.logins)
			}
			e.reboot()
			if n := len(e.sessions(iqnOpen)); n != c.restored {
				t.Fatalf("%d sessions after the reboot, want %d", n, c.restored)
			}
			logins := e.sim.Count(sim.OpISCSIConnect)
			must(t, "stage after the reboot", e.stage(v))
			if n := e.sim.Count(sim.OpISCSIConnect); n != logins {
				t.Fatalf("the stage after the reboot logged in %d times, want none", n-logins)
			}
			if r := reasons(e.health(v)); len(r) != 0 {
				t.Fatalf("health %v, want none", r)
			}
			must(t, "unstage", e.unstage(v))
			onePerPortal(t, e, iqnOpen, "after the unstage", 0)
			e.reboot()
			onePerPortal(t, e, iqnOpen, "after the unstage and a reboot", 0)
		})
	}
}

// TestLoginWithoutIdentifier: Connect logs in but cannot say which session
// it made (host.ErrSessionUnknown). The one session that appeared is the
// login's: the stage records it, and the unstage logs it out.
func TestLoginWithoutIdentifier(t *testing.T) {
	e := newEnv(t, false)
	v := vol("v", "10.0.6.1", iqnNoID, 0)
	must(t, "stage", e.stage(v))
	if n := len(e.sessions(iqnNoID)); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	must(t, "stage again", e.stage(v))
	must(t, "unstage", e.unstage(v))
	if n := len(e.sessions(iqnNoID)); n != 0 {
		t.Fatalf("%d sessions after the unstage, want none", n)
	}
	if !slices.Contains(e.sim.CallLog(), sim.OpISCSIConnect) {
		t.Fatalf("no login was made")
	}
}

// TestLoginNotAdoptedAmongSeveral: Connect logs in without saying which
// session it made (host.ErrSessionUnknown) and two new sessions appear
// (someone else logged in at the same moment). Which one is the login's
// cannot be told: the stage fails with Unavailable and an error that
// names both; neither is recorded, and neither is logged out (one of them
// is someone else's). The retry finds them through the portal's address
// and logs in nowhere; the last unstage logs out of the target.
func TestLoginNotAdoptedAmongSeveral(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	v := vol("v", "10.0.0.1", iqnTwo, 0)
	err := e.stage(v)
	wantCode(t, "stage", err, codes.Unavailable)
	ss := e.sessions(iqnTwo)
	if len(ss) != 2 {
		t.Fatalf("%d sessions after the failed stage, want both left", len(ss))
	}
	for _, s := range ss {
		if !strings.Contains(err.Error(), s.ID) {
			t.Errorf("the stage's error does not name session %s: %v", s.ID, err)
		}
	}
	if note, ok, err := e.journal().Note(ctx, iscsi.TargetNotePrefix+iqnTwo); err != nil || ok {
		t.Fatalf("the target's record after the failed stage: %q, %t, %v; want none (nothing adopted)", note, ok, err)
	}
	logins := e.sim.Count(sim.OpISCSIConnect)
	must(t, "stage again", e.stage(v))
	if n := e.sim.Count(sim.OpISCSIConnect); n != logins {
		t.Fatalf("the retry logged in %d more times, want none", n-logins)
	}
	if n := len(e.sessions(iqnTwo)); n != 2 {
		t.Fatalf("%d sessions after the retry, want the two", n)
	}
	must(t, "unstage", e.unstage(v))
	if n := len(e.sessions(iqnTwo)); n != 0 {
		t.Fatalf("%d sessions after the unstage, want none", n)
	}
}

// sessionQueries records the targets Sessions is asked about.
type sessionQueries struct {
	host.ISCSI
	mu   sync.Mutex
	iqns []string
}

func (q *sessionQueries) Sessions(ctx context.Context, iqn string) ([]host.ISCSISession, error) {
	q.mu.Lock()
	q.iqns = append(q.iqns, iqn)
	q.mu.Unlock()
	return q.ISCSI.Sessions(ctx, iqn)
}

func (q *sessionQueries) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.iqns
	q.iqns = nil
	return out
}

// TestStageAsksOnlyForItsTarget: a stage lists the sessions of its own
// target (and, for mutual CHAP, of the targets the initiator secret's
// record names), never every session of the node: that listing costs a
// round trip per session on Windows and ran under the target's and its
// portals' locks.
func TestStageAsksOnlyForItsTarget(t *testing.T) {
	e := newEnv(t, false)
	q := &sessionQueries{}
	e.wrap = func(h host.Host) host.Host {
		q.ISCSI = h.ISCSI
		h.ISCSI = q
		return h
	}
	e.restart()
	mutual := vol("mutual", "10.0.0.1", iqnMutual, 0, "sessionCHAPAuth", "true").with(
		"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret,
		"node.session.auth.password_in", mutualOK)
	for _, v := range []volume{
		vol("open", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1"),
		mutual,
		vol("named", "array-a.example.com", iqnNamed, 0, "portals", "array-b.example.com"),
	} {
		q.take()
		must(t, "stage "+v.id, e.stage(v))
		if asked := q.take(); slices.Contains(asked, "") {
			t.Fatalf("stage of %s listed every session of the node (Sessions(%q)): %q", v.id, "", asked)
		}
	}
}

// TestPersistentLoginWithoutSession: a persistent login whose target did
// not answer at boot has no session (Get-IscsiSession does not show it).
// The stock-take lists it all the same; the last unstage of the target
// removes it, so that Windows does not log in again at the next boot; and
// when only the plugin's record of the target's logins still names it (the
// journal entry is gone), the orphan sweep's release removes it.
func TestPersistentLoginWithoutSession(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	v := vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1", "persistent", "true")
	down := func() {
		t.Helper()
		must(t, "portal 1 down", e.sim.SetPortalReachable(portal1, false))
		must(t, "portal 2 down", e.sim.SetPortalReachable(portal2, false))
		e.reboot()
		if n := len(e.sessions(iqnOpen)); n != 0 || e.logins(iqnOpen) != 2 {
			t.Fatalf("after a reboot with the target down: %d sessions and %d persistent logins, want 0 and 2", n, e.logins(iqnOpen))
		}
	}
	must(t, "stage", e.stage(v))
	down()
	rep, err := e.plugin.TakeStock(ctx)
	must(t, "take stock", err)
	var listed []string
	for _, r := range rep.Resources {
		if r.Kind == inventory.KindISCSIPersistentLogin && r.Target == iqnOpen {
			listed = append(listed, r.ID+" "+r.Status+" "+string(r.Owner))
		}
	}
	want := []string{iqnOpen + "@10.0.0.1:3260 no session plugin", iqnOpen + "@10.0.1.1:3260 no session plugin"}
	if !slices.Equal(listed, want) {
		t.Fatalf("persistent logins in the stock-take: %q, want %q", listed, want)
	}
	must(t, "unstage", e.unstage(v))
	if n := e.logins(iqnOpen); n != 0 {
		t.Fatalf("%d persistent logins after the last unstage, want none", n)
	}

	// Only the record of the target's logins names it now.
	must(t, "portal 1 up", e.sim.SetPortalReachable(portal1, true))
	must(t, "portal 2 up", e.sim.SetPortalReachable(portal2, true))
	must(t, "stage again", e.stage(v))
	down()
	// The journal entry is dropped by hand, with the plugin stopped.
	must(t, "stop the plugin", e.sim.Close())
	jr, err := journal.Open(e.jrDir)
	must(t, "open the journal", err)
	must(t, "drop the journal entry", jr.Delete(ctx, v.id))
	e.open()
	rep, err = e.plugin.TakeStock(ctx)
	must(t, "take stock", err)
	orphans := 0
	for _, it := range rep.Unexplained {
		if it.Kind == inventory.KindISCSIPersistentLogin {
			orphans++
		}
	}
	if orphans != 2 {
		t.Fatalf("%d persistent logins reported as the plugin's orphans, want 2: %+v", orphans, rep.Unexplained)
	}
	unused, err := e.plugin.ReleaseUnused(ctx, iscsi.TargetKey(iqnOpen), true)
	if err != nil || !unused {
		t.Fatalf("ReleaseUnused = %t, %v; want the target's logins removed", unused, err)
	}
	if n := e.logins(iqnOpen); n != 0 {
		t.Fatalf("%d persistent logins after the sweep's release, want none", n)
	}
}
