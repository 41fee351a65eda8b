//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"runtime"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// TestUnstageRetryTakesLUNDiskOffline: an unstage that unmounted the
// volume but failed (or crashed) before taking its disk offline leaves the
// disk online; the retry, whose staging path holds nothing, must still take
// it offline when another volume keeps the target's session (found by the
// crash matrix, test/binary/crash: iscsi/unstage-nonlast, crash after
// volumes.Unmount).
func TestUnstageRetryTakesLUNDiskOffline(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.0.1", iqnOpen, 0)
	b := vol("b", "10.0.0.1", iqnOpen, 1)
	must(t, "stage a", e.stage(a))
	must(t, "stage b", e.stage(b))
	must(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpDisksSetOnline, Nth: 1, Err: "internal"}))
	wantCode(t, "unstage b", e.unstage(b), codes.Internal)
	e.restart()
	must(t, "retried unstage b", e.unstage(b))

	online := map[uint32]bool{}
	for _, d := range e.sim.Snapshot().Disks {
		if d.Target != "" {
			online[d.LUN] = !d.Offline
		}
	}
	if !online[0] || online[1] {
		t.Fatalf("LUN disks online = %v, want LUN 0 (staged a) online and LUN 1 (unstaged b) offline", online)
	}
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions, want 1 (a still uses the target)", n)
	}
}

// TestUnstageHoldsTargetAcrossUnmountAndOffline: while one volume's
// unstage is between removing its mount point and taking its disk offline,
// the unstage of the target's other volume must not log out of the target
// (which would take the first disk away, or let another disk take its
// number, under the offline). Found by the soak (test/system/soak): "take disk N
// offline: not found". The other unstage does not wait either: it finishes
// and leaves the logout to the first, which is then the last volume out.
func TestUnstageHoldsTargetAcrossUnmountAndOffline(t *testing.T) {
	e := newEnv(t, false)
	a := vol("a", "10.0.0.1", iqnOpen, 0)
	b := vol("b", "10.0.0.1", iqnOpen, 1)
	must(t, "stage a", e.stage(a))
	must(t, "stage b", e.stage(b))
	// disks.Get is a's first call after its unmount (the offline reads the
	// disk): hold a there.
	must(t, "hang", e.sim.Faults().Add(sim.Rule{Op: sim.OpDisksGet, Nth: 1, Hang: true}))
	done := make(chan error, 1)
	go func() { done <- e.unstage(a) }()
	for e.sim.Faults().Hung(sim.OpDisksGet) == 0 {
		select {
		case err := <-done:
			t.Fatalf("unstage a ended before reaching the offline: %v", err)
		default:
			runtime.Gosched()
		}
	}
	disconnects := e.sim.Count(sim.OpISCSIDisconnect)
	must(t, "unstage b while a is between unmount and offline", e.unstage(b))
	if n := len(e.sessions(iqnOpen)); n != 1 {
		t.Fatalf("%d sessions while a's unstage runs, want 1", n)
	}
	if n := e.sim.Count(sim.OpISCSIDisconnect) - disconnects; n != 0 {
		t.Fatalf("%d logouts while a's unstage runs, want 0", n)
	}
	e.sim.Faults().Release(sim.OpDisksGet)
	must(t, "unstage a", <-done)
	if n := len(e.sessions(iqnOpen)); n != 0 {
		t.Fatalf("%d sessions after both unstages, want 0", n)
	}
	if p := e.portals(); len(p) != 0 {
		t.Fatalf("portals left after both unstages: %v", p)
	}
}
