package winhost_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// Replies below follow what the SMB provider (SmbWmiV2, namespace
// Root\Microsoft\Windows\Smb) returns through IDispatch as the executor
// converts it: MSFT_SmbGlobalMapping has LocalPath, RemotePath (strings),
// Status (uint32: 0 OK … 6 Unavailable, MSFT_SmbMapping docs on
// learn.microsoft.com/previous-versions/windows/desktop/smb), RequirePrivacy,
// RequireIntegrity, UseWriteThrough (booleans); integers arrive as int64.
// Errors of the provider are Win32 codes ("Windows System Error 1219" in
// csi-driver-smb #219, 87 in csi-proxy #206, 53 in csi-driver-smb #294),
// expected here as HRESULT_FROM_WIN32 (see errors.go for the uncertainty).

const nsSMB = winhost.NamespaceSMB

func wqlMapping(remotePath string) string {
	return "SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '" + wqlEscape(remotePath) + "'"
}

// mappingRef is an MSFT_SmbGlobalMapping __PATH as the provider reports it
// (keys LocalPath and RemotePath; only its opacity matters).
func mappingRef(remotePath string) string {
	return `\\NODE1\ROOT\Microsoft\Windows\Smb:MSFT_SmbGlobalMapping.LocalPath="",RemotePath="` +
		strings.ReplaceAll(remotePath, `\`, `\\`) + `"`
}

func mappingInstance(remotePath string, status int64, privacy bool) winhost.Instance {
	return winhost.Instance{
		Path:  mappingRef(remotePath),
		Class: "MSFT_SmbGlobalMapping",
		Props: map[string]any{
			"LocalPath":        nil,
			"RemotePath":       remotePath,
			"Status":           status,
			"RequirePrivacy":   privacy,
			"RequireIntegrity": false,
			"UseWriteThrough":  false,
		},
	}
}

// hrWin32 is HRESULT_FROM_WIN32(code).
func hrWin32(code uint32) uint32 { return 0x80070000 | code }

func comErr(op string, hr uint32) error {
	return &winhost.COMError{Op: op, HResult: hr, Detail: "provider message"}
}

// wqlMappings lists every global mapping.
const wqlMappings = "SELECT * FROM MSFT_SmbGlobalMapping"

func TestSMBMappings(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		reply  scripted.Reply
		want   []host.SMBMapping
		wantEr error
	}{
		{"none", scripted.Reply{}, []host.SMBMapping{}, nil},
		{"every mapping, as stored", scripted.Reply{Instances: []winhost.Instance{
			mappingInstance(`\\srv\data`, 0, true), mappingInstance(`\\SRV2\Other\`, 6, false)}},
			[]host.SMBMapping{{RemotePath: `\\srv\data`, RequirePrivacy: true}, {RemotePath: `\\SRV2\Other\`, Status: host.MappingUnavailable}}, nil},
		{"query refused", scripted.Reply{Err: comErr("ExecQuery", 0x80041003)}, nil, host.ErrAccessDenied},
		{"a mapping without RemotePath fails the list", scripted.Reply{Instances: []winhost.Instance{
			mappingInstance(`\\srv\data`, 0, true), {Path: mappingRef(""), Class: "MSFT_SmbGlobalMapping", Props: map[string]any{"Status": int64(0)}}}},
			nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectQuery(nsSMB, wqlMappings, tc.reply)
			got, err := winhost.New(e).SMB.Mappings(ctx)
			if tc.want == nil && tc.wantEr == nil {
				var pe *winhost.PropError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a *PropError", err)
				}
				return
			}
			if !errors.Is(err, tc.wantEr) || (tc.wantEr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantEr)
			}
			if tc.wantEr == nil && !slices.Equal(got, tc.want) {
				t.Fatalf("mappings = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSMBMapping(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		arg    string
		query  string // "" when no query may be sent
		reply  scripted.Reply
		want   host.SMBMapping
		wantEr error
	}{
		{"mapped", `\\srv\data`, wqlMapping(`\\srv\data`),
			scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, true)}},
			host.SMBMapping{RemotePath: `\\srv\data`, Status: host.MappingOK, RequirePrivacy: true}, nil},
		{"stored in another case, trailing separator", `\\srv\data`, wqlMapping(`\\srv\data`),
			scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\SRV\Data\`, 2, false)}},
			host.SMBMapping{RemotePath: `\\SRV\Data\`, Status: host.MappingDisconnected}, nil},
		{"slashes and long prefix normalised", `//srv/data/`, wqlMapping(`\\srv\data`),
			scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 6, true)}},
			host.SMBMapping{RemotePath: `\\srv\data`, Status: host.MappingUnavailable, RequirePrivacy: true}, nil},
		{"long form", `\\?\UNC\srv\data`, wqlMapping(`\\srv\data`),
			scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, true)}},
			host.SMBMapping{RemotePath: `\\srv\data`, RequirePrivacy: true}, nil},
		{"not mapped", `\\srv\data`, wqlMapping(`\\srv\data`), scripted.Reply{}, host.SMBMapping{}, host.ErrNotFound},
		{"provider answers another share only", `\\srv\data`, wqlMapping(`\\srv\data`),
			scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data2`, 0, true)}}, host.SMBMapping{}, host.ErrNotFound},
		{"quote in the share name is escaped", `\\srv\o'brien`, wqlMapping(`\\srv\o'brien`), scripted.Reply{}, host.SMBMapping{}, host.ErrNotFound},
		{"query refused", `\\srv\data`, wqlMapping(`\\srv\data`),
			scripted.Reply{Err: comErr("ExecQuery", 0x80041003)}, host.SMBMapping{}, host.ErrAccessDenied},
		{"status of unexpected type", `\\srv\data`, wqlMapping(`\\srv\data`),
			scripted.Reply{Instances: []winhost.Instance{{Path: mappingRef(`\\srv\data`), Class: "MSFT_SmbGlobalMapping", Props: map[string]any{"RemotePath": `\\srv\data`, "Status": "OK"}}}},
			host.SMBMapping{}, nil},
		{"not a UNC path", `C:\data`, "", scripted.Reply{}, host.SMBMapping{}, host.ErrInvalid},
		{"no share", `\\srv`, "", scripted.Reply{}, host.SMBMapping{}, host.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			if tc.query != "" {
				e.ExpectQuery(nsSMB, tc.query, tc.reply)
			}
			got, err := winhost.New(e).SMB.Mapping(ctx, tc.arg)
			if tc.name == "status of unexpected type" {
				var pe *winhost.PropError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a *PropError", err)
				}
				return
			}
			if !errors.Is(err, tc.wantEr) || (tc.wantEr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantEr)
			}
			if got != tc.want {
				t.Fatalf("mapping = %+v, want %+v", got, tc.want)
			}
		})
	}
}

const pw = "S3cr3t:pa\\ss-9f2c"

func TestSMBMapCredentialEncoding(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		user    string
		pass    string
		privacy bool
		cred    string // expected Credential parameter; "" means none is sent
	}{
		{"bare user", "alice", pw, true, "alice:" + pw},
		{`DOMAIN\user`, `CORP\alice`, pw, true, `CORP\\alice:` + pw},
		{"user@domain", "alice@corp.example", pw, true, "alice@corp.example:" + pw},
		{"colon in the user name", `odd:name`, pw, false, `odd\:name:` + pw},
		{"colon and backslash in the user name", `DOM\a:b`, "p", true, `DOM\\a\:b:p`},
		{"empty password", "alice", "", true, "alice:"},
		{"anonymous", "", "", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			in := []winhost.Param{{Name: "RemotePath", Value: `\\srv\data`}}
			if tc.cred != "" {
				in = append(in, winhost.Param{Name: "Credential", Value: tc.cred, Sensitive: true})
			}
			in = append(in,
				winhost.Param{Name: "RequirePrivacy", Value: tc.privacy},
				winhost.Param{Name: "Persistent", Value: false})
			e.ExpectCall(nsSMB, winhost.Method{Class: "MSFT_SmbGlobalMapping", Name: "Create", In: in},
				scripted.Reply{Result: winhost.Result{ReturnValue: 0}})
			cred := host.Credential{User: tc.user, Password: host.NewSecret(tc.pass)}
			if err := winhost.NewSMB(e).Map(ctx, `//srv/data/`, cred, tc.privacy); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSMBMapErrors(t *testing.T) {
	ctx := context.Background()
	create := func(r scripted.Reply) func(e *scripted.Executor) {
		return func(e *scripted.Executor) {
			e.ExpectMatching(scripted.KindCall, func(c scripted.Call) string {
				if c.Method.Class != "MSFT_SmbGlobalMapping" || c.Method.Name != "Create" || c.Namespace != nsSMB {
					return "not MSFT_SmbGlobalMapping.Create"
				}
				return ""
			}, r)
		}
	}
	tests := []struct {
		name   string
		script func(e *scripted.Executor)
		want   error // nil: an error with no host meaning
	}{
		{"1219 credential conflict", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(1219))}), host.ErrCredentialConflict},
		{"1326 logon failure", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(1326))}), host.ErrLogonFailure},
		// A mapping without credentials that the server would take as
		// a guest logon, which the client's policy refuses
		// (ERROR_SMB_GUEST_LOGON_BLOCKED).
		{"1272 guest logon blocked", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(1272))}), host.ErrGuestLogonBlocked},
		{"86 invalid password", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(86))}), host.ErrLogonFailure},
		{"1909 account locked out", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(1909))}), host.ErrLogonFailure},
		{"1312 no logon session (user without domain)", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(1312))}), host.ErrLogonFailure},
		{"53 network path not found", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(53))}), host.ErrUnreachable},
		{"1232 host unreachable", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(1232))}), host.ErrUnreachable},
		{"67 share does not exist", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(67))}), host.ErrNotFound},
		{"5 access denied", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(5))}), host.ErrAccessDenied},
		{"65 network access denied (no encryption)", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(65))}), host.ErrAccessDenied},
		{"87 parameter incorrect", create(scripted.Reply{Err: comErr("ExecMethod", hrWin32(87))}), host.ErrInvalid},
		{"1219 as a return value", create(scripted.Reply{Result: winhost.Result{ReturnValue: 1219}}), host.ErrCredentialConflict},
		{"1326 as a Win32 error", create(scripted.Reply{Err: &winhost.Win32Error{Call: "Create", Code: 1326}}), host.ErrLogonFailure},
		{"WBEM_E_FAILED: no meaning", create(scripted.Reply{Err: comErr("ExecMethod", 0x80041001)}), nil},
		{"undocumented return value: no meaning", create(scripted.Reply{Result: winhost.Result{ReturnValue: 4242}}), nil},
		{"provider hangs past the deadline", create(scripted.Reply{Block: true}), context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			tc.script(e)
			timeout := time.Minute
			if errors.Is(tc.want, context.DeadlineExceeded) {
				timeout = 10 * time.Millisecond // only the hanging provider waits for it
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := winhost.NewSMB(e).Map(ctx, `\\srv\data`, host.Credential{User: `CORP\alice`, Password: host.NewSecret(pw)}, true)
			if err == nil {
				t.Fatal("Map succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				for _, s := range []error{host.ErrCredentialConflict, host.ErrLogonFailure, host.ErrAccessDenied,
					host.ErrUnreachable, host.ErrNotFound, host.ErrInvalid} {
					if errors.Is(err, s) {
						t.Fatalf("err = %v has meaning %v, want none", err, s)
					}
				}
			}
			if !strings.Contains(err.Error(), `\\srv\data`) {
				t.Errorf("error does not name the share: %v", err)
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("error reveals the password: %v", err)
			}
		})
	}
}

func TestSMBUnmap(t *testing.T) {
	ctx := context.Background()
	remove := func(rp string) winhost.Method {
		return winhost.Method{Class: "MSFT_SmbGlobalMapping", Path: mappingRef(rp), Name: "Remove",
			In: []winhost.Param{{Name: "Force", Value: true}}}
	}
	tests := []struct {
		name   string
		script func(e *scripted.Executor)
		want   error
	}{
		{"removed", func(e *scripted.Executor) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, true)}})
			e.ExpectCall(nsSMB, remove(`\\srv\data`), scripted.Reply{})
		}, nil},
		{"stored in another case", func(e *scripted.Executor) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\Srv\DATA`, 2, true)}})
			e.ExpectCall(nsSMB, remove(`\\Srv\DATA`), scripted.Reply{})
		}, nil},
		{"not mapped", func(e *scripted.Executor) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{})
		}, host.ErrNotFound},
		{"gone between query and remove", func(e *scripted.Executor) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, true)}})
			e.ExpectCall(nsSMB, remove(`\\srv\data`), scripted.Reply{Err: comErr("ExecMethod", 0x80041002)})
		}, host.ErrNotFound},
		{"2250 not connected", func(e *scripted.Executor) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, true)}})
			e.ExpectCall(nsSMB, remove(`\\srv\data`), scripted.Reply{Result: winhost.Result{ReturnValue: 2250}})
		}, host.ErrNotFound},
		{"access denied", func(e *scripted.Executor) {
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{Instances: []winhost.Instance{mappingInstance(`\\srv\data`, 0, true)}})
			e.ExpectCall(nsSMB, remove(`\\srv\data`), scripted.Reply{Err: comErr("ExecMethod", hrWin32(5))})
		}, host.ErrAccessDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			tc.script(e)
			err := winhost.NewSMB(e).Unmap(ctx, `\\srv\data`)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSMBCheck(t *testing.T) {
	ctx := context.Background()
	const fileAttributeDirectory = 0x10
	tests := []struct {
		name string
		arg  string
		path string // what GetFileAttributes must be called with; "" for no call
		err  error  // the executor's reply
		want error
	}{
		{"directory answers", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, nil, nil},
		{"slashes, trailing separator", `//srv/data/v1/`, `\\?\UNC\srv\data\v1`, nil, nil},
		{"long form given", `\\?\UNC\srv\data\v1\`, `\\?\UNC\srv\data\v1`, nil, nil},
		{"share root", `\\srv\data`, `\\?\UNC\srv\data`, nil, nil},
		{"2 file not found", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 2}, host.ErrNotFound},
		{"3 path not found", `\\srv\data\a\b`, `\\?\UNC\srv\data\a\b`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 3}, host.ErrNotFound},
		{"67 share gone", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 67}, host.ErrNotFound},
		{"53 server down", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 53}, host.ErrUnreachable},
		{"64 connection dropped", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 64}, host.ErrUnreachable},
		{"5 access denied (password rotated)", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 5}, host.ErrAccessDenied},
		{"1326 logon failure", `\\srv\data\v1`, `\\?\UNC\srv\data\v1`, &winhost.Win32Error{Call: "GetFileAttributes", Code: 1326}, host.ErrLogonFailure},
		{"not UNC", `C:\x`, "", nil, host.ErrInvalid},
		{"device path", `\\.\pipe\x`, "", nil, host.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			if tc.path != "" {
				e.ExpectWin32("GetFileAttributes", []any{tc.path}, scripted.Reply{Uint32: fileAttributeDirectory, Err: tc.err})
			}
			err := winhost.NewSMB(e).Check(ctx, tc.arg)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// recordingTB is a scripted.TB that keeps what the executor reports.
type recordingTB struct {
	mu   sync.Mutex
	msgs []string
	t    *testing.T
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Cleanup(f func()) { r.t.Cleanup(f) }

// The password never appears in the executor's description of a call (its
// mismatch report), in the log at -v=10, or in any error.
func TestSMBPasswordNeverPrinted(t *testing.T) {
	var logBuf strings.Builder
	var logMu sync.Mutex
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(10), textlogger.Output(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logBuf.Write(p)
	}))))
	ctx := klog.NewContext(context.Background(), logger)

	rec := &recordingTB{t: t}
	e := scripted.New(rec)
	// The script expects another password: the executor reports the
	// mismatch, describing both calls.
	e.ExpectCall(nsSMB, winhost.Method{Class: "MSFT_SmbGlobalMapping", Name: "Create", In: []winhost.Param{
		{Name: "RemotePath", Value: `\\srv\data`},
		{Name: "Credential", Value: `CORP\\alice:other-` + pw, Sensitive: true},
		{Name: "RequirePrivacy", Value: true},
		{Name: "Persistent", Value: false},
	}}, scripted.Reply{})
	err := winhost.NewSMB(e).Map(ctx, `\\srv\data`, host.Credential{User: `CORP\alice`, Password: host.NewSecret(pw)}, true)
	if err == nil {
		t.Fatal("a call that does not match the script succeeded")
	}
	rec.mu.Lock()
	msgs := strings.Join(rec.msgs, "\n")
	rec.mu.Unlock()
	if !strings.Contains(msgs, "Credential=[sensitive]") {
		t.Fatalf("the executor did not describe the mismatched call: %q", msgs)
	}
	logMu.Lock()
	log := logBuf.String()
	logMu.Unlock()
	if !strings.Contains(log, "MSFT_SmbGlobalMapping.Create") {
		t.Fatalf("the log at -v=10 misses the call: %q", log)
	}
	for what, s := range map[string]string{"executor report": msgs, "log": log, "error": err.Error()} {
		if strings.Contains(s, pw) || strings.Contains(s, "S3cr3t") {
			t.Errorf("%s reveals the password: %q", what, s)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
