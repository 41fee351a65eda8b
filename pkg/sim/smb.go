package sim

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// DefaultShareCapacity is a share's capacity when ShareSpec.Capacity is 0.
const DefaultShareCapacity = 100 << 30

func (s *Sim) smbRoot() string { return filepath.Join(s.dir, smbSubdir) }

func (s *Sim) shareDir(server, share string) string {
	return filepath.Join(s.dir, smbSubdir, strings.ToLower(server), strings.ToLower(share))
}

func uncRoot(server, share string) string { return `\\` + server + `\` + share }

func isUNC(p string) bool {
	q := strings.ReplaceAll(p, "/", `\`)
	return strings.HasPrefix(q, `\\`) && !strings.HasPrefix(strings.ToLower(q), `\\?\volume{`)
}

// parseUNC splits \\server\share\rest, \\?\UNC\server\share\rest or the
// same with '/' (trailing separator optional).
func parseUNC(p string) (server, share string, rest []string, err error) {
	q := strings.ReplaceAll(p, "/", `\`)
	if len(q) >= 8 && strings.EqualFold(q[:8], `\\?\UNC\`) {
		q = `\\` + q[8:]
	}
	if !strings.HasPrefix(q, `\\`) || strings.HasPrefix(q, `\\?\`) || strings.HasPrefix(q, `\\.\`) {
		return "", "", nil, fmt.Errorf("UNC path %q: %w", p, host.ErrInvalid)
	}
	var parts []string
	for _, c := range strings.Split(q[2:], `\`) {
		switch c {
		case "":
			continue
		case ".", "..":
			return "", "", nil, fmt.Errorf("UNC path %q: %w", p, host.ErrInvalid)
		}
		parts = append(parts, c)
	}
	if len(parts) < 2 {
		return "", "", nil, fmt.Errorf("UNC path %q names no share: %w", p, host.ErrInvalid)
	}
	return parts[0], parts[1], parts[2:], nil
}

// uncFromParts rebuilds \\Server\Share\rest from the components of a path
// under <Dir>/smb, with the share's configured spelling.
func (st *State) uncFromParts(parts []string) string {
	server, share := parts[0], parts[1]
	if sh := st.share(server, share); sh != nil {
		server, share = sh.Server, sh.Share
	}
	return strings.Join(append([]string{uncRoot(server, share)}, parts[2:]...), `\`)
}

func (st *State) share(server, share string) *ShareState {
	for i := range st.Shares {
		if strings.EqualFold(st.Shares[i].Server, server) && strings.EqualFold(st.Shares[i].Share, share) {
			return &st.Shares[i]
		}
	}
	return nil
}

// serverState reports whether any share is configured on server and
// whether the server answers.
func (st *State) serverState(server string) (known, reachable bool) {
	for _, sh := range st.Shares {
		if strings.EqualFold(sh.Server, server) {
			return true, sh.Reachable
		}
	}
	return false, false
}

func (sh *ShareState) user(name string) *ShareUser {
	for i := range sh.Users {
		if strings.EqualFold(sh.Users[i].Name, name) {
			return &sh.Users[i]
		}
	}
	return nil
}

func (st *State) mappingIndex(remotePath string) int {
	server, share, rest, err := parseUNC(remotePath)
	if err != nil {
		return -1
	}
	want := strings.ToLower(strings.Join(append([]string{uncRoot(server, share)}, rest...), `\`))
	for i, m := range st.Mappings {
		if strings.ToLower(m.RemotePath) == want {
			return i
		}
	}
	return -1
}

// covering returns the mapping through which a UNC path is reached: one of
// the same share whose path is a prefix of it.
func (st *State) covering(server, share string, rest []string) *MappingState {
	for i := range st.Mappings {
		m := &st.Mappings[i]
		ms, msh, mrest, err := parseUNC(m.RemotePath)
		if err != nil || !strings.EqualFold(ms, server) || !strings.EqualFold(msh, share) || len(mrest) > len(rest) {
			continue
		}
		match := true
		for j := range mrest {
			if !strings.EqualFold(mrest[j], rest[j]) {
				match = false
				break
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// shareAccess decides whether the share can be read through the global
// mappings now.
func (st *State) shareAccess(sh *ShareState, rest []string) error {
	m := st.covering(sh.Server, sh.Share, rest)
	if m == nil {
		return fmt.Errorf("share %s: no global mapping: %w", uncRoot(sh.Server, sh.Share), host.ErrAccessDenied)
	}
	if !sh.Reachable || m.Status != host.MappingOK {
		return fmt.Errorf("share %s: mapping %s is %s: %w", uncRoot(sh.Server, sh.Share), m.RemotePath, m.Status, host.ErrUnreachable)
	}
	// After a password change the mapping still says OK but access fails
	// (csi-proxy PRs #66/#75).
	if u := sh.user(m.User); u == nil || u.Generation != m.UserGeneration {
		return fmt.Errorf("share %s: credentials of mapping %s no longer valid: %w", uncRoot(sh.Server, sh.Share), m.RemotePath, host.ErrAccessDenied)
	}
	return nil
}

func (s *Sim) sharePath(sh *ShareState, rest []string) string {
	return filepath.Join(append([]string{s.shareDir(sh.Server, sh.Share)}, rest...)...)
}

// smbHost implements host.SMB.
type smbHost struct{ s *Sim }

func (h smbHost) Mapping(ctx context.Context, remotePath string) (host.SMBMapping, error) {
	return call(ctx, h.s, OpSMBMapping, false, func(st *State) (host.SMBMapping, error) {
		i := st.mappingIndex(remotePath)
		if i < 0 {
			return host.SMBMapping{}, fmt.Errorf("mapping %s: %w", remotePath, host.ErrNotFound)
		}
		return st.Mappings[i].toHost(), nil
	})
}

func (h smbHost) Mappings(ctx context.Context) ([]host.SMBMapping, error) {
	return call(ctx, h.s, OpSMBMappings, false, func(st *State) ([]host.SMBMapping, error) {
		out := make([]host.SMBMapping, len(st.Mappings))
		for i, m := range st.Mappings {
			out[i] = m.toHost()
		}
		return out, nil
	})
}

func (h smbHost) Map(ctx context.Context, remotePath string, cred host.Credential, requirePrivacy bool) error {
	_, err := call(ctx, h.s, OpSMBMap, true, func(st *State) (struct{}, error) {
		server, share, rest, err := parseUNC(remotePath)
		if err != nil {
			return struct{}{}, err
		}
		norm := strings.Join(append([]string{uncRoot(server, share)}, rest...), `\`)
		fail := func(err error) (struct{}, error) {
			return struct{}{}, fmt.Errorf("global mapping of %s: %w", norm, err)
		}
		if st.mappingIndex(norm) >= 0 {
			return fail(fmt.Errorf("one exists: %w", host.ErrAlreadyExists))
		}
		if known, reachable := st.serverState(server); !known || !reachable {
			return fail(fmt.Errorf("server %s: the network path was not found: %w", server, host.ErrUnreachable))
		}
		// Error 1219: one user name per server (ERROR_SESSION_CREDENTIAL_CONFLICT,
		// csi-driver-smb#219).
		for _, m := range st.Mappings {
			ms, _, _, err := parseUNC(m.RemotePath)
			if err == nil && strings.EqualFold(ms, server) && !strings.EqualFold(m.User, cred.User) {
				return fail(fmt.Errorf("server %s is connected as another user: %w", server, host.ErrCredentialConflict))
			}
		}
		sh := st.share(server, share)
		if sh == nil {
			return fail(fmt.Errorf("no share %s on the server: %w", share, host.ErrNotFound))
		}
		u := sh.user(cred.User)
		if u == nil || u.PasswordSHA256 != st.hash(cred.Password.Reveal()) {
			return fail(fmt.Errorf("unknown user name or bad password: %w", host.ErrLogonFailure))
		}
		// RequirePrivacy against a server without SMB3 encryption: "Network
		// access is denied" (csi-driver-smb #655, csi-proxy #311).
		if requirePrivacy && sh.NoEncryption {
			return fail(fmt.Errorf("network access is denied (the server does not encrypt): %w", host.ErrAccessDenied))
		}
		// Uncertain: the sim requires a sub-directory mapping's path to
		// exist on the share.
		if len(rest) > 0 {
			if _, err := os.Stat(h.s.sharePath(sh, rest)); err != nil {
				return struct{}{}, pathError("share path", norm, err)
			}
		}
		st.Mappings = append(st.Mappings, MappingState{
			RemotePath: norm, User: cred.User, RequirePrivacy: requirePrivacy,
			Status: host.MappingOK, UserGeneration: u.Generation,
		})
		return struct{}{}, nil
	})
	return err
}

func (h smbHost) Unmap(ctx context.Context, remotePath string) error {
	_, err := call(ctx, h.s, OpSMBUnmap, true, func(st *State) (struct{}, error) {
		i := st.mappingIndex(remotePath)
		if i < 0 {
			return struct{}{}, fmt.Errorf("mapping %s: %w", remotePath, host.ErrNotFound)
		}
		st.Mappings = append(st.Mappings[:i], st.Mappings[i+1:]...)
		return struct{}{}, nil
	})
	return err
}

func (h smbHost) Check(ctx context.Context, uncPath string) error {
	_, err := call(ctx, h.s, OpSMBCheck, false, func(st *State) (struct{}, error) {
		server, share, rest, err := parseUNC(uncPath)
		if err != nil {
			return struct{}{}, err
		}
		// A server that does not answer (or is unknown) is
		// ERROR_BAD_NETPATH, a share it lacks ERROR_BAD_NET_NAME, with or
		// without a mapping.
		if known, reachable := st.serverState(server); !known || !reachable {
			return struct{}{}, fmt.Errorf("path %s: server %s: the network path was not found: %w", uncPath, server, host.ErrUnreachable)
		}
		sh := st.share(server, share)
		if sh == nil {
			return struct{}{}, fmt.Errorf("path %s: the network name cannot be found: %w", uncPath, host.ErrNotFound)
		}
		if err := st.shareAccess(sh, rest); err != nil {
			return struct{}{}, fmt.Errorf("path %s: %w", uncPath, err)
		}
		if _, err := os.Stat(h.s.sharePath(sh, rest)); err != nil {
			return struct{}{}, pathError("path", uncPath, err)
		}
		return struct{}{}, nil
	})
	return err
}

// ShareSpec describes an SMB share for AddShare.
type ShareSpec struct {
	Server string
	Share  string
	// Users maps user names (compared case-insensitively) to passwords;
	// only salted hashes of the passwords are kept.
	Users    map[string]string
	Capacity uint64 // 0: 100 GiB
	// NoEncryption marks a server without SMB3 encryption: a mapping with
	// RequirePrivacy fails with ErrAccessDenied.
	NoEncryption bool
}

// AddShare adds a share to the simulated network; its contents live in
// <Dir>/smb/<server>/<share>/ (lower case).
func (s *Sim) AddShare(spec ShareSpec) error {
	if spec.Server == "" || spec.Share == "" || strings.ContainsAny(spec.Server+spec.Share, `\/`) {
		return fmt.Errorf("share %s: %w", uncRoot(spec.Server, spec.Share), host.ErrInvalid)
	}
	return s.control(func(st *State) error {
		if st.share(spec.Server, spec.Share) != nil {
			return fmt.Errorf("share %s: %w", uncRoot(spec.Server, spec.Share), host.ErrAlreadyExists)
		}
		return s.addShare(st, spec)
	})
}

// addShare adds a share st does not have yet, and its contents directory.
func (s *Sim) addShare(st *State, spec ShareSpec) error {
	sh := ShareState{Server: spec.Server, Share: spec.Share, Capacity: spec.Capacity,
		NoEncryption: spec.NoEncryption, Reachable: true}
	if sh.Capacity == 0 {
		sh.Capacity = DefaultShareCapacity
	}
	if known, reachable := st.serverState(spec.Server); known {
		sh.Reachable = reachable
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Users)) {
		sh.Users = append(sh.Users, ShareUser{Name: name, PasswordSHA256: st.hash(spec.Users[name])})
	}
	if err := os.MkdirAll(s.shareDir(spec.Server, spec.Share), 0o750); err != nil {
		return fmt.Errorf("share %s contents: %w", uncRoot(spec.Server, spec.Share), err)
	}
	st.Shares = append(st.Shares, sh)
	return nil
}

// SetServerReachable makes a server answer or not. Its mappings turn
// Disconnected while it is down and OK again when it is back.
func (s *Sim) SetServerReachable(server string, ok bool) error {
	return s.control(func(st *State) error {
		for i := range st.Shares {
			if strings.EqualFold(st.Shares[i].Server, server) {
				st.Shares[i].Reachable = ok
			}
		}
		for i := range st.Mappings {
			m := &st.Mappings[i]
			ms, _, _, err := parseUNC(m.RemotePath)
			if err != nil || !strings.EqualFold(ms, server) {
				continue
			}
			switch {
			case !ok && m.Status == host.MappingOK:
				m.Status = host.MappingDisconnected
			case ok && m.Status == host.MappingDisconnected:
				m.Status = host.MappingOK
			}
		}
		return nil
	})
}

// SetSharePassword changes a user's password on the server; existing
// mappings made with the old one keep status OK but lose access.
func (s *Sim) SetSharePassword(server, share, user, newPassword string) error {
	return s.control(func(st *State) error {
		sh := st.share(server, share)
		if sh == nil {
			return fmt.Errorf("share %s: %w", uncRoot(server, share), host.ErrNotFound)
		}
		u := sh.user(user)
		if u == nil {
			return fmt.Errorf("user %s on share %s: %w", user, uncRoot(server, share), host.ErrNotFound)
		}
		u.PasswordSHA256 = st.hash(newPassword)
		u.Generation++
		return nil
	})
}

// SetMappingStatus forces a mapping's status.
func (s *Sim) SetMappingStatus(remotePath string, status host.MappingStatus) error {
	return s.control(func(st *State) error {
		i := st.mappingIndex(remotePath)
		if i < 0 {
			return fmt.Errorf("mapping %s: %w", remotePath, host.ErrNotFound)
		}
		st.Mappings[i].Status = status
		return nil
	})
}

// toHost returns the mapping as the host reports it (the user name and
// password stay in the sim).
func (m *MappingState) toHost() host.SMBMapping {
	return host.SMBMapping{RemotePath: m.RemotePath, Status: m.Status, RequirePrivacy: m.RequirePrivacy}
}
