//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// A target reached through a portal given by host name, and one that
// redirects the logins of its portal to another address: the sessions'
// connections report the address the target answered on, not the portal
// (MSFT_iSCSIConnection.TargetAddress is "the IP address of the target").
func TestSessionAddresses(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	named := host.Portal{Address: "Array.Example.com", Port: 3260}
	group := host.Portal{Address: "10.0.0.9", Port: 3260}
	if err := s.SetNames("array.example.com", "10.0.0.7", "10.0.0.8"); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []TargetSpec{
		{IQN: "iqn.2000-01.test:named", Portals: []host.Portal{named}, LUNs: []LUNSpec{{LUN: 0}}},
		{IQN: "iqn.2000-01.test:moved", Portals: []host.Portal{group}, LUNs: []LUNSpec{{LUN: 0}},
			Redirects: map[host.Portal]host.Portal{group: {Address: "10.0.0.21", Port: 3260}}},
	} {
		if err := s.AddTarget(spec); err != nil {
			t.Fatal(err)
		}
	}
	h := s.Host()
	addrs, err := h.ISCSI.ResolvePortal(ctx, named)
	if err != nil || len(addrs) != 2 || addrs[0] != netip.MustParseAddr("10.0.0.7") {
		t.Fatalf("ResolvePortal(%s) = %v, %v", named, addrs, err)
	}
	if _, err := h.ISCSI.ResolvePortal(ctx, host.Portal{Address: "nowhere.example.com"}); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("ResolvePortal of an unknown name = %v, want ErrNotFound", err)
	}
	for _, c := range []struct {
		iqn    string
		portal host.Portal
		want   string
	}{
		{"iqn.2000-01.test:named", named, "10.0.0.7"},
		{"iqn.2000-01.test:moved", group, "10.0.0.21"},
	} {
		if err := h.ISCSI.AddPortal(ctx, c.portal, "", nil); err != nil {
			t.Fatal(err)
		}
		// Two multipath logins through one portal make two sessions
		// (VDS_ILF_MULTIPATH_ENABLED: "create a new login session even
		// if there is already a login session to the target").
		for range 2 {
			sess, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: c.iqn, Portal: c.portal, Multipath: true})
			if err != nil || sess.SessionID == "" {
				t.Fatalf("Connect %s: %+v, %v", c.iqn, sess, err)
			}
		}
		got, err := h.ISCSI.Sessions(ctx, c.iqn)
		if err != nil || len(got) != 2 || got[0].SessionID == got[1].SessionID {
			t.Fatalf("Sessions of %s = %+v, %v; want two sessions", c.iqn, got, err)
		}
		for _, g := range got {
			if g.TargetPortal.Address != c.want {
				t.Errorf("session %s of %s answers on %v, want %s", g.SessionID, c.iqn, g.TargetPortal, c.want)
			}
		}
		// Without multipath a second login is refused.
		if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: c.iqn, Portal: c.portal}); !errors.Is(err, host.ErrAlreadyExists) {
			t.Fatalf("a login without multipath next to a session = %v, want ErrAlreadyExists", err)
		}
	}
	// A name that stops resolving fails the login as ISDSC_DNS_NAME_UNRESOLVED.
	if err := s.SetNames("array.example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: "iqn.2000-01.test:named", Portal: named, Multipath: true}); !errors.Is(err, host.ErrUnreachable) {
		t.Fatalf("a login through a name that does not resolve = %v, want ErrUnreachable", err)
	}
}

// TestLoginWithoutID: the login is made, the call fails retryably with
// host.ErrSessionUnknown, and the session is listed.
func TestLoginWithoutID(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	if err := s.AddTarget(TargetSpec{IQN: iqnOpen, Portals: []host.Portal{portalA}, LUNs: []LUNSpec{{LUN: 0}}, LoginWithoutID: true}); err != nil {
		t.Fatal(err)
	}
	h := s.Host()
	if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
		t.Fatal(err)
	}
	_, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA})
	if !errors.Is(err, host.ErrSessionUnknown) || !errors.Is(err, host.ErrNotReady) {
		t.Fatalf("Connect = %v, want ErrSessionUnknown (a NotReady)", err)
	}
	if got, err := h.ISCSI.Sessions(ctx, iqnOpen); err != nil || len(got) != 1 {
		t.Fatalf("Sessions = %+v, %v; want the session the login made", got, err)
	}
}

// TestSecondSessionAtLogin: every login also makes another session
// through the same portal, not persistent; the login's own is the one
// Connect returns, and the only one with a persistent login.
func TestSecondSessionAtLogin(t *testing.T) {
	ctx := context.Background()
	s := newSim(t)
	if err := s.AddTarget(TargetSpec{IQN: iqnOpen, Portals: []host.Portal{portalA}, LUNs: []LUNSpec{{LUN: 0}}, SecondSessionAtLogin: true}); err != nil {
		t.Fatal(err)
	}
	h := s.Host()
	if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
		t.Fatal(err)
	}
	made, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA, Persistent: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.ISCSI.Sessions(ctx, iqnOpen)
	if err != nil || len(got) != 2 {
		t.Fatalf("Sessions = %+v, %v; want the login's and another", got, err)
	}
	for _, g := range got {
		if g.TargetPortal != portalA || g.IsPersistent != (g.SessionID == made.SessionID) {
			t.Fatalf("session %+v; want both through %s, only the login's (%s) persistent", g, portalA, made.SessionID)
		}
	}
	if n := len(s.Snapshot().PersistentLogins); n != 1 {
		t.Fatalf("%d persistent logins, want 1", n)
	}
}

// TestSecondPersistentLogin: a persistent login through a portal whose
// persistent login of the target is there already (its session logged out
// meanwhile, which keeps the login) replaces it or is stored beside it
// (WindowsAnswers.SecondPersistentLogin). Both are replayed at boot: a
// second session through the portal for multipath logins, and only one
// session otherwise (the second login is refused next to the first).
func TestSecondPersistentLogin(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		answer    string
		multipath bool
		logins    int
		restored  int
	}{
		{SecondPersistentLoginReplace, true, 1, 1},
		{"", false, 1, 1},
		{SecondPersistentLoginAdd, true, 2, 2},
		{SecondPersistentLoginAdd, false, 2, 1},
	} {
		t.Run(fmt.Sprintf("%s, multipath %t", c.answer, c.multipath), func(t *testing.T) {
			s := newSim(t, func(cfg *Config) { cfg.Windows.SecondPersistentLogin = c.answer })
			if err := s.AddTarget(TargetSpec{IQN: iqnOpen, Portals: []host.Portal{portalA}, LUNs: []LUNSpec{{LUN: 0}}}); err != nil {
				t.Fatal(err)
			}
			h := s.Host()
			if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
				t.Fatal(err)
			}
			req := host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA, Multipath: c.multipath, Persistent: true}
			first, err := h.ISCSI.Connect(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.ISCSI.Disconnect(ctx, first); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ISCSI.Connect(ctx, req); err != nil {
				t.Fatal(err)
			}
			if logins, err := h.ISCSI.PersistentLogins(ctx); err != nil || len(logins) != c.logins {
				t.Fatalf("PersistentLogins = %+v, %v; want %d", logins, err, c.logins)
			}
			if err := s.Reboot(); err != nil {
				t.Fatal(err)
			}
			if got, err := h.ISCSI.Sessions(ctx, iqnOpen); err != nil || len(got) != c.restored {
				t.Fatalf("Sessions after a reboot = %+v, %v; want %d", got, err, c.restored)
			}
		})
	}
}

// TestPersistentLoginsWithoutSession: a persistent login whose target did
// not answer at the reboot has no session, and is listed all the same;
// removing it keeps it from coming back.
func TestPersistentLoginsWithoutSession(t *testing.T) {
	ctx := context.Background()
	s := iscsiSim(t)
	h := s.Host()
	if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPortalReachable(portalA, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if got, err := h.ISCSI.Sessions(ctx, iqnOpen); err != nil || len(got) != 0 {
		t.Fatalf("Sessions after a reboot with the portal down = %+v, %v; want none", got, err)
	}
	logins, err := h.ISCSI.PersistentLogins(ctx)
	want := host.PersistentLogin{TargetNodeAddress: iqnOpen, Portal: portalA, InitiatorInstance: `ROOT\ISCSIPRT\0000_0`, InitiatorPort: host.AnyInitiatorPort}
	if err != nil || len(logins) != 1 || logins[0] != want {
		t.Fatalf("PersistentLogins = %+v, %v; want %+v", logins, err, want)
	}
	if err := h.ISCSI.RemovePersistentLogin(ctx, logins[0]); err != nil {
		t.Fatalf("RemovePersistentLogin: %v", err)
	}
	if err := h.ISCSI.RemovePersistentLogin(ctx, logins[0]); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("RemovePersistentLogin again = %v, want ErrNotFound", err)
	}
	if err := s.SetPortalReachable(portalA, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if got, err := h.ISCSI.Sessions(ctx, iqnOpen); err != nil || len(got) != 0 {
		t.Fatalf("Sessions after a reboot without the login = %+v, %v; want none", got, err)
	}
}

// TestBulkReads: Volumes.List places every volume of an online disk on its
// disk, and DisksBySession gives every session's disks, in one call each.
func TestBulkReads(t *testing.T) {
	ctx := context.Background()
	s := iscsiSim(t)
	h := s.Host()
	if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
		t.Fatal(err)
	}
	sess, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA})
	if err != nil {
		t.Fatal(err)
	}
	by, err := h.ISCSI.DisksBySession(ctx)
	one, err2 := h.ISCSI.SessionDisks(ctx, sess)
	if err != nil || err2 != nil || len(by) != 1 || len(by[sess.SessionID]) != 2 || len(one) != 2 {
		t.Fatalf("DisksBySession = %v, %v; SessionDisks = %v, %v", by, err, one, err2)
	}
	n1, g1 := formattedDisk(t, s, "bulk-1")
	n2, g2 := formattedDisk(t, s, "bulk-2")
	vols, err := h.Volumes.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string]uint32{}
	for _, v := range vols {
		placed[v.GUIDPath] = v.DiskNumber
	}
	if placed[g1] != n1 || placed[g2] != n2 {
		t.Fatalf("List placed %v; want %s on disk %d and %s on disk %d", placed, g1, n1, g2, n2)
	}
	if err := h.Disks.SetOnline(ctx, host.Disk{Number: n2}, false); err != nil {
		t.Fatal(err)
	}
	if vols, err = h.Volumes.List(ctx); err != nil {
		t.Fatal(err)
	}
	for _, v := range vols {
		if v.GUIDPath == g2 {
			t.Errorf("List shows volume %s of offline disk %d; an offline disk hides its volumes", g2, n2)
		}
		n, err := h.Volumes.DiskNumber(ctx, v.GUIDPath)
		if err != nil || !v.OnDisk || v.DiskNumber != n {
			t.Errorf("volume %s listed on disk %d (%t), DiskNumber says %d, %v", v.GUIDPath, v.DiskNumber, v.OnDisk, n, err)
		}
	}
}
