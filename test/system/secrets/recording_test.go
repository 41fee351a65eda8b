package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/selftest"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
	"github.com/wincsi/csi-windows-node/test/harness/leakcheck"
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
			leakcheck.CheckNoLeak(t, sc.name+" recording", buf.String())
		}
	}

	e := scripted.New(t)
	e.ExpectMatching("NetUserAdd", func(c scripted.Call) string {
		if pw, ok := c.Args[1].(host.Secret); !ok || pw.Reveal() != leakcheck.SMBPassword.Value {
			return "the password did not reach the executor"
		}
		return ""
	}, scripted.Reply{})
	var buf bytes.Buffer
	rec, err := recording.NewRecorder(e, &buf, recording.Header{Source: recording.SourceScripted, Scenario: recording.ScenarioSelftest})
	if err != nil {
		t.Fatal(err)
	}
	if err := winhost.NewAdmin(rec).LocalSMB.CreateUser(ctx, "csiwn-st-1", host.NewSecret(leakcheck.SMBPassword.Value)); err != nil {
		t.Fatal(err)
	}
	leakcheck.CheckNoLeak(t, "NetUserAdd recording", buf.String())
}

// TestSelftestRecordingHeaderAndResultHoldNoSecret: besides the calls, a
// selftest recording holds the run's parameters (its header) and every
// step's result and detail (its last line). Neither holds the local user's
// password, the --smb-credentials password or the --iscsi-chap secret, in
// a run that passes or in one whose credentials are refused (the details
// then carry the plugin's errors).
func TestSelftestRecordingHeaderAndResultHoldNoSecret(t *testing.T) {
	const iqn = "iqn.2026-01.io.example:secrets"
	s, err := sim.New(sim.Config{Dir: filepath.Join(t.TempDir(), "sim")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": leakcheck.SMBPassword.Value}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{{Address: "127.0.0.1", Port: 3260}},
		LUNs: []sim.LUNSpec{{LUN: 0, Size: 1 << 30}}, CHAP: &host.CHAP{User: "node1", Secret: host.NewSecret(leakcheck.CHAPSecret.Value)}}); err != nil {
		t.Fatal(err)
	}
	node := selftest.Node{Host: s.Host(), Admin: s.Admin(), Style: winpath.POSIX}
	work := filepath.Join(t.TempDir(), "work")
	for _, tt := range []struct {
		name        string
		local       bool
		smbPW, chap leakcheck.Secret
		wantPassed  bool
		backends    []string
	}{
		{"local share, right CHAP", true, leakcheck.SMBPassword, leakcheck.CHAPSecret, true, []string{selftest.BackendSMB, selftest.BackendISCSI}},
		{"named share, right password", false, leakcheck.SMBPassword, leakcheck.CHAPSecret, true, []string{selftest.BackendSMB}},
		{"wrong password and CHAP", false, leakcheck.SMBWrong, leakcheck.CHAPWrong, false, []string{selftest.BackendSMB, selftest.BackendISCSI}},
	} {
		cfg := selftest.Config{
			Backends: tt.backends, WorkDir: work, Run: selftest.NewRunID(),
			Plugin: plugin.Options{OfflineDiskOnUnstage: true},
			SMB:    selftest.SMBTarget{Local: tt.local},
			ISCSI: selftest.ISCSITarget{Portal: "127.0.0.1:3260", IQN: iqn, CHAPUser: "node1",
				CHAPSecret: host.NewSecret(tt.chap.Value)},
		}
		if tt.local {
			cfg.LocalPassword = host.NewSecret(tt.smbPW.Value)
		} else {
			cfg.SMB.Source, cfg.SMB.User, cfg.SMB.Password = "//files/data", "alice", host.NewSecret(tt.smbPW.Value)
		}
		header, err := json.Marshal(cfg.Params())
		if err != nil {
			t.Fatal(err)
		}
		rep, err := selftest.Run(context.Background(), node, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Passed() != tt.wantPassed {
			t.Fatalf("%s: passed %v, want %v: %q", tt.name, rep.Passed(), tt.wantPassed, rep.Outcome())
		}
		result, err := json.Marshal(rep.Outcome())
		if err != nil {
			t.Fatal(err)
		}
		leakcheck.CheckNoLeak(t, tt.name+": header", string(header))
		leakcheck.CheckNoLeak(t, tt.name+": result", string(result))
	}
}
