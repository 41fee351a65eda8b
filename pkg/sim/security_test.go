//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// formatted attaches a blank disk and formats its one volume through the
// host interfaces, returning the volume.
func formatted(t *testing.T, s *Sim) host.Volume {
	t.Helper()
	ctx := context.Background()
	h := s.Host()
	n, err := s.AttachDisk(DiskSpec{Serial: "S-" + t.Name(), Adapter: 1, LUN: 7})
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Disks.Get(ctx, n)
	if err == nil {
		err = h.Disks.Initialize(ctx, d, host.PartitionStyleGPT)
	}
	if err != nil {
		t.Fatal(err)
	}
	d.PartitionStyle = host.PartitionStyleGPT
	p, err := h.Disks.CreatePartition(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Volumes.OfPartition(ctx, p)
	if err == nil {
		v, err = h.Volumes.Format(ctx, v, host.FormatOptions{FileSystem: "NTFS"})
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRootDACLDefaults(t *testing.T) {
	for _, acl := range []string{"", RootACLServer, RootACLClient} {
		t.Run("default "+acl, func(t *testing.T) {
			s, err := applied(t, filepath.Join(t.TempDir(), "sim"), &Setup{Windows: WindowsAnswers{VolumeRootACL: acl}})
			if err != nil {
				t.Fatal(err)
			}
			v := formatted(t, s)
			d, err := s.Host().Security.RootDACL(context.Background(), v.GUIDPath)
			if err != nil {
				t.Fatal(err)
			}
			want := rootACLs[RootACLServer]
			if acl == RootACLClient {
				want = rootACLs[RootACLClient]
			}
			if d.Null || len(d.Entries) != len(want.Entries) {
				t.Fatalf("root DACL %+v, want the %q default", d, acl)
			}
			cu := host.ACE{Type: 0, Flags: 3, Mask: 0x1301bf, SID: "S-1-5-93-2-2"}
			au := host.ACE{Type: 0, Flags: 3, Mask: 0x1301bf, SID: "S-1-5-11"}
			// The defaults grant neither the container user nor (as the
			// plugin asks for it) Authenticated Users; Users may read.
			if d.Grants(cu) || d.Grants(au) || !d.Grants(host.ACE{Type: 0, Flags: 0, Mask: 0x1200a9, SID: "S-1-5-32-545"}) {
				t.Fatalf("root DACL %+v grants what the dumps do not", d)
			}
		})
	}
}

func TestAddRootAllowEntries(t *testing.T) {
	s, err := applied(t, filepath.Join(t.TempDir(), "sim"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sec := s.Host().Security
	v := formatted(t, s)
	before, _ := sec.RootDACL(ctx, v.GUIDPath)
	cu := host.ACE{Type: 0, Flags: 3, Mask: 0x1301bf, SID: "s-1-5-93-2-2"}
	added, err := sec.AddRootAllowEntries(ctx, v.GUIDPath, []host.ACE{cu, cu})
	canon := cu
	canon.SID = "S-1-5-93-2-2"
	if err != nil || !slices.Equal(added, []host.ACE{canon}) {
		t.Fatalf("AddRootAllowEntries = %+v, %v", added, err)
	}
	after, _ := sec.RootDACL(ctx, v.GUIDPath)
	if !slices.Equal(after.Entries, append(slices.Clone(before.Entries), canon)) {
		t.Fatalf("after: %+v", after.Entries)
	}
	// The model survives a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := applied(t, s.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s2.Host().Security.RootDACL(ctx, v.GUIDPath); !slices.Equal(again.Entries, after.Entries) {
		t.Fatalf("after reopening: %+v", again.Entries)
	}
	// Read-only disks refuse; raw volumes have no root; a NULL DACL is
	// refused.
	n := s2.Snapshot().Disks[1].Number
	if err := s2.SetDiskState(n, DiskChange{ReadOnly: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Host().Security.AddRootAllowEntries(ctx, v.GUIDPath, []host.ACE{canon}); !errors.Is(err, host.ErrReadOnly) {
		t.Fatalf("on a read-only disk: %v", err)
	}
	if err := s2.SetDiskState(n, DiskChange{ReadOnly: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if err := s2.SetRootDACL(v.GUIDPath, DACLState{Null: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Host().Security.AddRootAllowEntries(ctx, v.GUIDPath, []host.ACE{canon}); !errors.Is(err, host.ErrConflict) {
		t.Fatalf("on a NULL DACL: %v", err)
	}
}

func TestLookupAccountName(t *testing.T) {
	s, err := applied(t, filepath.Join(t.TempDir(), "sim"), &Setup{Accounts: []AccountState{{Name: `CONTOSO\app`, SID: "S-1-5-21-1-2-3-1107"}}})
	if err != nil {
		t.Fatal(err)
	}
	sec := s.Host().Security
	for name, want := range map[string]string{
		"Administrators": "S-1-5-32-544", `builtin\users`: "S-1-5-32-545", `NT AUTHORITY\SYSTEM`: "S-1-5-18",
		"Everyone": "S-1-1-0", `contoso\APP`: "S-1-5-21-1-2-3-1107",
	} {
		if got, err := sec.LookupAccountName(context.Background(), name); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", name, got, err, want)
		}
	}
	for _, name := range []string{"ContainerUser", "ContainerAdministrator", `CONTOSO\other`} {
		if _, err := sec.LookupAccountName(context.Background(), name); !errors.Is(err, host.ErrNotFound) {
			t.Errorf("%s: %v, want NotFound", name, err)
		}
	}
	// A declared name that contradicts the host stops the setup.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := applied(t, s.Dir(), &Setup{Accounts: []AccountState{{Name: "Users", SID: "S-1-5-21-9"}}}); !errors.Is(err, ErrSetupConflict) {
		t.Errorf("Users as another SID: %v", err)
	}
}
