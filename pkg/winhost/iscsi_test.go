package winhost_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// Replies follow the iSCSI initiator provider's classes as the executor
// converts them (integers as int64, booleans as bool, embedded objects as
// Instance): property names and types from the MSFT_iSCSITargetPortal,
// MSFT_iSCSITarget, MSFT_iSCSISession and MSFT_iSCSIConnection pages under
// learn.microsoft.com/previous-versions/windows/desktop/iscsidisc/ and the
// MOF-generated wrappers of microsoft/wmi (TargetPortalPortNumber uint16,
// MSFT_iSCSIConnection.TargetPortNumber uint32). Object paths are opaque
// to the code under test; the ones below only need to be distinct. The
// status codes are ISDSC_* values from iscsierr.h.

const iscNS = winhost.NamespaceStorage

const (
	iscIQN       = "iqn.2024-01.test.array:vol1"
	iscSecret    = "session-sec-01"
	iscSessionID = "ffffe0001234a010-4000013700000002"

	iscPortalPath  = `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSITargetPortal.TargetPortalAddress="10.0.0.1",TargetPortalPortNumber=3260`
	iscTargetPath  = `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSITarget.NodeAddress="iqn.2024-01.test.array:vol1"`
	iscSessionPath = `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSISession.SessionIdentifier="ffffe0001234a010-4000013700000002"`

	wqlPortalList = "SELECT TargetPortalAddress, TargetPortalPortNumber FROM MSFT_iSCSITargetPortal"
	wqlPortal1    = "SELECT * FROM MSFT_iSCSITargetPortal WHERE TargetPortalAddress = '10.0.0.1' AND TargetPortalPortNumber = 3260"
	wqlSessions   = "SELECT * FROM MSFT_iSCSISession"
	wqlSessionID  = "SELECT * FROM MSFT_iSCSISession WHERE SessionIdentifier = 'ffffe0001234a010-4000013700000002'"
)

var iscPortal1 = host.Portal{Address: "10.0.0.1", Port: 3260}

// Status codes (iscsierr.h).
const (
	isdscConnectionFailed   = 0xEFFF0003
	isdscAuthFailure        = 0xEFFF0009
	isdscTargetNotFound     = 0xEFFF0029
	isdscAlreadyLoggedIn    = 0xEFFF003F
	isdscDeviceBusy         = 0xEFFF0040
	isdscNotPersistent      = 0xEFFF005E
	isdscInvalidChapSecret  = 0xEFFF004C
	wbemEFailed             = 0x80041001 // WBEM_E_FAILED: no iSCSI meaning
	storageInvalidParameter = 5
)

func iscPortalInst(path, addr string, port int64) winhost.Instance {
	return winhost.Instance{Path: path, Class: "MSFT_iSCSITargetPortal", Props: map[string]any{
		"TargetPortalAddress": addr, "TargetPortalPortNumber": port,
		"InitiatorInstanceName": nil, "InitiatorPortalAddress": nil, "IsDataDigest": false, "IsHeaderDigest": false,
	}}
}

func iscSessionInst(path, id, iqn string, persistent bool) winhost.Instance {
	return winhost.Instance{Path: path, Class: "MSFT_iSCSISession", Props: map[string]any{
		"SessionIdentifier": id, "TargetNodeAddress": iqn, "InitiatorPortalAddress": nil,
		"IsConnected": true, "IsPersistent": persistent, "AuthenticationType": "NONE", "NumberOfConnections": int64(1),
	}}
}

func iscConnInst(addr string, port int64) winhost.Instance {
	return winhost.Instance{Path: `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSIConnection.ConnectionIdentifier="ffffe0001234a010-1"`,
		Class: "MSFT_iSCSIConnection", Props: map[string]any{
			"ConnectionIdentifier": "ffffe0001234a010-1", "TargetAddress": addr, "TargetPortNumber": port,
			"InitiatorAddress": "10.0.0.50", "InitiatorPortNumber": int64(49152),
		}}
}

func iscRV(code uint32) scripted.Reply {
	return scripted.Reply{Result: winhost.Result{ReturnValue: code}}
}

func iscCOM(op string, hr uint32) scripted.Reply {
	return scripted.Reply{Err: &winhost.COMError{Op: op, HResult: hr}}
}

func iscWant(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: %v", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: err %v, want %v", what, err, want)
	}
}

func iscNoSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), iscSecret) {
		t.Fatalf("error reveals the secret: %v", err)
	}
}

func TestISCSIPortals(t *testing.T) {
	e := scripted.New(t)
	// The query selects two properties: Windows answers null for the rest.
	listed := func(path, addr string, port int64) winhost.Instance {
		in := iscPortalInst(path, addr, port)
		in.Props["IsDataDigest"], in.Props["IsHeaderDigest"] = nil, nil
		return in
	}
	e.ExpectQuery(iscNS, wqlPortalList, scripted.Reply{Instances: []winhost.Instance{
		listed(iscPortalPath, "10.0.0.1", 3260),
		listed(iscPortalPath+"b", "10.0.0.1", 3260), // registered through a second initiator portal
		listed(iscPortalPath+"c", "fe80::1", 3261),
	}})
	got, err := winhost.NewISCSI(e).Portals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []host.Portal{iscPortal1, {Address: "fe80::1", Port: 3261}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("portals %v, want %v", got, want)
	}
}

func TestISCSIAddPortal(t *testing.T) {
	newCall := func(in ...winhost.Param) winhost.Method {
		return winhost.Method{Class: "MSFT_iSCSITargetPortal", Name: "New", In: append([]winhost.Param{
			{Name: "TargetPortalAddress", Value: "10.0.0.1"}, {Name: "TargetPortalPortNumber", Value: uint16(3260)},
		}, in...)}
	}
	chap := &host.CHAP{User: "disc-user", Secret: host.NewSecret(iscSecret)}
	chapParams := []winhost.Param{
		{Name: "AuthenticationType", Value: "ONEWAYCHAP"},
		{Name: "ChapUsername", Value: "disc-user"},
		{Name: "ChapSecret", Value: iscSecret, Sensitive: true},
	}
	tests := []struct {
		name      string
		portal    host.Portal
		initiator string
		chap      *host.CHAP
		existing  []winhost.Instance
		method    winhost.Method
		reply     scripted.Reply
		want      error
	}{
		{name: "new portal", portal: iscPortal1, method: newCall(), reply: iscRV(0)},
		{name: "default port", portal: host.Portal{Address: "10.0.0.1"}, method: newCall(), reply: iscRV(0)},
		{name: "initiator portal and discovery CHAP", portal: iscPortal1, initiator: "10.0.0.50", chap: chap,
			method: newCall(append([]winhost.Param{{Name: "InitiatorPortalAddress", Value: "10.0.0.50"}}, chapParams...)...),
			reply:  iscRV(0)},
		{name: "already registered", portal: iscPortal1, existing: []winhost.Instance{iscPortalInst(iscPortalPath, "10.0.0.1", 3260)},
			want: host.ErrAlreadyExists},
		{name: "discovery CHAP rejected", portal: iscPortal1, chap: chap, method: newCall(chapParams...),
			reply: iscCOM("ExecMethod MSFT_iSCSITargetPortal.New", isdscAuthFailure), want: host.ErrLogonFailure},
		{name: "nothing answers", portal: iscPortal1, method: newCall(), reply: iscRV(isdscConnectionFailed), want: host.ErrUnreachable},
		{name: "generic failure", portal: iscPortal1, method: newCall(),
			reply: iscCOM("ExecMethod MSFT_iSCSITargetPortal.New", wbemEFailed)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{Instances: tc.existing})
			if tc.method.Name != "" {
				e.ExpectCall(iscNS, tc.method, tc.reply)
			}
			err := winhost.NewISCSI(e).AddPortal(context.Background(), tc.portal, tc.initiator, tc.chap)
			iscNoSecret(t, err)
			if tc.name == "generic failure" {
				var ce *winhost.COMError
				if !errors.As(err, &ce) || errors.Is(err, host.ErrLogonFailure) {
					t.Fatalf("err %v, want the COM error without a host meaning", err)
				}
				return
			}
			iscWant(t, "AddPortal", err, tc.want)
		})
	}
}

func TestISCSIRefreshAndRemovePortal(t *testing.T) {
	registered := iscPortalInst(iscPortalPath, "10.0.0.1", 3260)
	throughNIC := iscPortalInst(iscPortalPath+"nic", "10.0.0.1", 3260)
	throughNIC.Props["InitiatorPortalAddress"] = "10.0.0.50"
	params := []winhost.Param{{Name: "TargetPortalAddress", Value: "10.0.0.1"}, {Name: "TargetPortalPortNumber", Value: uint16(3260)}}
	for _, method := range []string{"Update", "Remove"} {
		t.Run(method, func(t *testing.T) {
			run := func(x *winhost.ISCSI) error {
				if method == "Update" {
					return x.RefreshPortal(context.Background(), iscPortal1)
				}
				return x.RemovePortal(context.Background(), iscPortal1)
			}
			e := scripted.New(t)
			e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{Instances: []winhost.Instance{registered, throughNIC}}).
				ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSITargetPortal", Path: iscPortalPath, Name: method, In: params}, iscRV(0)).
				ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSITargetPortal", Path: iscPortalPath + "nic", Name: method,
					In: append(append([]winhost.Param(nil), params...), winhost.Param{Name: "InitiatorPortalAddress", Value: "10.0.0.50"})}, iscRV(0))
			iscWant(t, method, run(winhost.NewISCSI(e)), nil)

			e = scripted.New(t)
			e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{})
			iscWant(t, method+" of a missing portal", run(winhost.NewISCSI(e)), host.ErrNotFound)

			e = scripted.New(t)
			e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{Instances: []winhost.Instance{registered}}).
				ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSITargetPortal", Path: iscPortalPath, Name: method, In: params},
					iscRV(isdscConnectionFailed))
			iscWant(t, method+" of a portal that does not answer", run(winhost.NewISCSI(e)), host.ErrUnreachable)
		})
	}
}

func TestISCSITargets(t *testing.T) {
	e := scripted.New(t)
	e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{Instances: []winhost.Instance{iscPortalInst(iscPortalPath, "10.0.0.1", 3260)}}).
		ExpectAssociators(iscNS, iscPortalPath, "MSFT_iSCSITargetToiSCSITargetPortal", "MSFT_iSCSITarget", scripted.Reply{
			Instances: []winhost.Instance{
				{Path: iscTargetPath, Class: "MSFT_iSCSITarget", Props: map[string]any{"NodeAddress": iscIQN, "IsConnected": true}},
				{Path: "t2", Class: "MSFT_iSCSITarget", Props: map[string]any{"NodeAddress": "iqn.2024-01.test.array:vol2", "IsConnected": false}},
			}})
	got, err := winhost.NewISCSI(e).Targets(context.Background(), iscPortal1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (host.ISCSITarget{NodeAddress: iscIQN, IsConnected: true}) || got[1].IsConnected {
		t.Fatalf("targets %+v", got)
	}
	if n := e.WMIRoundTrips(); n != 2 {
		t.Fatalf("%d WMI round trips, want 2", n)
	}

	e = scripted.New(t)
	e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{})
	_, err = winhost.NewISCSI(e).Targets(context.Background(), iscPortal1)
	iscWant(t, "Targets of a missing portal", err, host.ErrNotFound)
}

func TestISCSIConnect(t *testing.T) {
	chap := host.CHAP{User: "k8s-node", Secret: host.NewSecret(iscSecret)}
	connect := func(auth string, extra ...winhost.Param) winhost.Method {
		in := []winhost.Param{
			{Name: "NodeAddress", Value: iscIQN},
			{Name: "TargetPortalAddress", Value: "10.0.0.1"},
			{Name: "TargetPortalPortNumber", Value: uint16(3260)},
			{Name: "AuthenticationType", Value: auth},
		}
		return winhost.Method{Class: "MSFT_iSCSITarget", Name: "Connect", In: append(in, extra...)}
	}
	chapIn := []winhost.Param{{Name: "ChapUsername", Value: "k8s-node"}, {Name: "ChapSecret", Value: iscSecret, Sensitive: true}}
	flags := func(multipath, persistent bool) []winhost.Param {
		return []winhost.Param{{Name: "IsMultipathEnabled", Value: multipath}, {Name: "IsPersistent", Value: persistent}}
	}
	created := scripted.Reply{Result: winhost.Result{Out: map[string]any{
		"CreatediSCSISession": iscSessionInst(iscSessionPath, iscSessionID, iscIQN, true)}}}
	want := host.ISCSISession{Ref: iscSessionPath, SessionID: iscSessionID, TargetNodeAddress: iscIQN,
		TargetPortal: iscPortal1, IsConnected: true, IsPersistent: true}

	tests := []struct {
		name   string
		req    host.ConnectRequest
		method winhost.Method
		reply  scripted.Reply
		after  func(*scripted.Executor) // further expected calls
		want   error
	}{
		{name: "no authentication, persistent multipath",
			req:    host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1, Multipath: true, Persistent: true},
			method: connect("NONE", flags(true, true)...), reply: created},
		{name: "one-way CHAP through an initiator portal",
			req: host.ConnectRequest{TargetIQN: iscIQN, Portal: host.Portal{Address: "10.0.0.1"}, InitiatorPortal: "10.0.0.50",
				Auth: host.AuthOneWay, CHAP: chap, Persistent: true},
			method: winhost.Method{Class: "MSFT_iSCSITarget", Name: "Connect", In: append(append([]winhost.Param{
				{Name: "NodeAddress", Value: iscIQN}, {Name: "TargetPortalAddress", Value: "10.0.0.1"},
				{Name: "TargetPortalPortNumber", Value: uint16(3260)}, {Name: "InitiatorPortalAddress", Value: "10.0.0.50"},
				{Name: "AuthenticationType", Value: "ONEWAYCHAP"}}, chapIn...), flags(false, true)...)},
			reply: created},
		// Logged in, but no CreatediSCSISession: which session the login
		// made is not guessed from a listing (the connection reports the
		// address the target answered on, and a multipath login makes
		// another session next to others); the call fails retryably.
		{name: "mutual CHAP, created session not returned",
			req:    host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1, Auth: host.AuthMutual, CHAP: chap, Persistent: true},
			method: connect("MUTUALCHAP", append(append([]winhost.Param(nil), chapIn...), flags(false, true)...)...),
			reply:  iscRV(0), want: host.ErrSessionUnknown},
		{name: "created session without an identifier",
			req:    host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1, Multipath: true},
			method: connect("NONE", flags(true, false)...),
			reply: scripted.Reply{Result: winhost.Result{Out: map[string]any{
				"CreatediSCSISession": iscSessionInst("", "", iscIQN, false)}}},
			want: host.ErrSessionUnknown},
		{name: "CHAP rejected", req: host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1, Auth: host.AuthOneWay, CHAP: chap},
			method: connect("ONEWAYCHAP", append(append([]winhost.Param(nil), chapIn...), flags(false, false)...)...),
			reply:  iscCOM("ExecMethod MSFT_iSCSITarget.Connect", isdscAuthFailure), want: host.ErrLogonFailure},
		{name: "CHAP rejected as return value", req: host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1, Auth: host.AuthOneWay, CHAP: chap},
			method: connect("ONEWAYCHAP", append(append([]winhost.Param(nil), chapIn...), flags(false, false)...)...),
			reply:  iscRV(isdscAuthFailure), want: host.ErrLogonFailure},
		{name: "already logged in", req: host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1},
			method: connect("NONE", flags(false, false)...), reply: iscRV(isdscAlreadyLoggedIn), want: host.ErrAlreadyExists},
		{name: "target unknown", req: host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1},
			method: connect("NONE", flags(false, false)...), reply: iscRV(isdscTargetNotFound), want: host.ErrNotFound},
		{name: "portal does not answer", req: host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1},
			method: connect("NONE", flags(false, false)...), reply: iscCOM("ExecMethod MSFT_iSCSITarget.Connect", isdscConnectionFailed),
			want: host.ErrUnreachable},
		{name: "secret of a bad length", req: host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1, Auth: host.AuthOneWay, CHAP: chap},
			method: connect("ONEWAYCHAP", append(append([]winhost.Param(nil), chapIn...), flags(false, false)...)...),
			reply:  iscRV(isdscInvalidChapSecret), want: host.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectCall(iscNS, tc.method, tc.reply)
			if tc.after != nil {
				tc.after(e)
			}
			s, err := winhost.NewISCSI(e).Connect(context.Background(), tc.req)
			iscNoSecret(t, err)
			iscWant(t, "Connect", err, tc.want)
			if tc.want != nil {
				return
			}
			w := want
			w.InitiatorPortal = tc.req.InitiatorPortal
			if s != w {
				t.Fatalf("session %+v, want %+v", s, w)
			}
		})
	}
}

func TestISCSISessions(t *testing.T) {
	other := iscSessionInst("s-other", "ffffe0001234a010-4000013700000009", "iqn.2024-01.test.array:vol2", false)
	second := iscSessionInst(iscSessionPath+"2", "ffffe0001234a010-4000013700000003", iscIQN, true)
	e := scripted.New(t)
	e.ExpectQuery(iscNS, wqlSessions, scripted.Reply{Instances: []winhost.Instance{
		iscSessionInst(iscSessionPath, iscSessionID, iscIQN, true), other, second}}).
		ExpectAssociators(iscNS, iscSessionPath, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection",
			scripted.Reply{Instances: []winhost.Instance{iscConnInst("10.0.0.1", 3260)}}).
		ExpectAssociators(iscNS, iscSessionPath+"2", "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection",
			scripted.Reply{Instances: []winhost.Instance{iscConnInst("fe80::1", 3261)}})
	got, err := winhost.NewISCSI(e).Sessions(context.Background(), strings.ToUpper(iscIQN))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].TargetPortal != iscPortal1 || got[1].TargetPortal != (host.Portal{Address: "fe80::1", Port: 3261}) ||
		got[0].SessionID != iscSessionID || !got[1].IsPersistent || got[0].Ref != iscSessionPath {
		t.Fatalf("sessions %+v", got)
	}
	// One query, then one association per session of the target.
	if n := e.WMIRoundTrips(); n != 3 {
		t.Fatalf("%d WMI round trips, want 3", n)
	}
}

func TestISCSIDisconnect(t *testing.T) {
	sess := host.ISCSISession{Ref: iscSessionPath, SessionID: iscSessionID, TargetNodeAddress: iscIQN}
	disconnect := winhost.Method{Class: "MSFT_iSCSITarget", Path: iscTargetPath, Name: "Disconnect",
		In: []winhost.Param{{Name: "SessionIdentifier", Value: iscSessionID}}}
	target := scripted.Reply{Instances: []winhost.Instance{{Path: iscTargetPath, Class: "MSFT_iSCSITarget",
		Props: map[string]any{"NodeAddress": iscIQN, "IsConnected": true}}}}
	tests := []struct {
		name    string
		sess    host.ISCSISession
		lookup  *scripted.Reply // the query by SessionIdentifier, for a session without Ref
		targets scripted.Reply
		reply   *scripted.Reply
		want    error
	}{
		{name: "logged out", sess: sess, targets: target, reply: &scripted.Reply{}},
		{name: "session without ref", sess: host.ISCSISession{SessionID: iscSessionID, TargetNodeAddress: iscIQN},
			lookup:  &scripted.Reply{Instances: []winhost.Instance{iscSessionInst(iscSessionPath, iscSessionID, iscIQN, false)}},
			targets: target, reply: &scripted.Reply{}},
		{name: "disks in use", sess: sess, targets: target, reply: iscPtr(iscRV(isdscDeviceBusy)), want: host.ErrInUse},
		{name: "session gone", sess: sess, targets: iscCOM("AssociatorsOf", 0x80041002), want: host.ErrNotFound},
		{name: "session gone before the lookup", sess: host.ISCSISession{SessionID: iscSessionID},
			lookup: &scripted.Reply{}, want: host.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			if tc.lookup != nil {
				e.ExpectQuery(iscNS, wqlSessionID, *tc.lookup)
			}
			if tc.lookup == nil || len(tc.lookup.Instances) > 0 {
				e.ExpectAssociators(iscNS, iscSessionPath, "MSFT_iSCSITargetToiSCSISession", "MSFT_iSCSITarget", tc.targets)
			}
			if tc.reply != nil {
				e.ExpectCall(iscNS, disconnect, *tc.reply)
			}
			iscWant(t, "Disconnect", winhost.NewISCSI(e).Disconnect(context.Background(), tc.sess), tc.want)
		})
	}
}

func iscPtr[T any](v T) *T { return &v }

func TestISCSIUnregisterSecretAndDisks(t *testing.T) {
	sess := host.ISCSISession{Ref: iscSessionPath, SessionID: iscSessionID, TargetNodeAddress: iscIQN}
	ctx := context.Background()
	t.Run("unregister", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Unregister"}, iscRV(0))
		iscWant(t, "Unregister", winhost.NewISCSI(e).Unregister(ctx, sess), nil)
	})
	t.Run("unregister a session that is not persistent", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Unregister"}, iscRV(isdscNotPersistent))
		iscWant(t, "Unregister", winhost.NewISCSI(e).Unregister(ctx, sess), host.ErrNotFound)
	})
	t.Run("register with CHAP", func(t *testing.T) {
		// Register-IscsiSession -IsMultipathEnabled -ChapUsername -ChapSecret
		// wraps MSFT_iSCSISession.Register with these parameters
		// (learn.microsoft.com/powershell/module/iscsi/register-iscsisession).
		e := scripted.New(t)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Register", In: []winhost.Param{
			{Name: "IsMultipathEnabled", Value: true}, {Name: "ChapUsername", Value: "node1"},
			{Name: "ChapSecret", Value: iscSecret, Sensitive: true}}}, iscRV(0))
		err := winhost.NewISCSI(e).Register(ctx, sess, true, &host.CHAP{User: "node1", Secret: host.NewSecret(iscSecret)})
		iscWant(t, "Register", err, nil)
	})
	t.Run("register without CHAP, refused", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Register", In: []winhost.Param{
			{Name: "IsMultipathEnabled", Value: false}}}, iscRV(storageInvalidParameter))
		err := winhost.NewISCSI(e).Register(ctx, sess, false, nil)
		iscWant(t, "Register", err, host.ErrInvalid)
	})
	t.Run("set initiator secret", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Name: "SetCHAPSecret",
			In: []winhost.Param{{Name: "ChapSecret", Value: iscSecret, Sensitive: true}}}, iscRV(0))
		iscWant(t, "SetInitiatorSecret", winhost.NewISCSI(e).SetInitiatorSecret(ctx, host.NewSecret(iscSecret)), nil)
	})
	t.Run("initiator secret refused", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Name: "SetCHAPSecret",
			In: []winhost.Param{{Name: "ChapSecret", Value: iscSecret, Sensitive: true}}}, iscRV(storageInvalidParameter))
		err := winhost.NewISCSI(e).SetInitiatorSecret(ctx, host.NewSecret(iscSecret))
		iscNoSecret(t, err)
		iscWant(t, "SetInitiatorSecret", err, host.ErrInvalid)
	})
	// A session known only by its identifier (not read by Sessions) is
	// looked up first.
	byID := host.ISCSISession{SessionID: iscSessionID, TargetNodeAddress: iscIQN}
	lookup := func(e *scripted.Executor) {
		e.ExpectQuery(iscNS, wqlSessionID, scripted.Reply{Instances: []winhost.Instance{
			iscSessionInst(iscSessionPath, iscSessionID, iscIQN, true)}})
	}
	t.Run("unregister by identifier", func(t *testing.T) {
		e := scripted.New(t)
		lookup(e)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Unregister"}, iscRV(0))
		iscWant(t, "Unregister", winhost.NewISCSI(e).Unregister(ctx, byID), nil)
	})
	t.Run("register by identifier", func(t *testing.T) {
		e := scripted.New(t)
		lookup(e)
		e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Register", In: []winhost.Param{
			{Name: "IsMultipathEnabled", Value: false}}}, iscRV(0))
		iscWant(t, "Register", winhost.NewISCSI(e).Register(ctx, byID, false, nil), nil)
	})
	t.Run("disks of a session gone", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(iscNS, wqlSessionID, scripted.Reply{})
		_, err := winhost.NewISCSI(e).SessionDisks(ctx, byID)
		iscWant(t, "SessionDisks", err, host.ErrNotFound)
	})
	t.Run("session disks", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectAssociators(iscNS, iscSessionPath, "MSFT_iSCSISessionToDisk", "MSFT_Disk", scripted.Reply{Instances: []winhost.Instance{
			diskInst(diskSpec{Number: 3}), diskInst(diskSpec{Number: 4}),
		}})
		got, err := winhost.NewISCSI(e).SessionDisks(ctx, sess)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != 3 || got[1] != 4 {
			t.Fatalf("disks %v, want [3 4]", got)
		}
	})
}

// TestISCSIScriptNeverShowsSecret: the scripted executor's description of
// a call, which a failing test prints, hides sensitive parameters.
func TestISCSIScriptNeverShowsSecret(t *testing.T) {
	rec := &iscRecordingTB{}
	e := scripted.New(rec)
	e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Name: "SetCHAPSecret",
		In: []winhost.Param{{Name: "ChapSecret", Value: "another-secret", Sensitive: true}}}, iscRV(0))
	_ = winhost.NewISCSI(e).SetInitiatorSecret(context.Background(), host.NewSecret(iscSecret)) // mismatch on purpose
	if len(rec.errs) == 0 {
		t.Fatal("the mismatching call was not reported")
	}
	for _, m := range rec.errs {
		if strings.Contains(m, iscSecret) || strings.Contains(m, "another-secret") {
			t.Fatalf("script report reveals a secret: %s", m)
		}
	}
}

type iscRecordingTB struct{ errs []string }

func (r *iscRecordingTB) Helper() {}
func (r *iscRecordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *iscRecordingTB) Cleanup(func()) {}
