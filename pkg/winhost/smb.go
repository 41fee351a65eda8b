package winhost

import (
	"context"
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
	if err == nil {
		var m host.SMBMapping
		if m, err = mappingOf(in); err == nil {
			return m, nil
		}
	}
	return host.SMBMapping{}, fmt.Errorf("read the global mapping of %s: %w", remotePath, err)
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
		return nil, fmt.Errorf("list global mappings: %w: %w", err, host.ErrInvalid)
	}
	insts, err := s.e.Query(ctx, NamespaceSMB, q)
	if err != nil {
		return nil, fmt.Errorf("list global mappings: %w", mapErr(classSmbGlobalMapping, err))
	}
	out := make([]host.SMBMapping, 0, len(insts))
	for _, in := range insts {
		m, err := mappingOf(in)
		if err != nil {
			return nil, fmt.Errorf("list global mappings: read %s: %w", in.Path, err)
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
// error wrapping host.ErrNotFound. Its callers name the operation.
func (s *SMB) find(ctx context.Context, remotePath string) (Instance, error) {
	rp, err := remote(remotePath)
	if err != nil {
		return Instance{}, err
	}
	q, err := wql.Select(classSmbGlobalMapping, nil, wql.Eq("RemotePath", rp))
	if err != nil {
		return Instance{}, fmt.Errorf("build the query: %w: %w", err, host.ErrInvalid)
	}
	insts, err := s.e.Query(ctx, NamespaceSMB, q)
	if err != nil {
		return Instance{}, mapErr(classSmbGlobalMapping, err)
	}
	for _, in := range insts {
		got, ok := in.Props["RemotePath"].(string)
		if ok && strings.EqualFold(strings.TrimRight(got, `\`), rp) {
			return in, nil
		}
	}
	return Instance{}, fmt.Errorf("no such mapping: %w", host.ErrNotFound)
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
		return fmt.Errorf("create the global mapping of %s%s: %w", rp, as, err)
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
	if err == nil {
		err = s.call(ctx, Method{Class: classSmbGlobalMapping, Path: in.Path, Name: "Remove", In: []Param{{Name: "Force", Value: true}}}, remotePath)
	}
	if err != nil {
		return fmt.Errorf("remove the global mapping of %s: %w", remotePath, err)
	}
	return nil
}

// call invokes an MSFT_SmbGlobalMapping method on the mapping of
// remotePath (logged). A non-zero return value is an error too; either
// failure gets its meaning in errors.go (mapErr, methodError).
func (s *SMB) call(ctx context.Context, m Method, remotePath string) error {
	klog.FromContext(ctx).V(5).Info("Invoking WMI method", "method", m.Class+"."+m.Name, "remotePath", remotePath)
	r, err := s.e.Call(ctx, NamespaceSMB, m)
	if err != nil {
		return mapErr(m.Class, err)
	}
	if r.ReturnValue != 0 {
		return methodError(m.Class, m.Name, r.ReturnValue)
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
		return fmt.Errorf("read attributes of %s: %w", rp, mapErr(classSmbGlobalMapping, err))
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
