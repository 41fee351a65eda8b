package secrets

import (
	"bytes"
	"context"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// TestRecordingsHoldNoSecret records every Windows host call that hands a
// secret to the executor (an SMB credential, CHAP secrets, the initiator's
// mutual-CHAP secret, selftest's local user's password), delivered and
// refused, and a selftest-style NetUserAdd, and finds none of the secrets
// in the recording in any encoding (--record-host-calls, selftest
// --record).
func TestRecordingsHoldNoSecret(t *testing.T) {
	ctx := context.Background()
	for _, sc := range sensitiveCalls {
		for _, refused := range []bool{false, true} {
			e := scripted.New(t)
			if sc.before != nil {
				sc.before(e)
			}
			reply := scripted.Reply{Result: winhost.Result{Out: map[string]any{
				"CreatediSCSISession": winhost.Instance{Path: "session-1", Class: "MSFT_iSCSISession",
					Props: map[string]any{"SessionIdentifier": "s-1", "IsConnected": true, "IsPersistent": true}},
			}}}
			if refused {
				reply = scripted.Reply{Err: sc.failure}
			}
			e.ExpectMatching(scripted.KindCall, func(scripted.Call) string { return "" }, reply)
			var buf bytes.Buffer
			rec, err := recording.NewRecorder(e, &buf, recording.Header{Source: recording.SourceScripted, Scenario: recording.ScenarioPlugin})
			if err != nil {
				t.Fatal(err)
			}
			err = sc.run(ctx, winhost.New(rec))
			if refused != (err != nil) {
				t.Fatalf("%s (refused %v): %v", sc.name, refused, err)
			}
			if rec.Calls() == 0 {
				t.Fatalf("%s: nothing recorded", sc.name)
			}
			checkNoLeak(t, sc.name+" recording", buf.String())
		}
	}

	e := scripted.New(t)
	e.ExpectMatching("NetUserAdd", func(c scripted.Call) string {
		if pw, ok := c.Args[1].(host.Secret); !ok || pw.Reveal() != smbPassword.value {
			return "the password did not reach the executor"
		}
		return ""
	}, scripted.Reply{})
	var buf bytes.Buffer
	rec, err := recording.NewRecorder(e, &buf, recording.Header{Source: recording.SourceScripted, Scenario: recording.ScenarioSelftest})
	if err != nil {
		t.Fatal(err)
	}
	if err := winhost.NewAdmin(rec).LocalSMB.CreateUser(ctx, "csiwn-st-1", host.NewSecret(smbPassword.value)); err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, "NetUserAdd recording", buf.String())
}
