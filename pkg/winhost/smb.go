package winhost

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// classSmbGlobalMapping is the SMB client's global mapping class in
// Root\Microsoft\Windows\Smb (SmbWmiV2). Its properties are LocalPath,
// RemotePath, Status, RequirePrivacy, RequireIntegrity and UseWriteThrough;
// it has no user name property, so the backend records who made a mapping
// itself (microsoft/wmi server2019/root/microsoft/windows/smb,
// MSFT_SmbGlobalMapping.go).
const classSmbGlobalMapping = "MSFT_SmbGlobalMapping"

// SMB is host.SMB on Windows: SMB global mappings through
// MSFT_SmbGlobalMapping, and reachability through GetFileAttributesW.
type SMB struct{ e Executor }

var _ host.SMB = (*SMB)(nil)

// NewSMB returns the SMB part of the Windows host.
func NewSMB(e Executor) *SMB { return &SMB{e: e} }

// Mapping returns the global mapping of remotePath:
//
//	SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '<remotePath>'
//
// The value is escaped by pkg/winhost/wql. Whether WQL's '=' on strings ignores
// case is not stated by the WQL documentation (WHERE Clause (WMI), WQL
// Operators on learn.microsoft.com/windows/win32/wmisdk say nothing about
// case), and the SMB provider may evaluate the filter itself: uncertain.
// The plugin always maps lower-cased paths, so its own mappings match
// either way; the returned instances are compared case-insensitively here
// as well, so a provider that ignores the filter or answers loosely cannot
// hand back another share's mapping. A mapping made outside the plugin in
// another case may be missed if the comparison is case-sensitive; Map then
// fails and the backend reports a conflict naming Remove-SmbGlobalMapping.
func (s *SMB) Mapping(ctx context.Context, remotePath string) (host.SMBMapping, error) {
	in, err := s.find(ctx, remotePath)
	if err != nil {
		return host.SMBMapping{}, err
	}
	m, err := mappingOf(in)
	if err != nil {
		return host.SMBMapping{}, fmt.Errorf("read global mapping of %s: %w", remotePath, err)
	}
	return m, nil
}

// Mappings returns every global mapping of the node:
//
//	SELECT * FROM MSFT_SmbGlobalMapping
//
// A mapping whose properties cannot be read fails the whole list: a tool
// that takes stock of the node must not silently miss one.
func (s *SMB) Mappings(ctx context.Context) ([]host.SMBMapping, error) {
	q, err := wql.Select(classSmbGlobalMapping, nil)
	if err != nil {
		return nil, fmt.Errorf("query global mappings: %w: %w", err, host.ErrInvalid)
	}
	insts, err := s.e.Query(ctx, NamespaceSMB, q)
	if err != nil {
		return nil, fmt.Errorf("query global mappings: %w", mapSMBErr(err))
	}
	out := make([]host.SMBMapping, 0, len(insts))
	for _, in := range insts {
		m, err := mappingOf(in)
		if err != nil {
			return nil, fmt.Errorf("read global mapping %s: %w", in.Path, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// mappingOf reads the properties of an MSFT_SmbGlobalMapping instance.
func mappingOf(in Instance) (host.SMBMapping, error) {
	p := PropsOf(in)
	m := host.SMBMapping{
		RemotePath:     p.RequiredString("RemotePath"),
		LocalPath:      p.String("LocalPath"),
		Status:         host.MappingStatus(p.Uint32("Status")),
		RequirePrivacy: p.Bool("RequirePrivacy"),
	}
	return m, p.Err()
}

// find returns the MSFT_SmbGlobalMapping instance of remotePath, or an
// error wrapping host.ErrNotFound.
func (s *SMB) find(ctx context.Context, remotePath string) (Instance, error) {
	rp, err := remote(remotePath)
	if err != nil {
		return Instance{}, err
	}
	q, err := wql.Select(classSmbGlobalMapping, nil, wql.Eq("RemotePath", rp))
	if err != nil {
		return Instance{}, fmt.Errorf("query global mapping of %s: %w: %w", rp, err, host.ErrInvalid)
	}
	insts, err := s.e.Query(ctx, NamespaceSMB, q)
	if err != nil {
		return Instance{}, fmt.Errorf("query global mapping of %s: %w", rp, mapSMBErr(err))
	}
	for _, in := range insts {
		got, ok := in.Props["RemotePath"].(string)
		if ok && strings.EqualFold(strings.TrimRight(got, `\`), rp) {
			return in, nil
		}
	}
	return Instance{}, fmt.Errorf("global mapping of %s: %w", rp, host.ErrNotFound)
}

// Map creates a global mapping with the static method
//
//	MSFT_SmbGlobalMapping.Create(RemotePath, Credential, RequirePrivacy, Persistent)
//
// Credential is a string, not a PSCredential: "<user>:<password>" with '\'
// and ':' in the user name escaped by a backslash, the encoding PowerShell's
// CIM cmdletization uses to pass a PSCredential to this provider
// (PowerShell/PowerShell cimConverter.cs, CimConverter.ConvertFromDotNetToCim;
// kubernetes-csi/csi-proxy@eeba470 pkg/wmi/smb.go, csi-proxy PR #387). It is passed as a sensitive
// parameter: no executor or logger prints it. An empty user name maps
// anonymously and omits Credential.
//
// Persistent is passed as false, explicitly. New-SmbGlobalMapping defaults
// to a persistent mapping whose credentials go to the Credential Manager and
// are replayed at boot; after a reboot that restored mapping is the one
// csi-driver-smb #219 saw break later mappings of the server ("multiple
// connections ..."). A non-persistent mapping disappears at reboot, and
// kubelet re-stages every volume still in use after a node restart, which
// maps the share again with the current secret. What the provider does
// when Persistent is omitted is undocumented (csi-proxy omits it,
// kubernetes-csi/csi-proxy@eeba470 pkg/wmi/smb.go), hence the explicit value.
//
// RemotePath is the share root as the backend gives it (lower case). The
// RequirePrivacy flag asks for SMB 3 encryption.
func (s *SMB) Map(ctx context.Context, remotePath string, cred host.Credential, requirePrivacy bool) error {
	rp, err := remote(remotePath)
	if err != nil {
		return err
	}
	in := []Param{{Name: "RemotePath", Value: rp}}
	if cred.User != "" {
		in = append(in, Param{Name: "Credential", Value: credentialString(cred), Sensitive: true})
	}
	in = append(in,
		Param{Name: "RequirePrivacy", Value: requirePrivacy},
		Param{Name: "Persistent", Value: false},
	)
	if err := s.call(ctx, Method{Class: classSmbGlobalMapping, Name: "Create", In: in}, rp); err != nil {
		as := ""
		if cred.User != "" {
			as = " as user " + cred.User
		}
		return fmt.Errorf("create global mapping of %s%s: %w", rp, as, err)
	}
	return nil
}

// credentialString encodes a credential as the provider's Credential
// string. This is the only place the password is revealed.
func credentialString(c host.Credential) string {
	return escapeUser(c.User) + ":" + c.Password.Reveal()
}

// escapeUser escapes a user name for the Credential string: '\' becomes
// "\\" and ':' becomes "\:" (DOMAIN\user -> DOMAIN\\user). The password
// follows the first unescaped ':' and is not escaped.
func escapeUser(u string) string {
	u = strings.ReplaceAll(u, `\`, `\\`)
	return strings.ReplaceAll(u, ":", `\:`)
}

// Unmap removes the global mapping of remotePath: it looks the instance up
// and calls its Remove(Force = true) method, which closes open handles
// (Remove-SmbGlobalMapping -Force; as kubernetes-csi/csi-proxy@eeba470 pkg/wmi/smb.go does).
func (s *SMB) Unmap(ctx context.Context, remotePath string) error {
	in, err := s.find(ctx, remotePath)
	if err != nil {
		return err
	}
	m := Method{Class: classSmbGlobalMapping, Path: in.Path, Name: "Remove", In: []Param{{Name: "Force", Value: true}}}
	if err := s.call(ctx, m, remotePath); err != nil {
		return fmt.Errorf("remove global mapping of %s: %w", remotePath, err)
	}
	return nil
}

// call invokes an MSFT_SmbGlobalMapping method on the mapping of
// remotePath (logged). A non-zero return value is an error too; either
// failure has its SMB meaning (mapSMBErr).
func (s *SMB) call(ctx context.Context, m Method, remotePath string) error {
	klog.FromContext(ctx).V(5).Info("Invoking WMI method", "method", m.Class+"."+m.Name, "remotePath", remotePath)
	r, err := s.e.Call(ctx, NamespaceSMB, m)
	if err == nil && r.ReturnValue != 0 {
		err = smbMethodError(m.Name, r.ReturnValue)
	}
	if err != nil {
		return mapSMBErr(err)
	}
	return nil
}

// Check reads the attributes of a UNC path through the global mappings:
// GetFileAttributesW on its long form (\\?\UNC\server\share\dir). The
// attributes themselves do not matter; the error code tells whether the
// share answers.
func (s *SMB) Check(ctx context.Context, uncPath string) error {
	rp, err := remote(uncPath)
	if err != nil {
		return err
	}
	if _, err := s.e.GetFileAttributes(ctx, winpath.LongPath(rp)); err != nil {
		return fmt.Errorf("read attributes of %s: %w", rp, mapSMBErr(err))
	}
	return nil
}

// remote normalises a UNC path for the SMB client: '/' becomes '\', a long
// \\?\UNC\ prefix becomes \\, trailing separators go. Anything that is not
// \\server\share[\...] is refused.
func remote(p string) (string, error) {
	s := strings.ReplaceAll(p, "/", `\`)
	for _, prefix := range []string{`\\?\UNC\`, `\??\UNC\`} {
		if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
			s = `\\` + s[len(prefix):]
		}
	}
	s = strings.TrimRight(s, `\`)
	rest, ok := strings.CutPrefix(s, `\\`)
	parts := strings.Split(rest, `\`)
	if !ok || len(parts) < 2 || parts[0] == "" || parts[1] == "" || parts[0] == "?" || parts[0] == "." {
		return "", fmt.Errorf("%q is not a UNC path \\\\server\\share: %w", p, host.ErrInvalid)
	}
	return s, nil
}

// smbCode is what a Win32 error code means when the SMB client returns it.
type smbCode struct {
	name     string
	sentinel error
}

// smbCodes are the Win32 errors the SMB client reports for mappings and
// for paths reached through them (System Error Codes,
// learn.microsoft.com/windows/win32/debug/system-error-codes--0-499 and
// --1000-1299 and --1300-1699; the SMB cases from the csi-driver-smb and
// csi-proxy issues cited). Codes not listed fall back to sentinelForWin32.
var smbCodes = map[uint32]smbCode{
	ErrorAccessDenied:              {"ERROR_ACCESS_DENIED", host.ErrAccessDenied},
	ErrorBadNetpath:                {"ERROR_BAD_NETPATH", host.ErrUnreachable}, // "The network path was not found" (csi-driver-smb #294)
	ErrorNetworkAccessDenied:       {"ERROR_NETWORK_ACCESS_DENIED", host.ErrAccessDenied},
	ErrorBadNetName:                {"ERROR_BAD_NET_NAME", host.ErrNotFound}, // the share does not exist on the server
	ErrorInvalidParameter:          {"ERROR_INVALID_PARAMETER", host.ErrInvalid},
	ErrorSessionCredentialConflict: {"ERROR_SESSION_CREDENTIAL_CONFLICT", host.ErrCredentialConflict},
	ErrorLogonFailure:              {"ERROR_LOGON_FAILURE", host.ErrLogonFailure},
	51:                             {"ERROR_REM_NOT_LIST", host.ErrUnreachable},
	59:                             {"ERROR_UNEXP_NET_ERR", host.ErrUnreachable},
	64:                             {"ERROR_NETNAME_DELETED", host.ErrUnreachable},
	85:                             {"ERROR_ALREADY_ASSIGNED", host.ErrAlreadyExists},
	86:                             {"ERROR_INVALID_PASSWORD", host.ErrLogonFailure},
	121:                            {"ERROR_SEM_TIMEOUT", host.ErrUnreachable},
	1202:                           {"ERROR_DEVICE_ALREADY_REMEMBERED", host.ErrAlreadyExists},
	1222:                           {"ERROR_NO_NETWORK", host.ErrUnreachable},
	1231:                           {"ERROR_NETWORK_UNREACHABLE", host.ErrUnreachable},
	1232:                           {"ERROR_HOST_UNREACHABLE", host.ErrUnreachable},
	1311:                           {"ERROR_NO_LOGON_SERVERS", host.ErrUnreachable},
	2250:                           {"ERROR_NOT_CONNECTED", host.ErrNotFound}, // "This network connection does not exist"
	// Account problems are logon failures the user must fix in the secret
	// or the directory (csi-proxy #206: a blocked account looked like a
	// generic failure). "A specified logon session does not exist" (1312):
	// csi-driver-smb known-issues.md #1 says the user name lacked a domain
	// (DOMAIN\user).
	1312: {"ERROR_NO_SUCH_LOGON_SESSION", host.ErrLogonFailure},
	1327: {"ERROR_ACCOUNT_RESTRICTION", host.ErrLogonFailure},
	1330: {"ERROR_PASSWORD_EXPIRED", host.ErrLogonFailure},
	1331: {"ERROR_ACCOUNT_DISABLED", host.ErrLogonFailure},
	1909: {"ERROR_ACCOUNT_LOCKED_OUT", host.ErrLogonFailure},
}

// smbWin32Error is a Win32 error code the SMB client reported, through a
// failed method (HRESULT_FROM_WIN32) or a non-zero return value.
type smbWin32Error struct {
	code uint32
	name string
}

func (e *smbWin32Error) Error() string {
	if e.name == "" {
		return fmt.Sprintf("win32 error %d", e.code)
	}
	return fmt.Sprintf("win32 error %d (%s)", e.code, e.name)
}

// smbMethodError is the error of a non-zero return value of an
// MSFT_SmbGlobalMapping method. The SMB provider documents no return
// values for its methods (the MSFT_SmbMapping.Create page lists none);
// failures are expected as COM errors (below). A non-zero value is read as
// the Win32 code it most likely is, which mapSMBErr then interprets.
func smbMethodError(method string, rv uint32) error {
	return &MethodError{Class: classSmbGlobalMapping, Method: method, ReturnValue: rv, Message: smbCodes[rv].name}
}

// mapSMBErr gives an executor error its host meaning for SMB calls.
//
// How MSFT_SmbGlobalMapping.Create reports failures is not documented.
// What is known: PowerShell shows them as a CimException whose
// FullyQualifiedErrorId is "Windows System Error <code>" (1219 in
// kubernetes-csi/csi-driver-smb#219, 87 in kubernetes-csi/csi-proxy#206,
// 53 in kubernetes-csi/csi-driver-smb#294), that is an MSFT_WmiError of the
// Win32 type posted by the provider (MI_Context_PostError with
// MI_RESULT_TYPE_WIN32). Through the COM scripting API the executor uses,
// such an error arrives as a failed ExecMethod whose HRESULT may be
// HRESULT_FROM_WIN32(code) (0x8007xxxx) or a generic WBEM_E_FAILED with
// the code only in the extended error object; both are read (smbStatus,
// errorObjectStatus in wmistatus.go), and so are a *Win32Error and a
// non-zero return value carrying the code.
//
// Failures of WMI itself mean on this path what they mean on every other
// (mapHostErr): RPC_S_SERVER_UNAVAILABLE and RPC_S_CALL_FAILED while the
// WMI service restarts are host.ErrNotReady, E_ACCESSDENIED is
// host.ErrAccessDenied, a schema lookup is host.ErrSchema.
func mapSMBErr(err error) error {
	code, fromWin32Error, ok := smbStatus(err)
	if !ok {
		return mapHostErr(err)
	}
	c, known := smbCodes[code]
	sentinel := c.sentinel
	if !known {
		sentinel = sentinelForWin32(code)
	}
	if sentinel == nil {
		return err
	}
	if !fromWin32Error || (c.name != "" && win32Name(code) == "unknown") {
		// Name the Win32 code the COM error, error object or return value
		// carried, or one the shared table does not know.
		name := c.name
		if name == "" && win32Name(code) != "unknown" {
			name = win32Name(code)
		}
		err = fmt.Errorf("%w: %w", err, &smbWin32Error{code: code, name: name})
	}
	return fmt.Errorf("%w: %w", err, sentinel)
}

// smbStatus returns the Win32 code an SMB failure carries, and whether it
// came from a *Win32Error (which names its code itself).
func smbStatus(err error) (code uint32, fromWin32Error, ok bool) {
	var (
		ce *COMError
		me *MethodError
		we *Win32Error
	)
	isCOM := errors.As(err, &ce)
	switch {
	case isCOM && ce.Lookup != "":
		return 0, false, false
	case errors.As(err, &we):
		return we.Code, true, true
	case isCOM:
		if w, found := win32FromHResult(ce.HResult); found {
			return w, false, true
		}
		if st := errorObjectStatus(ce.ErrorObject); st.hasW32 {
			return st.win32, false, true
		}
	}
	if errors.As(err, &me) && me.Class == classSmbGlobalMapping {
		return me.ReturnValue, false, true
	}
	return 0, false, false
}
