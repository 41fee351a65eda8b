package hosttest

import (
	"context"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// The SMB client's global mappings (MSFT_SmbGlobalMapping in
// Root\Microsoft\Windows\Smb, which New-SmbGlobalMapping,
// Get-SmbGlobalMapping and Remove-SmbGlobalMapping wrap). The Win32 codes
// are from the System Error Codes pages on learn.microsoft.com; the SMB
// situations from the issues each case cites.
var smbCases = []Case{
	// Mapping and Unmap of a share never mapped: ErrNotFound; Mappings
	// lists every mapping, so not this one.
	{Name: "smb/missing-mapping", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		_, err := f.Host.SMB.Mapping(ctx, f.MissingShare)
		is(t, "Mapping of an unmapped share", err, host.ErrNotFound)
		is(t, "Unmap of an unmapped share", f.Host.SMB.Unmap(ctx, f.MissingShare), host.ErrNotFound)
		listed(t, ctx, f, f.MissingShare, false)
	}},
	// A mapping made is found (its path compared without case) with
	// status OK and the privacy it was made with, is listed, and reaches
	// the share; a directory the share lacks is ErrNotFound through it
	// (ERROR_FILE_NOT_FOUND or ERROR_PATH_NOT_FOUND). Unmap removes it; a
	// second Unmap finds none.
	{Name: "smb/map-check-unmap", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Map", f.Host.SMB.Map(ctx, f.Share, f.User, true), nil)
		mapped(t, ctx, f, f.Share, true)
		listed(t, ctx, f, f.Share, true)
		is(t, "Check of the share", f.Host.SMB.Check(ctx, f.Share), nil)
		is(t, "Check of a directory the share lacks", f.Host.SMB.Check(ctx, f.Share+`\no-such-directory`), host.ErrNotFound)
		is(t, "Unmap", f.Host.SMB.Unmap(ctx, f.Share), nil)
		_, err := f.Host.SMB.Mapping(ctx, f.Share)
		is(t, "Mapping after Unmap", err, host.ErrNotFound)
		listed(t, ctx, f, f.Share, false)
		is(t, "Unmap again", f.Host.SMB.Unmap(ctx, f.Share), host.ErrNotFound)
	}},
	// A wrong password: ERROR_LOGON_FAILURE (1326, "The user name or
	// password is incorrect"), and no mapping is left that would stand in
	// the way of the right one.
	{Name: "smb/wrong-password", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		wrong := host.Credential{User: f.User.User, Password: host.NewSecret("Wrong-password-1")}
		is(t, "Map with a wrong password", f.Host.SMB.Map(ctx, f.Share, wrong, true), host.ErrLogonFailure)
		_, err := f.Host.SMB.Mapping(ctx, f.Share)
		is(t, "Mapping after the refused Map", err, host.ErrNotFound)
		is(t, "Map with the right password", f.Host.SMB.Map(ctx, f.Share, f.User, true), nil)
		is(t, "Unmap", f.Host.SMB.Unmap(ctx, f.Share), nil)
	}},
	// A second user name for one server: ERROR_SESSION_CREDENTIAL_CONFLICT
	// (1219, "Multiple connections to a server or shared resource by the
	// same user, using more than one user name, are not allowed";
	// kubernetes-csi/csi-driver-smb#219), even for another share and a
	// user the server accepts; the first mapping is untouched.
	{Name: "smb/second-user-one-server", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Map as the first user", f.Host.SMB.Map(ctx, f.Share, f.User, true), nil)
		is(t, "Map another share of the server as another user", f.Host.SMB.Map(ctx, f.OtherShare, f.OtherUser, true), host.ErrCredentialConflict)
		_, err := f.Host.SMB.Mapping(ctx, f.OtherShare)
		is(t, "Mapping of the refused share", err, host.ErrNotFound)
		mapped(t, ctx, f, f.Share, true)
		is(t, "Unmap", f.Host.SMB.Unmap(ctx, f.Share), nil)
	}},
	// One user name may map several shares of one server, each with its
	// own privacy setting.
	{Name: "smb/one-user-two-shares", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Map the first share", f.Host.SMB.Map(ctx, f.Share, f.User, true), nil)
		is(t, "Map the second share as the same user", f.Host.SMB.Map(ctx, f.OtherShare, f.User, false), nil)
		mapped(t, ctx, f, f.Share, true)
		mapped(t, ctx, f, f.OtherShare, false)
		is(t, "Unmap the second", f.Host.SMB.Unmap(ctx, f.OtherShare), nil)
		mapped(t, ctx, f, f.Share, true)
		is(t, "Unmap the first", f.Host.SMB.Unmap(ctx, f.Share), nil)
	}},
	// A server that does not answer (a name that does not resolve):
	// ERROR_BAD_NETPATH (53, "The network path was not found";
	// kubernetes-csi/csi-driver-smb#294) or another network error (64,
	// 1231, 1232, …), all ErrUnreachable; nothing is mapped, and reading a
	// path of it fails the same way.
	{Name: "smb/unreachable-server", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Map of a share of a server that does not answer", f.Host.SMB.Map(ctx, f.MissingShare, f.User, true), host.ErrUnreachable)
		_, err := f.Host.SMB.Mapping(ctx, f.MissingShare)
		is(t, "Mapping after the refused Map", err, host.ErrNotFound)
		is(t, "Check of a path of that server", f.Host.SMB.Check(ctx, f.MissingShare), host.ErrUnreachable)
	}},
	// A share the server does not have: ERROR_BAD_NET_NAME (67, "The
	// network name cannot be found").
	{Name: "smb/missing-share", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		missing := serverOf(f.Share) + `\no-such-share`
		is(t, "Map of a share the server lacks", f.Host.SMB.Map(ctx, missing, f.User, true), host.ErrNotFound)
		_, err := f.Host.SMB.Mapping(ctx, missing)
		is(t, "Mapping after the refused Map", err, host.ErrNotFound)
	}},
	// The server stops answering after the mapping was made. Windows keeps
	// the mapping object (kubernetes-csi/csi-driver-smb PR #1219 met
	// mappings left with a non-OK status), paths through it fail as
	// unreachable, and Remove with Force removes it all the same (as that
	// PR does). Uncertain: when Windows notices, so the status read
	// may still be OK or any of the documented states (Disconnected,
	// NetworkError, Reconnecting, Unavailable, …: MSFT_SmbGlobalMapping
	// Status); every one is accepted and logged.
	{Name: "smb/server-drops", Given: SMBShares, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		is(t, "Map", f.Host.SMB.Map(ctx, f.Share, f.User, true), nil)
		f.DropServer(t)
		is(t, "Check after the server dropped", f.Host.SMB.Check(ctx, f.Share), host.ErrUnreachable)
		m, err := f.Host.SMB.Mapping(ctx, f.Share)
		is(t, "Mapping after the server dropped", err, nil)
		if m.Status > host.MappingUnavailable {
			t.Fatalf("status %s is not one MSFT_SmbGlobalMapping documents", m.Status)
		}
		t.Logf("status after the server dropped: %s", m.Status)
		is(t, "Unmap after the server dropped", f.Host.SMB.Unmap(ctx, f.Share), nil)
		listed(t, ctx, f, f.Share, false)
	}},
}

// mapped checks that remotePath has a global mapping with status OK and
// the privacy setting given.
func mapped(t *testing.T, ctx context.Context, f Fixture, remotePath string, requirePrivacy bool) {
	t.Helper()
	m, err := f.Host.SMB.Mapping(ctx, remotePath)
	is(t, "Mapping of "+remotePath, err, nil)
	if !sameShare(m.RemotePath, remotePath) || m.Status != host.MappingOK || m.RequirePrivacy != requirePrivacy {
		t.Fatalf("Mapping of %s: %+v, want that path, status OK, RequirePrivacy %t", remotePath, m, requirePrivacy)
	}
}

// listed checks whether Mappings lists remotePath.
func listed(t *testing.T, ctx context.Context, f Fixture, remotePath string, want bool) {
	t.Helper()
	ms, err := f.Host.SMB.Mappings(ctx)
	is(t, "Mappings", err, nil)
	found := false
	for _, m := range ms {
		found = found || sameShare(m.RemotePath, remotePath)
	}
	if found != want {
		t.Fatalf("Mappings lists %s: %t, want %t (%+v)", remotePath, found, want, ms)
	}
}

// sameShare compares UNC paths as the SMB client does: without case, a
// trailing separator ignored.
func sameShare(a, b string) bool {
	return strings.EqualFold(strings.TrimRight(a, `\`), strings.TrimRight(b, `\`))
}

// serverOf returns \\server of \\server\share.
func serverOf(share string) string {
	rest := strings.TrimPrefix(share, `\\`)
	server, _, _ := strings.Cut(rest, `\`)
	return `\\` + server
}
