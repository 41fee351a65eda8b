//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func cred(user, pw string) host.Credential {
	return host.Credential{User: user, Password: host.NewSecret(pw)}
}

// smbSim has \\srv\data (alice, bob), \\srv\plain (no encryption) and
// \\down\x (unreachable).
func smbSim(t *testing.T) *Sim {
	t.Helper()
	s := newSim(t)
	for _, sp := range []ShareSpec{
		{Server: "srv", Share: "data", Users: map[string]string{"alice": "alice-pass-01", "bob": "bob-pass-0001"}, Capacity: 10 << 30},
		{Server: "srv", Share: "plain", Users: map[string]string{"alice": "alice-pass-01"}, NoEncryption: true},
		{Server: "down", Share: "x", Users: map[string]string{"alice": "alice-pass-01"}},
	} {
		if err := s.AddShare(sp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetServerReachable("down", false); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", "srv", "data", "pvc-1"), 0o750); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSMBMap(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		before  []string // remote paths mapped first as alice
		remote  string
		cred    host.Credential
		privacy bool
		want    error
	}{
		{"ok", nil, `\\srv\data`, cred("alice", "alice-pass-01"), true, nil},
		{"ok, slashes and case", nil, `//SRV/Data/`, cred("ALICE", "alice-pass-01"), true, nil},
		{"ok, sub-directory", nil, `\\srv\data\pvc-1`, cred("alice", "alice-pass-01"), true, nil},
		{"sub-directory missing", nil, `\\srv\data\pvc-2`, cred("alice", "alice-pass-01"), true, host.ErrNotFound},
		{"wrong password", nil, `\\srv\data`, cred("alice", "nope-nope-nope"), true, host.ErrLogonFailure},
		{"unknown user", nil, `\\srv\data`, cred("carol", "alice-pass-01"), true, host.ErrLogonFailure},
		{"unknown share", nil, `\\srv\nope`, cred("alice", "alice-pass-01"), true, host.ErrNotFound},
		{"unknown server", nil, `\\nobody\data`, cred("alice", "alice-pass-01"), true, host.ErrUnreachable},
		{"server down", nil, `\\down\x`, cred("alice", "alice-pass-01"), true, host.ErrUnreachable},
		{"privacy without encryption", nil, `\\srv\plain`, cred("alice", "alice-pass-01"), true, host.ErrAccessDenied},
		{"no privacy without encryption", nil, `\\srv\plain`, cred("alice", "alice-pass-01"), false, nil},
		{"already mapped", []string{`\\srv\data`}, `\\SRV\DATA`, cred("alice", "alice-pass-01"), true, host.ErrAlreadyExists},
		{"1219: other user on the same server", []string{`\\srv\plain`}, `\\srv\data`, cred("bob", "bob-pass-0001"), true, host.ErrCredentialConflict},
		{"same user, other share", []string{`\\srv\plain`}, `\\srv\data`, cred("Alice", "alice-pass-01"), true, nil},
		{"not UNC", nil, `C:\data`, cred("alice", "alice-pass-01"), true, host.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := smbSim(t)
			h := s.Host().SMB
			for _, r := range tc.before {
				if err := h.Map(ctx, r, cred("alice", "alice-pass-01"), false); err != nil {
					t.Fatal(err)
				}
			}
			wantErr(t, "Map", h.Map(ctx, tc.remote, tc.cred, tc.privacy), tc.want)
			if tc.want != nil {
				return
			}
			m, err := h.Mapping(ctx, tc.remote)
			if err != nil || m.Status != host.MappingOK || m.RequirePrivacy != tc.privacy {
				t.Errorf("Mapping = %+v, %v", m, err)
			}
		})
	}
}

func TestSMBCheckAndLifecycle(t *testing.T) {
	ctx := context.Background()
	s := smbSim(t)
	h := s.Host().SMB
	_, err := h.Mapping(ctx, `\\srv\data`)
	wantErr(t, "Mapping before Map", err, host.ErrNotFound)
	wantErr(t, "Check without mapping", h.Check(ctx, `\\srv\data\pvc-1`), host.ErrAccessDenied)
	if err := h.Map(ctx, `\\srv\data`, cred("alice", "alice-pass-01"), true); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() error
		path   string
		want   error
		status host.MappingStatus
	}{
		{"ok", nil, `\\srv\data\pvc-1`, nil, host.MappingOK},
		{"share root", nil, `\\srv\data`, nil, host.MappingOK},
		{"missing path", nil, `\\srv\data\pvc-9`, host.ErrNotFound, host.MappingOK},
		{"server down", func() error { return s.SetServerReachable("SRV", false) }, `\\srv\data\pvc-1`, host.ErrUnreachable, host.MappingDisconnected},
		{"server back", func() error { return s.SetServerReachable("srv", true) }, `\\srv\data\pvc-1`, nil, host.MappingOK},
		{"forced status", func() error { return s.SetMappingStatus(`\\srv\data`, host.MappingNetworkError) }, `\\srv\data\pvc-1`, host.ErrUnreachable, host.MappingNetworkError},
		{"status OK again", func() error { return s.SetMappingStatus(`\\srv\data`, host.MappingOK) }, `\\srv\data\pvc-1`, nil, host.MappingOK},
		// The mapping keeps status OK after a password change, but access
		// fails (csi-proxy PRs #66/#75).
		{"password changed", func() error { return s.SetSharePassword("srv", "data", "alice", "alice-pass-02") }, `\\srv\data\pvc-1`, host.ErrAccessDenied, host.MappingOK},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.change != nil {
				if err := st.change(); err != nil {
					t.Fatal(err)
				}
			}
			wantErr(t, "Check", h.Check(ctx, st.path), st.want)
			m, err := h.Mapping(ctx, `\\srv\data`)
			if err != nil || m.Status != st.status {
				t.Errorf("mapping %+v, %v; want status %s", m, err, st.status)
			}
		})
	}
	// Recovery: unmap and map with the new password.
	wantErr(t, "Unmap", h.Unmap(ctx, `\\SRV\data`), nil)
	wantErr(t, "Unmap again", h.Unmap(ctx, `\\srv\data`), host.ErrNotFound)
	wantErr(t, "Map with the old password", h.Map(ctx, `\\srv\data`, cred("alice", "alice-pass-01"), true), host.ErrLogonFailure)
	wantErr(t, "Map with the new password", h.Map(ctx, `\\srv\data`, cred("alice", "alice-pass-02"), true), nil)
	wantErr(t, "Check", h.Check(ctx, `\\srv\data\pvc-1`), nil)
	wantErr(t, "SetSharePassword unknown user", s.SetSharePassword("srv", "data", "zed", "x"), host.ErrNotFound)
	wantErr(t, "SetMappingStatus unknown", s.SetMappingStatus(`\\srv\nope`, host.MappingOK), host.ErrNotFound)
}

func TestSMBFreeSpace(t *testing.T) {
	ctx := context.Background()
	s := smbSim(t)
	h := s.Host()
	link := filepath.Join(t.TempDir(), "stage")
	if err := h.Files.Symlink(ctx, link, `\\srv\data\pvc-1`); err != nil {
		t.Fatal(err)
	}
	_, err := h.Volumes.FreeSpace(ctx, link)
	wantErr(t, "FreeSpace without mapping", err, host.ErrAccessDenied)
	if err := h.SMB.Map(ctx, `\\srv\data`, cred("alice", "alice-pass-01"), true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(link, "f"), make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := h.Volumes.FreeSpace(ctx, link)
	if err != nil || sp.Total != 10<<30 || sp.Free != 10<<30-1000 {
		t.Errorf("FreeSpace = %+v, %v", sp, err)
	}
	if err := s.SetServerReachable("srv", false); err != nil {
		t.Fatal(err)
	}
	_, err = h.Volumes.FreeSpace(ctx, link)
	wantErr(t, "FreeSpace, server down", err, host.ErrUnreachable)
	if err := s.SetServerReachable("srv", true); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSharePassword("srv", "data", "alice", "alice-pass-02"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Volumes.FreeSpace(ctx, link)
	wantErr(t, "FreeSpace, password changed", err, host.ErrAccessDenied)
}

func TestAddShareValidation(t *testing.T) {
	s := newSim(t)
	tests := []struct {
		name string
		spec ShareSpec
		want error
	}{
		{"ok", ShareSpec{Server: "a", Share: "b"}, nil},
		{"duplicate, other case", ShareSpec{Server: "A", Share: "B"}, host.ErrAlreadyExists},
		{"no share", ShareSpec{Server: "a"}, host.ErrInvalid},
		{"separator", ShareSpec{Server: "a", Share: `b\c`}, host.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, "AddShare", s.AddShare(tc.spec), tc.want) })
	}
}
