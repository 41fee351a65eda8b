//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %s, want %s (err: %v)", what, got, want, err)
	}
}

// TestLifecycle stages, publishes, writes, unstages, restages and reads
// back each kind of volume, and checks the sessions and portals it leaves.
func TestLifecycle(t *testing.T) {
	tests := []struct {
		name      string
		v         volume
		iqn       string
		sessions  int
		multipath bool
		portals   int // registered while staged
	}{
		{name: "single portal", v: vol("v", "10.0.0.1", iqnOpen, 0), iqn: iqnOpen, sessions: 1, portals: 1},
		{name: "two portals with multipath", iqn: iqnOpen, sessions: 2, multipath: true, portals: 2,
			v: vol("v", "10.0.0.1:3260", iqnOpen, 1, "portals", `["10.0.1.1"]`)},
		{name: "one-way CHAP", iqn: iqnCHAP, sessions: 1, portals: 1,
			v: vol("v", "10.0.0.1", iqnCHAP, 0, "sessionCHAPAuth", "true").with(
				"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret)},
		{name: "mutual CHAP", iqn: iqnMutual, sessions: 1, portals: 1,
			v: vol("v", "10.0.0.1", iqnMutual, 0, "sessionCHAPAuth", "true").with(
				"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret,
				"node.session.auth.password_in", mutualOK)},
		{name: "discovery CHAP", iqn: iqnDisc, sessions: 1, portals: 1,
			v: vol("v", "10.0.2.1:3261", iqnDisc, 0, "discoveryCHAPAuth", "true").with(
				"node.sendtargets.auth.username", discUser, "node.sendtargets.auth.password", discSecret)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			must(t, "stage", e.stage(tc.v))
			ss := e.sessions(tc.iqn)
			if len(ss) != tc.sessions {
				t.Fatalf("%d sessions, want %d", len(ss), tc.sessions)
			}
			for _, s := range ss {
				if s.Multipath != tc.multipath || !s.Persistent {
					t.Errorf("session %s: multipath %t persistent %t, want %t and true", s.ID, s.Multipath, s.Persistent, tc.multipath)
				}
			}
			if n := e.logins(tc.iqn); n != tc.sessions {
				t.Errorf("%d persistent logins, want %d", n, tc.sessions)
			}
			if n := len(e.portals()); n != tc.portals {
				t.Errorf("portals %v, want %d", e.portals(), tc.portals)
			}
			// A repeated stage is a no-op.
			must(t, "repeated stage", e.stage(tc.v))
			if n := len(e.sessions(tc.iqn)); n != tc.sessions {
				t.Fatalf("after repeated stage: %d sessions, want %d", n, tc.sessions)
			}

			must(t, "publish", e.publish(tc.v))
			e.writeFile(tc.v, "hello.txt", "from "+tc.name)
			must(t, "unpublish", e.unpublish(tc.v))
			must(t, "unstage", e.unstage(tc.v))
			if n := len(e.sessions(tc.iqn)); n != 0 {
				t.Fatalf("after unstage: %d sessions, want 0", n)
			}
			if n := e.logins(tc.iqn); n != 0 {
				t.Errorf("after unstage: %d persistent logins, want 0", n)
			}
			if p := e.portals(); len(p) != 0 {
				t.Errorf("after unstage: portals %v, want none", p)
			}
			must(t, "repeated unstage", e.unstage(tc.v))

			must(t, "restage", e.stage(tc.v))
			must(t, "republish", e.publish(tc.v))
			if got := e.readFile(tc.v, "hello.txt"); got != "from "+tc.name {
				t.Fatalf("read back %q", got)
			}
			must(t, "unpublish", e.unpublish(tc.v))
			must(t, "unstage", e.unstage(tc.v))
		})
	}
}

// TestCHAPFailures: a rejected secret is Unauthenticated, its value is in
// no message, and the failed stage leaves no session or portal behind.
func TestCHAPFailures(t *testing.T) {
	const wrong = "wrong-secret-99"
	tests := []struct {
		name string
		v    volume
	}{
		{"wrong session secret", vol("v", "10.0.0.1", iqnCHAP, 0, "sessionCHAPAuth", "true").with(
			"node.session.auth.username", chapUser, "node.session.auth.password", wrong)},
		{"session CHAP not offered", vol("v", "10.0.0.1", iqnCHAP, 0)},
		{"wrong mutual secret", vol("v", "10.0.0.1", iqnMutual, 0, "sessionCHAPAuth", "true").with(
			"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret,
			"node.session.auth.password_in", wrong)},
		{"wrong discovery secret", vol("v", "10.0.2.1:3261", iqnDisc, 0, "discoveryCHAPAuth", "true").with(
			"node.sendtargets.auth.username", discUser, "node.sendtargets.auth.password", wrong)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			err := e.stage(tc.v)
			wantCode(t, "stage", err, codes.Unauthenticated)
			for _, s := range []string{wrong, chapSecret, discSecret} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error reveals a secret: %v", err)
				}
			}
			if ss := e.sim.Snapshot().Sessions; len(ss) != 0 {
				t.Errorf("sessions left: %+v", ss)
			}
			if p := e.portals(); len(p) != 0 {
				t.Errorf("portals left: %v", p)
			}
		})
	}
}

// TestHostFailures maps the host's failures onto gRPC codes and checks the
// rollback.
func TestHostFailures(t *testing.T) {
	tests := []struct {
		name  string
		v     volume
		setup func(*env)
		want  codes.Code
	}{
		{name: "portal unreachable", v: vol("v", "10.0.0.1", iqnOpen, 0), want: codes.Unavailable,
			setup: func(e *env) { must(e.t, "portal down", e.sim.SetPortalReachable(portal1, false)) }},
		{name: "all multipath portals unreachable", want: codes.Unavailable,
			v: vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1"),
			setup: func(e *env) {
				must(e.t, "portal down", e.sim.SetPortalReachable(portal1, false))
				must(e.t, "portal down", e.sim.SetPortalReachable(portal2, false))
			}},
		{name: "nothing serves the portal", v: vol("v", "10.9.9.9", iqnOpen, 0), want: codes.Unavailable},
		{name: "target not on the portal", v: vol("v", "10.0.2.1:3261", iqnOpen, 0, "discoveryCHAPAuth", "true").with(
			"node.sendtargets.auth.username", discUser, "node.sendtargets.auth.password", discSecret), want: codes.NotFound},
		{name: "LUN missing", v: vol("v", "10.0.0.1", iqnOpen, 7), want: codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			if tc.setup != nil {
				tc.setup(e)
			}
			wantCode(t, "stage", e.stageCtx(e.ctx(), tc.v), tc.want)
			if ss := e.sim.Snapshot().Sessions; len(ss) != 0 {
				t.Errorf("sessions left: %+v", ss)
			}
			if p := e.portals(); len(p) != 0 {
				t.Errorf("portals left: %v", p)
			}
		})
	}
}

// TestBadParameters: invalid portals, IQNs and secrets are InvalidArgument
// naming the key, before any host call.
func TestBadParameters(t *testing.T) {
	tests := []struct {
		name string
		v    volume
		key  string
	}{
		{"port out of range", vol("v", "10.0.0.1:70000", iqnOpen, 0), "targetPortal"},
		{"port zero", vol("v", "10.0.0.1:0", iqnOpen, 0), "targetPortal"},
		{"unclosed IPv6", vol("v", "[fe80::1", iqnOpen, 0), "targetPortal"},
		{"IPv6 zone", vol("v", "[fe80::1%eth0]:3260", iqnOpen, 0), "targetPortal"},
		{"bad portal entry", vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1, bad host!"), "portals"},
		{"not an iSCSI name", vol("v", "10.0.0.1", "target-a", 0, "backend", "iscsi"), "iqn"},
		{"month 13", vol("v", "10.0.0.1", "iqn.2024-13.test.array:a", 0), "iqn"},
		{"short eui", vol("v", "10.0.0.1", "eui.0123", 0), "iqn"},
		{"LUN not a number", vol("v", "10.0.0.1", iqnOpen, 0, "lun", "zero"), "lun"},
		{"CHAP user missing", vol("v", "10.0.0.1", iqnCHAP, 0, "sessionCHAPAuth", "true").with(
			"node.session.auth.password", chapSecret), "node.session.auth.username"},
		{"CHAP secret too short", vol("v", "10.0.0.1", iqnCHAP, 0, "sessionCHAPAuth", "true").with(
			"node.session.auth.username", chapUser, "node.session.auth.password", "short"), "node.session.auth.password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			err := e.stage(tc.v)
			wantCode(t, "stage", err, codes.InvalidArgument)
			if !strings.Contains(status.Convert(err).Message(), tc.key) {
				t.Fatalf("message %q does not name %s", status.Convert(err).Message(), tc.key)
			}
			for _, op := range sim.AllOps {
				if strings.HasPrefix(op, "iscsi.") && e.sim.Count(op) > 0 {
					t.Fatalf("%s called before the parameters were validated", op)
				}
			}
		})
	}
}

// TestTwoLUNsOnOneTarget: the target's sessions stay until the last of
// its volumes is unstaged, also when the plugin restarts in between.
func TestTwoLUNsOnOneTarget(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "same process"
		if restart {
			name = "restart between"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, false)
			a := vol("a", "10.0.0.1", iqnOpen, 0)
			b := vol("b", "10.0.0.1", iqnOpen, 1)
			must(t, "stage a", e.stage(a))
			must(t, "stage b", e.stage(b))
			if n := len(e.sessions(iqnOpen)); n != 1 {
				t.Fatalf("%d sessions for two LUNs, want 1", n)
			}
			if restart {
				e.restart()
			}
			must(t, "unstage a", e.unstage(a))
			if n := len(e.sessions(iqnOpen)); n != 1 {
				t.Fatalf("after the first unstage: %d sessions, want 1", n)
			}
			if len(e.portals()) != 1 {
				t.Fatalf("portal removed while b uses it")
			}
			if restart {
				e.restart()
			}
			must(t, "publish b", e.publish(b))
			e.writeFile(b, "b.txt", "b")
			must(t, "unpublish b", e.unpublish(b))
			must(t, "unstage b", e.unstage(b))
			if n := len(e.sessions(iqnOpen)); n != 0 {
				t.Fatalf("after the last unstage: %d sessions, want 0", n)
			}
			if p := e.portals(); len(p) != 0 {
				t.Fatalf("portals left: %v", p)
			}
		})
	}
}

// TestUnstageAfterCrashBeforeLogout: an unstage that unmounted but failed
// to log out is finished by the retry, whose staging path holds nothing.
func TestUnstageAfterCrashBeforeLogout(t *testing.T) {
	e := newEnv(t, false)
	v := vol("v", "10.0.0.1", iqnOpen, 0)
	must(t, "stage", e.stage(v))
	must(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpISCSIDisconnect, Nth: 1, Err: "internal"}))
	wantCode(t, "unstage", e.unstage(v), codes.Internal)
	e.restart()
	must(t, "retried unstage", e.unstage(v))
	if n := len(e.sessions(iqnOpen)); n != 0 {
		t.Fatalf("%d sessions after the retry, want 0", n)
	}
	if _, ok := e.journal().Get(context.Background(), v.id); ok {
		t.Fatal("journal entry left")
	}
}

// TestReboot: persistent logins come back after a reboot and the volume
// is usable again after the restage kubelet does; non-persistent sessions
// are gone and the restage logs in again.
func TestReboot(t *testing.T) {
	for _, persistent := range []bool{true, false} {
		t.Run("persistent="+map[bool]string{true: "true", false: "false"}[persistent], func(t *testing.T) {
			e := newEnv(t, false)
			v := vol("v", "10.0.0.1", iqnOpen, 0, "persistent", map[bool]string{true: "true", false: "false"}[persistent],
				"portals", "10.0.1.1")
			must(t, "stage", e.stage(v))
			must(t, "publish", e.publish(v))
			e.writeFile(v, "data.txt", "before reboot")
			e.reboot()
			want := 0
			if persistent {
				want = 2
			}
			if n := len(e.sessions(iqnOpen)); n != want {
				t.Fatalf("after reboot: %d sessions, want %d", n, want)
			}
			must(t, "restage after reboot", e.stage(v))
			if n := len(e.sessions(iqnOpen)); n != 2 {
				t.Fatalf("after restage: %d sessions, want 2", n)
			}
			must(t, "publish after reboot", e.publish(v))
			if got := e.readFile(v, "data.txt"); got != "before reboot" {
				t.Fatalf("read back %q", got)
			}
			must(t, "unpublish", e.unpublish(v))
			must(t, "unstage", e.unstage(v))
			if n := len(e.sessions(iqnOpen)); n != 0 {
				t.Fatalf("after unstage: %d sessions", n)
			}
			if n := e.logins(iqnOpen); n != 0 {
				t.Fatalf("after unstage: %d persistent logins", n)
			}
			e.reboot()
			if n := len(e.sessions(iqnOpen)); n != 0 {
				t.Fatalf("a session came back after unstage and reboot: %d", n)
			}
		})
	}
}

// TestLateLUN: a LUN that shows up only after rescans is waited for.
func TestLateLUN(t *testing.T) {
	e := newEnv(t, false)
	v := vol("v", "10.0.0.1", iqnLate, 3)
	must(t, "stage", e.stage(v))
	if n := e.sim.Count(sim.OpDisksRescan); n < 2 {
		t.Fatalf("%d rescans, want at least 2", n)
	}
	must(t, "unstage", e.unstage(v))
}

// TestMultipathPathDown: a multipath stage with one path down succeeds,
// health says PathDown, and a later stage adds the missing path; with every
// path down health says SessionLost.
func TestMultipathPathDown(t *testing.T) {
	e := newEnv(t, false)
	v := vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1")
	must(t, "portal down", e.sim.SetPortalReachable(portal2, false))
	must(t, "stage with one path down", e.stage(v))
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	if r := reasons(e.health(v)); !slices.Contains(r, "PathDown") {
		t.Fatalf("health %v, want PathDown", r)
	}
	must(t, "portal up", e.sim.SetPortalReachable(portal2, true))
	must(t, "restage", e.stage(v))
	if n := len(e.sessions(iqnOpen)); n != 2 {
		t.Fatalf("after restage: %d sessions, want 2", n)
	}
	if r := reasons(e.health(v)); len(r) != 0 {
		t.Fatalf("health %v, want none", r)
	}
	must(t, "portal down", e.sim.SetPortalReachable(portal1, false))
	must(t, "portal down", e.sim.SetPortalReachable(portal2, false))
	if r := reasons(e.health(v)); !slices.Contains(r, "SessionLost") {
		t.Fatalf("health %v, want SessionLost", r)
	}
}

func reasons(hs []*csi.VolumeHealth_VolumeHealthEntry) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.GetReason())
	}
	return out
}

// A persistent volume that reuses sessions another volume made without
// persistence registers them, so that they come back after a reboot as the
// contract promises.
func TestReusedSessionsBecomePersistent(t *testing.T) {
	e := newEnv(t, false)
	transient := vol("transient", "10.0.0.1", iqnOpen, 0, "persistent", "false", "portals", "10.0.1.1")
	durable := vol("durable", "10.0.0.1", iqnOpen, 1, "persistent", "true", "portals", "10.0.1.1")
	must(t, "stage the transient volume", e.stage(transient))
	if n := e.logins(iqnOpen); n != 0 {
		t.Fatalf("persistent logins after a non-persistent stage: %d", n)
	}
	must(t, "stage the persistent volume", e.stage(durable))
	if n := e.logins(iqnOpen); n != 2 {
		t.Fatalf("persistent logins after the persistent stage: %d, want 2 (one per portal)", n)
	}
	e.reboot()
	if n := len(e.sessions(iqnOpen)); n != 2 {
		t.Fatalf("after reboot: %d sessions, want 2", n)
	}
}
