//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// TestFailover: without multipath, the first portal that answers is used.
func TestFailover(t *testing.T) {
	e := newEnv(t, false)
	v := vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1", "multipath", "false")
	must(t, "portal down", e.sim.SetPortalReachable(portal1, false))
	must(t, "stage", e.stage(v))
	ss := e.sessions(iqnOpen)
	if len(ss) != 1 || ss[0].Portal != "10.0.1.1:3260" || ss[0].Multipath {
		t.Fatalf("sessions %+v, want one non-multipath session through 10.0.1.1:3260", ss)
	}
	// A repeated stage keeps the one session even when the first portal
	// answers again.
	must(t, "portal up", e.sim.SetPortalReachable(portal1, true))
	must(t, "repeated stage", e.stage(v))
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions after the repeated stage, want 1", n)
	}
	must(t, "unstage", e.unstage(v))
	if p := e.portals(); len(p) != 0 {
		t.Fatalf("portals left: %v", p)
	}
}

// TestPortalsSharedByTargets: a portal stays while a target on it is in
// use, and always with KeepPortals.
func TestPortalsSharedByTargets(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "remove", true: "keep"}[keep], func(t *testing.T) {
			e := newEnv(t, keep)
			open := vol("open", "10.0.0.1", iqnOpen, 0)
			late := vol("late", "10.0.0.1", iqnLate, 0)
			must(t, "stage open", e.stage(open))
			must(t, "stage late", e.stage(late))
			must(t, "unstage open", e.unstage(open))
			if n := len(e.sessions(iqnOpen)); n != 0 {
				t.Fatalf("%d sessions of the unstaged target, want 0", n)
			}
			if p := e.portals(); !slices.Equal(p, []string{"10.0.0.1:3260"}) {
				t.Fatalf("portals %v while the other target uses the portal", p)
			}
			must(t, "unstage late", e.unstage(late))
			want := 0
			if keep {
				want = 1
			}
			if p := e.portals(); len(p) != want {
				t.Fatalf("portals %v after the last unstage, want %d", p, want)
			}
		})
	}
}

// TestMutualSecretConflict: the initiator secret is node-wide, so a second
// target needing another mutual secret is refused while the first is
// logged in, also after a restart; once the first is gone it works.
func TestMutualSecretConflict(t *testing.T) {
	e := newEnv(t, false)
	first := vol("first", "10.0.0.1", iqnMutual, 0, "sessionCHAPAuth", "true").with(
		"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret,
		"node.session.auth.password_in", mutualOK)
	second := vol("second", "10.0.0.1", iqnOther, 0, "sessionCHAPAuth", "true").with(
		"node.session.auth.username", chapUser, "node.session.auth.password", chapSecret,
		"node.session.auth.password_in", otherMutual)
	must(t, "stage first", e.stage(first))
	e.restart()
	wantCode(t, "stage second", e.stage(second), codes.FailedPrecondition)
	if n := len(e.sessions(iqnMutual)); n != 1 {
		t.Fatalf("the refused stage disturbed the first target: %d sessions", n)
	}
	must(t, "unstage first", e.unstage(first))
	must(t, "stage second", e.stage(second))
	must(t, "unstage second", e.unstage(second))
}

// TestStagingPathHoldsAnotherVolume: a stage whose staging path holds the
// volume of another LUN is AlreadyExists.
func TestStagingPathHoldsAnotherVolume(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.0.1", iqnOpen, 0)
	must(t, "stage a", e.stage(a))
	b := vol("b", "10.0.0.1", iqnOpen, 1)
	_, err := e.srv.NodeStageVolume(e.ctx(), stageRequest(b, e.staging(a.id)))
	wantCode(t, "stage b at a's staging path", err, codes.AlreadyExists)
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions, want 1 (a is staged)", n)
	}
	must(t, "unstage a", e.unstage(a))
}

// pathDisks makes SessionDisks of every session also report extra, as
// Windows does for the per-path disks of a LUN that MPIO does not claim.
type pathDisks struct {
	host.ISCSI
	extra func() []uint32
}

func (p pathDisks) SessionDisks(ctx context.Context, s host.ISCSISession) ([]uint32, error) {
	nums, err := p.ISCSI.SessionDisks(ctx, s)
	return append(nums, p.extra()...), err
}

// TestMPIONotClaiming: two disks for one LUN are FailedPrecondition, and
// the stage leaves no session behind.
func TestMPIONotClaiming(t *testing.T) {
	e := newEnv(t, false)
	var second uint32
	e.wrap = func(h host.Host) host.Host {
		h.ISCSI = pathDisks{ISCSI: h.ISCSI, extra: func() []uint32 { return []uint32{second} }}
		return h
	}
	e.restart()
	n, err := e.sim.AttachDisk(sim.DiskSpec{Serial: "second-path", Location: "Integrated : Adapter 2 : Port 1 : Target 0 : LUN 0",
		BusType: host.BusTypeISCSI})
	must(t, "attach the second path's disk", err)
	second = n
	v := vol("v", "10.0.0.1", iqnOpen, 0, "portals", "10.0.1.1")
	err = e.stage(v)
	wantCode(t, "stage", err, codes.FailedPrecondition)
	// The disks are named as the disk backend names its candidates
	// (disk.Names): number, serial, location.
	disk := `\d+ \[serial "[^"]+", location "[^"]+"\]`
	named := regexp.MustCompile(`LUN 0 of target ` + regexp.QuoteMeta(iqnOpen) + ` appears as disks ` + disk + `, ` + disk + `, one per path: `)
	msg := status.Convert(err).Message()
	if secondName := fmt.Sprintf(`%d [serial "second-path", location "Integrated : Adapter 2 : Port 1 : Target 0 : LUN 0"]`, second); !named.MatchString(msg) || !strings.Contains(msg, secondName) {
		t.Fatalf("stage: %q, want it to name each disk by number, serial and location (%s, one of them %s)", msg, named, secondName)
	}
	if n := len(e.sessions(iqnOpen)); n != 0 {
		t.Fatalf("%d sessions left, want 0", n)
	}
}

// TestUnplacedVolumeKeepsTheSession: the last unstage of a target counts
// another volume whose staging path still holds a mount point as a user
// when the host cannot place that volume on a disk (its disk offline or
// gone, as after a reboot before the volume is staged again): the session
// is never logged out under it.
func TestUnplacedVolumeKeepsTheSession(t *testing.T) {
	e := newEnv(t, false)
	a, b := vol("a", "10.0.0.1", iqnOpen, 0), vol("b", "10.0.0.1", iqnOpen, 1)
	must(t, "stage a", e.stage(a))
	must(t, "stage b", e.stage(b))
	must(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesDiskNumber, Err: "notfound"}))
	must(t, "unstage a", e.unstage(a))
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions after a's unstage, want 1: b's mount point cannot be placed, so b counts as a user", n)
	}
	e.sim.Faults().Clear()
	must(t, "unstage b", e.unstage(b))
	if n := len(e.sessions(iqnOpen)); n != 0 {
		t.Fatalf("%d sessions after the last unstage, want 0", n)
	}
}
