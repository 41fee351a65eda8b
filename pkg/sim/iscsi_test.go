//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

var (
	portalA = host.Portal{Address: "10.0.0.1", Port: 3260}
	portalB = host.Portal{Address: "10.0.0.2", Port: 3260}
	portalC = host.Portal{Address: "10.0.0.3", Port: 3260}
)

const (
	iqnOpen   = "iqn.2000-01.test:open"
	iqnCHAP   = "iqn.2000-01.test:chap"
	iqnLate   = "iqn.2000-01.test:late"
	iqnDisc   = "iqn.2000-01.test:disc"
	chapUser  = "initiator"
	chapPass  = "chap-secret-01"
	mutualPas = "mutual-secret-1"
)

func chap(user, secret string) host.CHAP {
	return host.CHAP{User: user, Secret: host.NewSecret(secret)}
}

// iscsiSim serves iqnOpen (LUNs 0, 1) and iqnCHAP (LUN 0, CHAP + mutual) on
// portals A and B, iqnLate (LUN 0 at once, LUN 1 after 2 rescans) on A, and
// iqnDisc (discovery CHAP) on C.
func iscsiSim(t *testing.T) *Sim {
	t.Helper()
	s := newSim(t)
	c := chap(chapUser, chapPass)
	dc := chap("disc", "disc-secret-01")
	for _, spec := range []TargetSpec{
		{IQN: iqnOpen, Portals: []host.Portal{portalA, portalB}, LUNs: []LUNSpec{{LUN: 0, Serial: "open-0"}, {LUN: 1, Size: 2 << 30}}},
		{IQN: iqnCHAP, Portals: []host.Portal{portalA, portalB}, LUNs: []LUNSpec{{LUN: 0}}, CHAP: &c, MutualSecret: mutualPas},
		{IQN: iqnLate, Portals: []host.Portal{portalA}, LUNs: []LUNSpec{{LUN: 0}, {LUN: 1, AppearAfterRescans: 2}}},
		{IQN: iqnDisc, Portals: []host.Portal{portalC}, LUNs: []LUNSpec{{LUN: 0}}, DiscoveryCHAP: &dc},
	} {
		if err := s.AddTarget(spec); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestAddPortal(t *testing.T) {
	ctx := context.Background()
	right := chap("disc", "disc-secret-01")
	wrong := chap("disc", "disc-secret-02")
	tests := []struct {
		name   string
		portal host.Portal
		chap   *host.CHAP
		down   bool
		want   error
	}{
		{"ok", portalA, nil, false, nil},
		{"default port", host.Portal{Address: "10.0.0.1"}, nil, false, nil},
		{"nothing served", host.Portal{Address: "10.9.9.9", Port: 3260}, nil, false, host.ErrUnreachable},
		{"portal down", portalA, nil, true, host.ErrUnreachable},
		{"discovery CHAP missing", portalC, nil, false, host.ErrLogonFailure},
		{"discovery CHAP wrong", portalC, &wrong, false, host.ErrLogonFailure},
		{"discovery CHAP right", portalC, &right, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := iscsiSim(t)
			if tc.down {
				if err := s.SetPortalReachable(tc.portal, false); err != nil {
					t.Fatal(err)
				}
			}
			h := s.Host().ISCSI
			wantErr(t, "AddPortal", h.AddPortal(ctx, tc.portal, "", tc.chap), tc.want)
			if tc.want != nil {
				if ps, _ := h.Portals(ctx); len(ps) != 0 {
					t.Errorf("failed AddPortal registered %v", ps)
				}
				return
			}
			wantErr(t, "AddPortal again", h.AddPortal(ctx, tc.portal, "", tc.chap), host.ErrAlreadyExists)
			ps, err := h.Portals(ctx)
			if err != nil || len(ps) != 1 || ps[0].Port != 3260 {
				t.Errorf("Portals = %v, %v", ps, err)
			}
		})
	}
}

func TestDiscoverySnapshotAndRefresh(t *testing.T) {
	ctx := context.Background()
	s := iscsiSim(t)
	h := s.Host().ISCSI
	if err := h.AddPortal(ctx, portalB, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTarget(TargetSpec{IQN: "iqn.2000-01.test:new", Portals: []host.Portal{portalB}}); err != nil {
		t.Fatal(err)
	}
	targets, err := h.Targets(ctx, portalB)
	if err != nil || len(targets) != 2 {
		t.Fatalf("Targets before refresh = %v, %v; want the 2 targets discovered at AddPortal", targets, err)
	}
	if err := h.RefreshPortal(ctx, portalB); err != nil {
		t.Fatal(err)
	}
	if targets, _ = h.Targets(ctx, portalB); len(targets) != 3 {
		t.Errorf("Targets after refresh = %v", targets)
	}
	wantErr(t, "RefreshPortal unknown", h.RefreshPortal(ctx, portalC), host.ErrNotFound)
	_, err = h.Targets(ctx, portalC)
	wantErr(t, "Targets unknown portal", err, host.ErrNotFound)
	wantErr(t, "RemovePortal", h.RemovePortal(ctx, portalB), nil)
	wantErr(t, "RemovePortal again", h.RemovePortal(ctx, portalB), host.ErrNotFound)
}

func TestConnect(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		initiator string // initiator secret set first
		before    []host.ConnectRequest
		req       host.ConnectRequest
		down      bool
		want      error
	}{
		{name: "open", req: host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA}},
		{name: "IQN case-insensitive", req: host.ConnectRequest{TargetIQN: "IQN.2000-01.TEST:OPEN", Portal: portalA}},
		{name: "not discovered there", req: host.ConnectRequest{TargetIQN: iqnLate, Portal: portalB}, want: host.ErrNotFound},
		{name: "portal not registered", req: host.ConnectRequest{TargetIQN: iqnDisc, Portal: portalC}, want: host.ErrNotFound},
		{name: "unknown target", req: host.ConnectRequest{TargetIQN: "iqn.x:y", Portal: portalA}, want: host.ErrNotFound},
		{name: "portal down", req: host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA}, down: true, want: host.ErrUnreachable},
		{name: "CHAP required", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA}, want: host.ErrLogonFailure},
		{name: "CHAP wrong secret", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthOneWay, CHAP: chap(chapUser, "chap-secret-99")}, want: host.ErrLogonFailure},
		{name: "CHAP wrong user", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthOneWay, CHAP: chap("other", chapPass)}, want: host.ErrLogonFailure},
		{name: "CHAP secret too short", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthOneWay, CHAP: chap(chapUser, "short")}, want: host.ErrInvalid},
		{name: "CHAP one-way", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthOneWay, CHAP: chap(chapUser, chapPass)}},
		{name: "mutual without initiator secret", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthMutual, CHAP: chap(chapUser, chapPass)}, want: host.ErrLogonFailure},
		{name: "mutual, wrong initiator secret", initiator: "mutual-secret-2", req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthMutual, CHAP: chap(chapUser, chapPass)}, want: host.ErrLogonFailure},
		{name: "mutual", initiator: mutualPas, req: host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalA, Auth: host.AuthMutual, CHAP: chap(chapUser, chapPass)}},
		{name: "already logged in", before: []host.ConnectRequest{{TargetIQN: iqnOpen, Portal: portalA}},
			req: host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA}, want: host.ErrAlreadyExists},
		{name: "second portal without multipath", before: []host.ConnectRequest{{TargetIQN: iqnOpen, Portal: portalA}},
			req: host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalB, Multipath: true}, want: host.ErrAlreadyExists},
		{name: "second portal with multipath", before: []host.ConnectRequest{{TargetIQN: iqnOpen, Portal: portalA, Multipath: true}},
			req: host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalB, Multipath: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := iscsiSim(t)
			h := s.Host().ISCSI
			for _, p := range []host.Portal{portalA, portalB} {
				if err := h.AddPortal(ctx, p, "", nil); err != nil {
					t.Fatal(err)
				}
			}
			if tc.initiator != "" {
				if err := h.SetInitiatorSecret(ctx, host.NewSecret(tc.initiator)); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range tc.before {
				if _, err := h.Connect(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if tc.down {
				if err := s.SetPortalReachable(tc.req.Portal, false); err != nil {
					t.Fatal(err)
				}
			}
			sess, err := h.Connect(ctx, tc.req)
			wantErr(t, "Connect", err, tc.want)
			if tc.want != nil {
				return
			}
			if sess.SessionID == "" || !sess.IsConnected || sess.TargetPortal != tc.req.Portal {
				t.Errorf("session %+v", sess)
			}
			all, _ := h.Sessions(ctx, tc.req.TargetIQN)
			if len(all) != len(tc.before)+1 {
				t.Errorf("Sessions = %+v", all)
			}
			disks, err := h.SessionDisks(ctx, sess)
			if err != nil || len(disks) == 0 {
				t.Errorf("SessionDisks = %v, %v", disks, err)
			}
		})
	}
	t.Run("initiator secret length", func(t *testing.T) {
		s := iscsiSim(t)
		h := s.Host().ISCSI
		wantErr(t, "11 bytes", h.SetInitiatorSecret(ctx, host.NewSecret("12345678901")), host.ErrInvalid)
		wantErr(t, "17 bytes", h.SetInitiatorSecret(ctx, host.NewSecret("12345678901234567")), host.ErrInvalid)
		wantErr(t, "12 bytes", h.SetInitiatorSecret(ctx, host.NewSecret("123456789012")), nil)
	})
}

func TestLUNDisks(t *testing.T) {
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
	nums, err := h.ISCSI.SessionDisks(ctx, sess)
	if err != nil || len(nums) != 2 {
		t.Fatalf("SessionDisks = %v, %v", nums, err)
	}
	d, _ := h.Disks.Get(ctx, nums[0])
	if d.BusType != host.BusTypeISCSI || !d.IsOffline || d.OfflineReason != host.OfflineReasonPolicy ||
		d.SerialNumber != "open-0" || d.Location != "Integrated : Adapter 2 : Port 0 : Target 0 : LUN 0" {
		t.Errorf("LUN 0 disk %+v", d)
	}
	d1, _ := h.Disks.Get(ctx, nums[1])
	if d1.Size != 2<<30 || d1.Location != "Integrated : Adapter 2 : Port 0 : Target 0 : LUN 1" {
		t.Errorf("LUN 1 disk %+v", d1)
	}
	targets, _ := h.ISCSI.Targets(ctx, portalA)
	for _, tg := range targets {
		if tg.IsConnected != (tg.NodeAddress == iqnOpen) {
			t.Errorf("target %+v", tg)
		}
	}
	wantErr(t, "DetachDisk of a LUN", s.DetachDisk(nums[0]), host.ErrConflict)
}

func TestLateLUN(t *testing.T) {
	ctx := context.Background()
	s := iscsiSim(t)
	h := s.Host()
	if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
		t.Fatal(err)
	}
	sess, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnLate, Portal: portalA})
	if err != nil {
		t.Fatal(err)
	}
	for rescans, want := range []int{1, 1, 2, 2} {
		nums, err := h.ISCSI.SessionDisks(ctx, sess)
		if err != nil || len(nums) != want {
			t.Fatalf("after %d rescans %d disks (%v), want %d", rescans, len(nums), err, want)
		}
		// REPORT LUNS lists what the target has, surfaced or not.
		if luns, err := h.ISCSI.ReportLUNs(ctx, strings.ToUpper(iqnLate)); err != nil || !slices.Equal(luns, []uint32{0, 1}) {
			t.Fatalf("after %d rescans ReportLUNs = %v, %v; want [0 1]", rescans, luns, err)
		}
		if err := h.Disks.Rescan(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportLUNsNeedsASession: without a session REPORT LUNS has nothing
// to go through.
func TestReportLUNsNeedsASession(t *testing.T) {
	s := iscsiSim(t)
	if _, err := s.Host().ISCSI.ReportLUNs(context.Background(), iqnOpen); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("ReportLUNs without a session: %v, want ErrNotFound", err)
	}
}

// TestLogoutLoginKeepsData formats a LUN, writes a file, logs out and in
// again and finds the file on the same volume.
func TestLogoutLoginKeepsData(t *testing.T) {
	ctx := context.Background()
	s := iscsiSim(t)
	h := s.Host()
	if err := h.ISCSI.AddPortal(ctx, portalA, "", nil); err != nil {
		t.Fatal(err)
	}
	login := func() (host.ISCSISession, host.Disk) {
		sess, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA})
		if err != nil {
			t.Fatal(err)
		}
		nums, _ := h.ISCSI.SessionDisks(ctx, sess)
		d, _ := h.Disks.Get(ctx, nums[0])
		if err := h.Disks.SetOnline(ctx, d, true); err != nil {
			t.Fatal(err)
		}
		return sess, d
	}
	sess, d := login()
	if err := h.Disks.Initialize(ctx, d, host.PartitionStyleGPT); err != nil {
		t.Fatal(err)
	}
	p, err := h.Disks.CreatePartition(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Volumes.OfPartition(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Volumes.Format(ctx, v, host.FormatOptions{FileSystem: "NTFS"}); err != nil {
		t.Fatal(err)
	}
	dir := emptyDir(t, "stage")
	if err := h.Volumes.Mount(ctx, v.GUIDPath, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("lun data"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Disconnect while mounted", h.ISCSI.Disconnect(ctx, sess), host.ErrInUse)
	if err := h.Volumes.Unmount(ctx, dir); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Disconnect", h.ISCSI.Disconnect(ctx, sess), nil)
	wantErr(t, "Disconnect again", h.ISCSI.Disconnect(ctx, sess), host.ErrNotFound)
	_, err = h.Volumes.Get(ctx, v.GUIDPath)
	wantErr(t, "volume after logout", err, host.ErrNotFound)
	if len(s.Snapshot().Disks) != 1 {
		t.Fatalf("disks after logout: %+v", s.Snapshot().Disks)
	}
	s = reopen(t, s)
	h = s.Host()
	_, _ = login()
	if err := h.Volumes.Mount(ctx, v.GUIDPath, dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || string(got) != "lun data" {
		t.Errorf("after logout/login read %q, %v", got, err)
	}
}

func TestReboot(t *testing.T) {
	ctx := context.Background()
	s := iscsiSim(t)
	h := s.Host()
	if err := s.AddShare(ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"u": "password-0001"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.SMB.Map(ctx, `\\srv\data`, cred("u", "password-0001"), true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []host.Portal{portalA, portalB} {
		if err := h.ISCSI.AddPortal(ctx, p, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnOpen, Portal: portalA, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnLate, Portal: portalA}); err != nil {
		t.Fatal(err)
	}
	chapSess, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqnCHAP, Portal: portalB, Persistent: true,
		Auth: host.AuthOneWay, CHAP: chap(chapUser, chapPass)})
	if err != nil {
		t.Fatal(err)
	}
	n, guid := formattedDisk(t, s, "local")
	mnt := emptyDir(t, "mnt")
	if err := h.Volumes.Mount(ctx, guid, mnt); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDiskState(n, DiskChange{}); err != nil {
		t.Fatal(err)
	}
	// The CHAP target's persistent login is unregistered: not restored.
	if err := h.ISCSI.Unregister(ctx, chapSess); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	sessions, _ := h.ISCSI.Sessions(ctx, "")
	if len(sessions) != 1 || sessions[0].TargetNodeAddress != iqnOpen || !sessions[0].IsPersistent {
		t.Fatalf("sessions after reboot %+v, want the persistent one only", sessions)
	}
	nums, _ := h.ISCSI.SessionDisks(ctx, sessions[0])
	if len(nums) != 2 {
		t.Errorf("persistent target has %d disks after reboot", len(nums))
	}
	if got := len(s.Snapshot().Disks); got != 4 {
		t.Errorf("%d disks after reboot, want boot + local + 2 LUNs", got)
	}
	m, err := h.SMB.Mapping(ctx, `\\srv\data`)
	if err != nil || m.Status != host.MappingUnavailable {
		t.Errorf("mapping after reboot %+v, %v", m, err)
	}
	wantErr(t, "Check after reboot", h.SMB.Check(ctx, `\\srv\data`), host.ErrUnreachable)
	info, err := h.Files.Stat(ctx, mnt)
	if err != nil || info.Kind != host.PathMountPoint {
		t.Errorf("mount point after reboot %+v, %v", info, err)
	}
	if d, _ := h.Disks.Get(ctx, n); d.IsOffline {
		t.Errorf("online disk came back offline")
	}
	// A persistent login whose portal is down stays down.
	if err := s.SetPortalReachable(portalA, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if sessions, _ = h.ISCSI.Sessions(ctx, ""); len(sessions) != 0 {
		t.Errorf("sessions after reboot with the portal down: %+v", sessions)
	}
	wantErr(t, "Unregister without session or login", h.ISCSI.Unregister(ctx, host.ISCSISession{SessionID: "x", TargetNodeAddress: iqnLate}), host.ErrNotFound)
}
