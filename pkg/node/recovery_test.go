//go:build linux

// Linux only: these tests run the node service on the simulated host,
// which runs only on Linux (POSIX paths; pkg/sim doc.go).

package node_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// TestUnstageRetryTakesDiskOffline: an unstage that removed the mount
// point but failed (or crashed) before taking the disk offline leaves the
// disk online; the retry finds nothing mounted and must still take the
// disk offline, using the journal's record of the volume (found by the
// crash matrix, test/binary/crash: disk/unstage, crash after volumes.Unmount).
// A disk whose volume is mounted somewhere stays online.
func TestUnstageRetryTakesDiskOffline(t *testing.T) {
	e := newEnv(t)
	staging := e.stagingDir("vol-r")
	mustOK(t, "stage", e.stage("vol-r", staging, nil))
	mustOK(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpDisksSetOnline, Nth: 1, Err: "internal"}))
	wantCode(t, "unstage", e.unstage("vol-r", staging), codes.Internal)
	e.restart()
	if offline := diskOffline(t, e, "vol-r"); offline {
		t.Fatal("the failed unstage took the disk offline; the test needs it online")
	}
	mustOK(t, "retried unstage", e.unstage("vol-r", staging))
	if offline := diskOffline(t, e, "vol-r"); !offline {
		t.Fatal("disk still online after the retried unstage")
	}
	if _, ok := e.journal().Get(context.Background(), "vol-r"); ok {
		t.Fatal("journal entry left after the retried unstage")
	}
}

func diskOffline(t *testing.T, e *env, serial string) bool {
	t.Helper()
	for _, d := range e.sim.Snapshot().Disks {
		if d.Serial == serial {
			return d.Offline
		}
	}
	t.Fatalf("no disk with serial %s", serial)
	return false
}
