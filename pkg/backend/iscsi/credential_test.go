//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// chapVol is a volume of LUN lun of iqnShared with session CHAP user and
// secret ("" user: no session CHAP).
func chapVol(id string, lun int, user, secret string) volume {
	if user == "" {
		return vol(id, "10.0.0.1", iqnShared, lun)
	}
	return vol(id, "10.0.0.1", iqnShared, lun, "sessionCHAPAuth", "true").with(
		"node.session.auth.username", user, "node.session.auth.password", secret)
}

// credentials returns what the journal records of the target's sessions
// and of volume id.
func (e *env) credentials(id string) (sessions, volume backend.Credential) {
	e.t.Helper()
	v, ok, err := e.journal().Note(context.Background(), iscsi.CredentialNotePrefix+iqnShared)
	if err != nil || !ok {
		e.t.Fatalf("note of the target's sessions: %v, %v", ok, err)
	}
	en, ok := e.journal().Get(context.Background(), id)
	if !ok {
		e.t.Fatalf("no journal entry of %s", id)
	}
	r, err := iscsi.DecodeRecord(en)
	if err != nil {
		e.t.Fatal(err)
	}
	return backend.DecodeCredential(v), r.Credential()
}

// TestAnotherCHAPUserIsRefused: while the target's sessions, logged in
// with one CHAP user, serve other staged volumes, a volume of another
// CHAP user, or without CHAP, is refused: it would reach its LUN with
// their credentials. A CHAP name that differs only in case is another
// user: targets compare CHAP names byte for byte. The message names the
// target, the user it is logged in as and what to do; nothing is logged
// in or out.
func TestAnotherCHAPUserIsRefused(t *testing.T) {
	e := newEnv(t, false)
	must(t, "stage v1", e.stage(chapVol("v1", 0, chapUser, chapSecret)))
	logins := e.logins(iqnShared)
	for _, tc := range []struct {
		name string
		v    volume
		user string
	}{
		{"another CHAP user", chapVol("v2", 1, "someone-else", chapSecret), "CHAP user someone-else"},
		{"no CHAP", chapVol("v2", 1, "", ""), "CHAP user (none: logged in without CHAP)"},
		{"the CHAP user in capitals", chapVol("v2", 1, strings.ToUpper(chapUser), "another-secret1"), "CHAP user " + strings.ToUpper(chapUser)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.stage(tc.v)
			wantCode(t, "stage", err, codes.FailedPrecondition)
			for _, want := range []string{"target " + iqnShared + " is logged in as CHAP user " + chapUser, `"v1"`, "names " + tc.user,
				"give this volume the Secret of CHAP user " + chapUser} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
			if _, ok := e.journal().Get(context.Background(), "v2"); ok {
				t.Error("the refused stage left its journal entry")
			}
		})
	}
	if got := e.logins(iqnShared); got != logins || len(e.sessions(iqnShared)) != 1 {
		t.Errorf("%d logins and sessions %+v after the refusals, want %d logins and v1's session", got, e.sessions(iqnShared), logins)
	}
}

// TestCHAPSecretDrift: a volume of the same CHAP user with another secret
// (a rotation begun, or a wrong secret) uses the sessions other volumes
// use, since the node cannot check its secret without disturbing them,
// and its entry records the drift (never the secret). Alone on the
// target's sessions, it logs in again with its own secret, which checks
// it.
func TestCHAPSecretDrift(t *testing.T) {
	e := newEnv(t, false)
	must(t, "stage v1", e.stage(chapVol("v1", 0, chapUser, chapSecret)))
	const wrong = "Wrong-secret-12"
	must(t, "stage v2 with another secret", e.stage(chapVol("v2", 1, chapUser, wrong)))
	sessions, v1 := e.credentials("v1")
	_, v2 := e.credentials("v2")
	if sessions.Compare(v1, backend.CHAPNames) != backend.CredentialSame || sessions.Compare(v2, backend.CHAPNames) != backend.CredentialDrift {
		t.Fatalf("sessions %+v, v1 %+v, v2 %+v: want v1 the same and v2 drifted", sessions, v1, v2)
	}
	for _, c := range []backend.Credential{sessions, v1, v2} {
		if strings.Contains(c.SecretMAC, chapSecret) || strings.Contains(c.SecretMAC, wrong) {
			t.Fatal("a record holds a CHAP secret")
		}
	}

	// v1 and v2 are no longer staged there (their mount points gone, as
	// after a crash); a volume with the wrong secret logs in again.
	for _, id := range []string{"v1", "v2"} {
		if err := e.sim.Host().Volumes.Unmount(context.Background(), e.staging(id)); err != nil {
			t.Fatal(err)
		}
	}
	connects := e.sim.Count(sim.OpISCSIConnect)
	wantCode(t, "stage alone with the wrong secret", e.stage(chapVol("v3", 2, chapUser, wrong)), codes.Unauthenticated)
	if got := e.sim.Count(sim.OpISCSIConnect); got <= connects {
		t.Errorf("no login with the volume's own secret (%d logins, %d before)", got, connects)
	}
	if n := e.sim.Count(sim.OpISCSIDisconnect); n == 0 {
		t.Error("the sessions of the other secret were not logged out")
	}
}
