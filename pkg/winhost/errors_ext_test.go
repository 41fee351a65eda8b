package winhost_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// wmiError is WMI's extended error object as the executor reads it from
// SWbemLastError for the MI-based providers: an MSFT_WmiError
// (learn.microsoft.com/previous-versions/windows/desktop/ramgmtpsprov/msft-wmierror)
// with CIM_Error's MessageID and Message and the provider's error_Code and
// error_Type. MessageID has the form PowerShell shows as
// FullyQualifiedErrorId ("Windows System Error 1219",
// kubernetes-csi/csi-driver-smb#219).
func wmiError(props map[string]any) *winhost.Instance {
	base := map[string]any{
		"CIMStatusCode": int64(1), "Message": "provider message", "MessageID": nil,
		"error_Code": nil, "error_Type": nil, "error_Category": int64(0), "error_WindowsErrorMessage": nil,
	}
	for k, v := range props {
		base[k] = v
	}
	return &winhost.Instance{Class: "MSFT_WmiError", Props: base}
}

// failed is a failed ExecMethod: WBEM_E_FAILED, the status only in the
// error object.
func failed(obj *winhost.Instance) error {
	return &winhost.COMError{Op: "ExecMethod", HResult: 0x80041001, ErrorObject: obj}
}

// The review found that WBEM_E_NOT_FOUND from looking up a class, method
// or input parameter became host.ErrNotFound, which callers read as "the
// object is gone" (an offline on unstage skipped, an iSCSI logout taken as
// done, a share taken as missing). A lookup's failure is host.ErrSchema.
func TestSchemaLookupIsNotNotFound(t *testing.T) {
	lookup := func(what string) error {
		return &winhost.COMError{Op: "ExecMethod", HResult: 0x80041002, Lookup: what}
	}
	disk := diskOf(diskSpec{Number: 4})
	session := host.ISCSISession{Ref: iscSessionPath, SessionID: iscSessionID, TargetNodeAddress: iscIQN}
	tests := []struct {
		name   string
		script func(e *scripted.Executor, err error)
		run    func(e *scripted.Executor) error
	}{
		{"disk offline (class)", func(e *scripted.Executor, err error) {
			e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: disk.Ref, Name: "Offline"}, scripted.Reply{Err: err})
		}, func(e *scripted.Executor) error {
			return winhost.NewDisks(e).SetOnline(context.Background(), disk, false)
		}},
		{"iSCSI unregister (method)", func(e *scripted.Executor, err error) {
			e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Unregister"}, scripted.Reply{Err: err})
		}, func(e *scripted.Executor) error { return winhost.NewISCSI(e).Unregister(context.Background(), session) }},
		{"SMB map (parameter)", func(e *scripted.Executor, err error) {
			e.ExpectMatching(scripted.KindCall, func(scripted.Call) string { return "" }, scripted.Reply{Err: err})
		}, func(e *scripted.Executor) error {
			return winhost.NewSMB(e).Map(context.Background(), `\\srv\data`, host.Credential{}, false)
		}},
		{"SMB unmap (method)", func(e *scripted.Executor, err error) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, false)}})
			e.ExpectCall(nsSMB, winhost.Method{Class: "MSFT_SmbGlobalMapping", Path: mappingRef(`\\srv\data`), Name: "Remove",
				In: []winhost.Param{{Name: "Force", Value: true}}}, scripted.Reply{Err: err})
		}, func(e *scripted.Executor) error { return winhost.NewSMB(e).Unmap(context.Background(), `\\srv\data`) }},
	}
	for _, tt := range tests {
		for _, what := range []string{winhost.LookupClass, winhost.LookupMethod, winhost.LookupParameter} {
			t.Run(tt.name+"/"+what, func(t *testing.T) {
				e := scripted.New(t)
				tt.script(e, lookup(what))
				err := tt.run(e)
				if !errors.Is(err, host.ErrSchema) || errors.Is(err, host.ErrNotFound) {
					t.Fatalf("err = %v, want ErrSchema and not ErrNotFound", err)
				}
			})
		}
	}
	// The object itself gone (no lookup) is still ErrNotFound.
	e := scripted.New(t)
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: disk.Ref, Name: "Offline"},
		scripted.Reply{Err: &winhost.COMError{Op: "ExecMethod", HResult: 0x80041002}})
	if err := winhost.NewDisks(e).SetOnline(context.Background(), disk, false); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("object gone: err = %v, want ErrNotFound", err)
	}
}

// The review found that the SMB path read any 0x8007xxxx HRESULT as a
// Win32 code of its own table, so RPC_S_SERVER_UNAVAILABLE (0x800706BA) and
// RPC_S_CALL_FAILED (0x800706BE) during a WMI service restart came back as
// internal errors while the storage path read them as ErrNotReady; and
// issue 23 found RPC_E_DISCONNECTED (0x80010108) and WBEM_E_SHUTTING_DOWN
// (0x80041033) internal on every path, and ErrSchema when a class lookup
// met them. They mean the same on every path, lookups included: not ready,
// retry (the executor drops the connection, winhost.ConnectionLost).
func TestWMIRestartSameOnEveryPath(t *testing.T) {
	for _, hr := range []uint32{0x800706BA, 0x800706BE, 0x800706BF, 0x80010108, 0x80041033, 0x80041015} {
		for _, lookup := range []string{"", winhost.LookupClass, winhost.LookupMethod, winhost.LookupParameter} {
			rpc := &winhost.COMError{Op: "ExecMethod", HResult: hr, Lookup: lookup,
				// A stale status in the error object does not change it.
				ErrorObject: wmiError(map[string]any{"error_Code": int64(1219), "error_Type": "WIN32"})}
			paths := map[string]func() error{
				"storage": func() error {
					e := scripted.New(t)
					e.ExpectQuery(ns, wqlDisks, scripted.Reply{Err: rpc})
					_, err := winhost.NewDisks(e).List(context.Background())
					return err
				},
				"storage method": func() error {
					e := scripted.New(t)
					e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(4), Name: "Offline"}, scripted.Reply{Err: rpc})
					return winhost.NewDisks(e).SetOnline(context.Background(), diskOf(diskSpec{Number: 4}), false)
				},
				"smb": func() error {
					e := scripted.New(t)
					e.ExpectMatching(scripted.KindCall, func(scripted.Call) string { return "" }, scripted.Reply{Err: rpc})
					return winhost.NewSMB(e).Map(context.Background(), `\\srv\data`, host.Credential{}, false)
				},
				"iscsi": func() error {
					e := scripted.New(t)
					e.ExpectCall(iscNS, winhost.Method{Class: "MSFT_iSCSISession", Path: iscSessionPath, Name: "Unregister"}, scripted.Reply{Err: rpc})
					return winhost.NewISCSI(e).Unregister(context.Background(), host.ISCSISession{Ref: iscSessionPath, SessionID: iscSessionID})
				},
			}
			if hr>>16 == 0x8007 && lookup == "" {
				paths["smb check"] = func() error {
					e := scripted.New(t)
					e.ExpectWin32("GetFileAttributes", []any{`\\?\UNC\srv\data`}, scripted.Reply{Err: &winhost.Win32Error{Call: "GetFileAttributes", Code: hr & 0xFFFF}})
					return winhost.NewSMB(e).Check(context.Background(), `\\srv\data`)
				}
			}
			for name, run := range paths {
				err := run()
				if !errors.Is(err, host.ErrNotReady) || errors.Is(err, host.ErrSchema) || errors.Is(err, host.ErrCredentialConflict) {
					t.Errorf("0x%08X (lookup %q) on the %s path: err = %v, want ErrNotReady only", hr, lookup, name, err)
				}
			}
		}
	}
}

// Issue 23: a class lookup (SWbemServices.Get) that fails for any reason
// but "not there" is not ErrSchema ("this Windows lacks the class"): access
// denied is access denied, and a failure without a meaning is internal.
// Only WBEM_E_NOT_FOUND and WBEM_E_INVALID_CLASS say the class is missing.
func TestLookupFailureMeaning(t *testing.T) {
	disk := diskOf(diskSpec{Number: 4})
	tests := []struct {
		hr   uint32
		want error // nil: no host meaning
	}{
		{0x80041002, host.ErrSchema},       // WBEM_E_NOT_FOUND
		{0x80041010, host.ErrSchema},       // WBEM_E_INVALID_CLASS
		{0x80041003, host.ErrAccessDenied}, // WBEM_E_ACCESS_DENIED
		{0x80070005, host.ErrAccessDenied}, // E_ACCESSDENIED
		{0x80041001, nil},                  // WBEM_E_FAILED
		{0x80041006, nil},                  // WBEM_E_OUT_OF_MEMORY
	}
	meanings := []error{host.ErrSchema, host.ErrNotFound, host.ErrAccessDenied, host.ErrNotReady}
	for _, tt := range tests {
		for _, what := range []string{winhost.LookupClass, winhost.LookupMethod, winhost.LookupParameter} {
			e := scripted.New(t)
			e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: disk.Ref, Name: "Offline"},
				scripted.Reply{Err: &winhost.COMError{Op: "Get MSFT_Disk", HResult: tt.hr, Lookup: what}})
			err := winhost.NewDisks(e).SetOnline(context.Background(), disk, false)
			for _, m := range meanings {
				if got, want := errors.Is(err, m), errors.Is(tt.want, m); got != want {
					t.Errorf("0x%08X looking up the %s: errors.Is(%v, %v) = %t, want %t", tt.hr, what, err, m, got, want)
				}
			}
		}
	}
}

// ConnectionLost is the executor's rule for dropping its WMI connection
// (wmiexec drops it and reconnects on the next call) and the mapping's
// rule for ErrNotReady: one list for both.
func TestConnectionLost(t *testing.T) {
	for hr, want := range map[uint32]bool{
		0x80010108: true,  // RPC_E_DISCONNECTED
		0x80041033: true,  // WBEM_E_SHUTTING_DOWN
		0x80041015: true,  // WBEM_E_TRANSPORT_FAILURE
		0x800706BA: true,  // RPC_S_SERVER_UNAVAILABLE
		0x800706BE: true,  // RPC_S_CALL_FAILED
		0x800706BF: true,  // RPC_S_CALL_FAILED_DNE
		0x80041002: false, // WBEM_E_NOT_FOUND
		0x80041003: false, // WBEM_E_ACCESS_DENIED
		0x80041001: false, // WBEM_E_FAILED
		0x80070005: false, // E_ACCESSDENIED
		0xEFFF0003: false, // ISDSC_CONNECTION_FAILED: the target, not WMI
	} {
		if got := winhost.ConnectionLost(hr); got != want {
			t.Errorf("ConnectionLost(0x%08X) = %t, want %t", hr, got, want)
		}
	}
}

// The review found that a failure whose status was only in WMI's extended
// error object (WBEM_E_FAILED from the call) lost its meaning: the 1219,
// logon and CHAP tables apply whichever way the status arrives.
func TestExtendedErrorObject(t *testing.T) {
	smb := func(obj *winhost.Instance) error {
		e := scripted.New(t)
		e.ExpectMatching(scripted.KindCall, func(c scripted.Call) string {
			if c.Method.Name != "Create" {
				return "not Create"
			}
			return ""
		}, scripted.Reply{Err: failed(obj)})
		return winhost.NewSMB(e).Map(context.Background(), `\\srv\data`,
			host.Credential{User: `CORP\al`, Password: host.NewSecret("pw")}, false)
	}
	iscsi := func(obj *winhost.Instance) error {
		e := scripted.New(t)
		e.ExpectMatching(scripted.KindCall, func(c scripted.Call) string {
			if c.Method.Name != "Connect" {
				return "not Connect"
			}
			return ""
		}, scripted.Reply{Err: failed(obj)})
		_, err := winhost.NewISCSI(e).Connect(context.Background(), host.ConnectRequest{TargetIQN: iscIQN, Portal: iscPortal1,
			Auth: host.AuthOneWay, CHAP: host.CHAP{User: "u", Secret: host.NewSecret(iscSecret)}})
		return err
	}
	tests := []struct {
		name string
		run  func() error
		want error // nil: no host meaning
	}{
		{"SMB 1219 as error_Code", func() error {
			return smb(wmiError(map[string]any{"error_Code": int64(1219), "error_Type": "WIN32"}))
		}, host.ErrCredentialConflict},
		{"SMB 1326 in MessageID only", func() error {
			return smb(wmiError(map[string]any{"MessageID": "Windows System Error 1326"}))
		}, host.ErrLogonFailure},
		{"SMB 53 as an HRESULT error_Code", func() error {
			return smb(wmiError(map[string]any{"error_Code": int64(0x80070035), "error_Type": "HRESULT"}))
		}, host.ErrUnreachable},
		{"SMB object without a status", func() error { return smb(wmiError(nil)) }, nil},
		{"SMB no object", func() error { return smb(nil) }, nil},
		{"iSCSI CHAP failure as error_Code", func() error {
			return iscsi(wmiError(map[string]any{"error_Code": int64(isdscAuthFailure), "error_Type": "HRESULT"}))
		}, host.ErrLogonFailure},
		{"iSCSI target not found in MessageID", func() error {
			return iscsi(wmiError(map[string]any{"MessageID": "HRESULT 0xefff0029"}))
		}, host.ErrNotFound},
		{"iSCSI status of a signed error_Code", func() error {
			return iscsi(wmiError(map[string]any{"error_Code": int64(int32(-268500983)), "error_Type": "HRESULT"})) // 0xEFFF0009
		}, host.ErrLogonFailure},
		{"iSCSI __ExtendedStatus", func() error {
			return iscsi(&winhost.Instance{Class: "__ExtendedStatus", Props: map[string]any{
				"StatusCode": int64(isdscConnectionFailed), "Description": "connection failed", "Operation": "ExecMethod",
				"ParameterInfo": nil, "ProviderName": "iscsiwmiv2"}})
		}, host.ErrUnreachable},
	}
	meanings := []error{host.ErrCredentialConflict, host.ErrLogonFailure, host.ErrUnreachable, host.ErrNotFound, host.ErrAccessDenied}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil {
				t.Fatal("no error")
			}
			for _, m := range meanings {
				if got, want := errors.Is(err, m), errors.Is(tt.want, m); got != want {
					t.Errorf("errors.Is(%v, %v) = %t, want %t", err, m, got, want)
				}
			}
		})
	}
}

// The error text carries the error object's message, so a failure with
// no numeric meaning still says what the provider said.
func TestCOMErrorShowsErrorObjectMessage(t *testing.T) {
	err := &winhost.COMError{Op: "ExecMethod MSFT_SmbGlobalMapping.Create", HResult: 0x80041001,
		ErrorObject: wmiError(map[string]any{"Message": "The network name cannot be found."}), Lookup: ""}
	if got, want := err.Error(), "ExecMethod MSFT_SmbGlobalMapping.Create: HRESULT 0x80041001 (The network name cannot be found.)"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	lookup := &winhost.COMError{Op: "method Frob", HResult: 0x80041002, Lookup: winhost.LookupMethod}
	if got, want := lookup.Error(), "method Frob: HRESULT 0x80041002 looking up the method"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
