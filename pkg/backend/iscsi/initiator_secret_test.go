//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// initiatorNote is the note of the mutual-CHAP initiator secret.
const initiatorNote = "iscsi/initiator/chap-secret"

// initiatorRecord returns the note of the initiator secret as its fields.
func (e *env) initiatorRecord() map[string]any {
	e.t.Helper()
	v, ok, err := e.journal().Note(context.Background(), initiatorNote)
	if err != nil || !ok {
		e.t.Fatalf("note %s: %v, %v", initiatorNote, ok, err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// putLegacyInitiatorRecord writes the record of secret as earlier versions
// did (a salted SHA-256) for targets, while the plugin is stopped, and
// starts it again.
func (e *env) putLegacyInitiatorRecord(secret string, targets ...string) {
	e.t.Helper()
	if err := e.sim.Close(); err != nil {
		e.t.Fatal(err)
	}
	jr, err := journal.Open(e.jrDir)
	if err != nil {
		e.t.Fatal(err)
	}
	salt := []byte("0123456789abcdef")
	v, _ := json.Marshal(map[string]any{"salt": hex.EncodeToString(salt), "sha256": host.NewSecret(secret).Digest(salt), "targets": targets})
	if err := jr.PutNote(context.Background(), initiatorNote, string(v)); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

// TestInitiatorSecretRecord: the record of the node's mutual-CHAP
// initiator secret is a MAC under the node's credential key, like every
// other secret the backend records, never a salted hash that a copy of
// the note could be checked against guessed secrets with. A record
// earlier versions wrote is still compared (a different secret is a
// conflict, the same one is not) and is replaced by a MAC at the next
// login.
func TestInitiatorSecretRecord(t *testing.T) {
	e := newEnv(t, false)
	mutualVol := func(id, iqn, secret string) volume {
		return vol(id, "10.0.0.1", iqn, 0, "sessionCHAPAuth", "true").with(
			"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret,
			"node.session.auth.password_in", secret)
	}
	wantMAC := func(when string) {
		t.Helper()
		rec := e.initiatorRecord()
		if mac, _ := rec["mac"].(string); len(mac) != 64 || rec["sha256"] != nil || rec["salt"] != nil {
			t.Fatalf("%s: initiator secret record %v, want a MAC only", when, rec)
		}
	}
	must(t, "stage other", e.stage(mutualVol("other", iqnOther, otherMutual)))
	wantMAC("after a login")

	// An earlier version's record of another secret than the one the
	// first target needs, while the other target is logged in: refused.
	e.putLegacyInitiatorRecord(otherMutual, iqnOther)
	wantCode(t, "stage with another initiator secret than the legacy record's", e.stage(mutualVol("first", iqnMutual, mutualOK)), codes.FailedPrecondition)

	// An earlier version's record of the same secret: no conflict, and
	// the record becomes a MAC that lists both targets.
	e.putLegacyInitiatorRecord(mutualOK, iqnOther)
	must(t, "stage with the legacy record's initiator secret", e.stage(mutualVol("first", iqnMutual, mutualOK)))
	wantMAC("after a login over a legacy record")
	if got := e.initiatorRecord()["targets"]; !strings.Contains(strings.ToLower(strings.Join(toStrings(got), ",")), iqnOther) {
		t.Errorf("targets %v, want %s kept", got, iqnOther)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, x := range l {
		out[i], _ = x.(string)
	}
	return out
}
