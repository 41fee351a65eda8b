package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
	"github.com/wincsi/csi-windows-node/test/harness/leakcheck"
)

// recordTB stands in for testing.TB in a scripted executor whose script
// is meant to mismatch: the executor then describes the call it got (and
// the one it expected) in Errorf, which is exactly the description it
// would log; recordTB keeps it for inspection.
type recordTB struct {
	t  *testing.T
	mu sync.Mutex
	b  strings.Builder
}

func (r *recordTB) Helper()          {}
func (r *recordTB) Cleanup(f func()) { r.t.Cleanup(f) }
func (r *recordTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.b, format+"\n", args...)
}

func (r *recordTB) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// sensitiveCall is one winhost operation that hands a secret to the
// executor: the method it calls, the parameter carrying the secret and the
// exact value Windows must receive, the calls before it, and how to run it.
type sensitiveCall struct {
	name   string
	ns     string
	class  string
	method string
	param  string
	want   string // the parameter's value
	before func(e *scripted.Executor)
	run    func(ctx context.Context, h host.Host) error
	// failure is the COM error of a refused secret and the sentinel it
	// maps to.
	failure  *winhost.COMError
	sentinel error
}

const iqnWin = "iqn.1991-05.com.microsoft:target1"

var winPortal = host.Portal{Address: "10.0.0.1", Port: 3260}

func portalQuery(address string) string {
	q, err := wql.Select("MSFT_iSCSITargetPortal", nil, wql.Eq("TargetPortalAddress", address), wql.Eq("TargetPortalPortNumber", uint16(3260)))
	if err != nil {
		panic(err)
	}
	return q
}

var sensitiveCalls = []sensitiveCall{
	{
		name: "smb map", ns: winhost.NamespaceSMB, class: "MSFT_SmbGlobalMapping", method: "Create", param: "Credential",
		want: `CORP\\al\:ice:` + leakcheck.SMBPassword.Value,
		run: func(ctx context.Context, h host.Host) error {
			return h.SMB.Map(ctx, `\\srv\data`, host.Credential{User: `CORP\al:ice`, Password: host.NewSecret(leakcheck.SMBPassword.Value)}, true)
		},
		failure: &winhost.COMError{Op: "ExecMethod MSFT_SmbGlobalMapping.Create", HResult: 0x8007052E}, sentinel: host.ErrLogonFailure,
	},
	{
		name: "iscsi add portal with discovery chap", ns: winhost.NamespaceStorage, class: "MSFT_iSCSITargetPortal", method: "New",
		param: "ChapSecret", want: leakcheck.DiscoverySecret.Value,
		before: func(e *scripted.Executor) {
			e.ExpectQuery(winhost.NamespaceStorage, portalQuery(winPortal.Address), scripted.Reply{})
		},
		run: func(ctx context.Context, h host.Host) error {
			return h.ISCSI.AddPortal(ctx, winPortal, "", &host.CHAP{User: leakcheck.DiscoveryUser, Secret: host.NewSecret(leakcheck.DiscoverySecret.Value)})
		},
		failure: &winhost.COMError{Op: "ExecMethod MSFT_iSCSITargetPortal.New", HResult: 0xEFFF0009}, sentinel: host.ErrLogonFailure,
	},
	{
		name: "iscsi connect with chap", ns: winhost.NamespaceStorage, class: "MSFT_iSCSITarget", method: "Connect",
		param: "ChapSecret", want: leakcheck.CHAPSecret.Value,
		run: func(ctx context.Context, h host.Host) error {
			_, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnWin, Portal: winPortal, Auth: host.AuthMutual,
				CHAP: host.CHAP{User: leakcheck.CHAPUser, Secret: host.NewSecret(leakcheck.CHAPSecret.Value)}, Persistent: true})
			return err
		},
		failure: &winhost.COMError{Op: "ExecMethod MSFT_iSCSITarget.Connect", HResult: 0xEFFF0009}, sentinel: host.ErrLogonFailure,
	},
	{
		name: "iscsi set initiator secret", ns: winhost.NamespaceStorage, class: "MSFT_iSCSISession", method: "SetCHAPSecret",
		param: "ChapSecret", want: leakcheck.MutualSecret.Value,
		run: func(ctx context.Context, h host.Host) error {
			return h.ISCSI.SetInitiatorSecret(ctx, host.NewSecret(leakcheck.MutualSecret.Value))
		},
		failure: &winhost.COMError{Op: "ExecMethod MSFT_iSCSISession.SetCHAPSecret", HResult: 0xEFFF004C}, sentinel: host.ErrInvalid,
	},
}

// TestWindowsHostKeepsSecretsOutOfDescriptionsAndErrors drives the Windows
// host over the scripted executor. The secret reaches Windows intact, in a
// parameter marked Sensitive; the description the executor gives of the
// call (what it logs) shows [sensitive]; and neither a refused secret's
// error nor the error of a call the executor rejects carries it.
func TestWindowsHostKeepsSecretsOutOfDescriptionsAndErrors(t *testing.T) {
	ctx := context.Background()
	for _, sc := range sensitiveCalls {
		t.Run(sc.name+"/delivered", func(t *testing.T) {
			e := scripted.New(t)
			if sc.before != nil {
				sc.before(e)
			}
			e.ExpectMatching(scripted.KindCall, func(c scripted.Call) string {
				if c.Namespace != sc.ns || c.Method.Class != sc.class || c.Method.Name != sc.method {
					return "another method"
				}
				for _, p := range c.Method.In {
					if p.Name == sc.param {
						switch {
						case !p.Sensitive:
							return sc.param + " is not marked Sensitive"
						case p.Value != sc.want:
							return sc.param + " does not carry the secret as Windows needs it"
						}
						return ""
					}
				}
				return "no " + sc.param + " parameter"
			}, scripted.Reply{Result: winhost.Result{Out: map[string]any{
				// Connect's output (ignored by the other methods).
				"CreatediSCSISession": winhost.Instance{Path: "session-1", Class: "MSFT_iSCSISession",
					Props: map[string]any{"SessionIdentifier": "s-1", "IsConnected": true, "IsPersistent": true}},
			}}})
			if err := sc.run(ctx, winhost.New(e)); err != nil {
				t.Fatalf("%s: %v", sc.name, err)
			}
		})
		t.Run(sc.name+"/refused", func(t *testing.T) {
			e := scripted.New(t)
			if sc.before != nil {
				sc.before(e)
			}
			e.ExpectMatching(scripted.KindCall, func(scripted.Call) string { return "" }, scripted.Reply{Err: sc.failure})
			err := sc.run(ctx, winhost.New(e))
			if !errors.Is(err, sc.sentinel) {
				t.Fatalf("%s refused: %v, want %v", sc.name, err, sc.sentinel)
			}
			leakcheck.CheckNoLeak(t, "error of the refused call", err.Error())
		})
		t.Run(sc.name+"/described", func(t *testing.T) {
			rec := &recordTB{t: t}
			e := scripted.New(rec)
			if sc.before != nil {
				sc.before(e)
			}
			// Expect another method with a sensitive parameter, so that the
			// executor describes both the call it got and the one it wanted.
			e.ExpectCall(sc.ns, winhost.Method{Class: sc.class, Name: "Other" + sc.method,
				In: []winhost.Param{{Name: sc.param, Value: sc.want, Sensitive: true}}}, scripted.Reply{})
			err := sc.run(ctx, winhost.New(e))
			if err == nil {
				t.Fatal("the mismatching script was accepted")
			}
			leakcheck.CheckNoLeak(t, "error of a rejected call", err.Error())
			desc := rec.String()
			if !strings.Contains(desc, sc.param+"=[sensitive]") || !strings.Contains(desc, sc.method) {
				t.Fatalf("the executor's description lacks the call: %q", desc)
			}
			leakcheck.CheckNoLeak(t, "executor description", desc)
		})
	}
}

// wqlShape replaces every string literal of a WQL query by an empty one (honouring
// the backslash escapes of pkg/winhost/wql) and returns the rest, with the
// literals' unescaped values. A value that could break out of its literal
// would change the shape.
func wqlShape(q string) (string, []string) {
	var shape strings.Builder
	var values []string
	for i := 0; i < len(q); i++ {
		if q[i] != '\'' {
			shape.WriteByte(q[i])
			continue
		}
		var v strings.Builder
		i++
		for ; i < len(q) && q[i] != '\''; i++ {
			if q[i] == '\\' && i+1 < len(q) {
				i++
			}
			v.WriteByte(q[i])
		}
		shape.WriteString("''")
		values = append(values, v.String())
	}
	return shape.String(), values
}

// hostile values: quotes of both kinds, backslashes (also before a quote
// and at the end), WQL keywords, a comment-like tail.
var hostile = []string{
	`a' OR RemotePath <> '`,
	`a\' OR 1=1 --`,
	`a" OR "1"="1`,
	`a\\' OR ''='`,
	`x'; SELECT * FROM Win32_Process WHERE Name <> '`,
	`trailing\`,
}

// TestWQLValuesCannotChangeQueries: the Windows host puts every value into
// WQL through pkg/winhost/wql. With hostile remote paths, portal addresses and
// session IDs, the exact query is the escaped one, its shape (literals
// blanked) is the fixed template, and its literal unescapes to the value.
func TestWQLValuesCannotChangeQueries(t *testing.T) {
	ctx := context.Background()
	type queryCase struct {
		name, ns, shape string
		value           func(h string) string // the value the literal must carry
		run             func(h host.Host, v string) error
	}
	cases := []queryCase{
		{name: "smb mapping remote path", ns: winhost.NamespaceSMB,
			shape: "SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = ''",
			value: func(h string) string { return strings.TrimRight(`\\srv\`+h, `\`) },
			run: func(hst host.Host, v string) error {
				_, err := hst.SMB.Mapping(ctx, `\\srv\`+v)
				return err
			}},
		{name: "iscsi portal address", ns: winhost.NamespaceStorage,
			shape: "SELECT * FROM MSFT_iSCSITargetPortal WHERE TargetPortalAddress = '' AND TargetPortalPortNumber = 3260",
			value: func(h string) string { return h },
			run: func(hst host.Host, v string) error {
				_, err := hst.ISCSI.Targets(ctx, host.Portal{Address: v, Port: 3260})
				return err
			}},
		{name: "iscsi session identifier", ns: winhost.NamespaceStorage,
			shape: "SELECT * FROM MSFT_iSCSISession WHERE SessionIdentifier = ''",
			value: func(h string) string { return h },
			run: func(hst host.Host, v string) error {
				return hst.ISCSI.Disconnect(ctx, host.ISCSISession{SessionID: v, TargetNodeAddress: iqnWin})
			}},
	}
	for _, qc := range cases {
		for _, h := range hostile {
			t.Run(qc.name+"/"+h, func(t *testing.T) {
				want := qc.value(h)
				lit, err := wql.Quote(want)
				if err != nil {
					t.Fatal(err)
				}
				wantQuery := strings.Replace(qc.shape, "''", lit, 1)
				e := scripted.New(t)
				e.ExpectQuery(qc.ns, wantQuery, scripted.Reply{})
				err = qc.run(winhost.New(e), h)
				if err != nil && !errors.Is(err, host.ErrNotFound) {
					t.Fatalf("%v", err)
				}
				calls := e.Calls()
				if len(calls) != 1 {
					t.Fatalf("%d executor calls, want the one query", len(calls))
				}
				shape, values := wqlShape(calls[0].WQL)
				if shape != qc.shape {
					t.Errorf("query shape %q, want %q (query %q)", shape, qc.shape, calls[0].WQL)
				}
				if len(values) != 1 || values[0] != want {
					t.Errorf("literal values %q, want [%q]", values, want)
				}
			})
		}
	}
}
