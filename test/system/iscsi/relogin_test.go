//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// relogin makes the target's sessions look new (another SessionIdentifier)
// once the disk backend reads the LUN's disk again before its first write:
// the session dropped and a new login took its place in between.
type relogin struct {
	host.ISCSI
	dropped *atomic.Bool
}

const reloginSuffix = "-relogin"

func (r relogin) Sessions(ctx context.Context, iqn string) ([]host.ISCSISession, error) {
	ss, err := r.ISCSI.Sessions(ctx, iqn)
	if r.dropped.Load() {
		for i := range ss {
			ss[i].SessionID += reloginSuffix
		}
	}
	return ss, err
}

func (r relogin) SessionDisks(ctx context.Context, s host.ISCSISession) ([]uint32, error) {
	s.SessionID = strings.TrimSuffix(s.SessionID, reloginSuffix)
	return r.ISCSI.SessionDisks(ctx, s)
}

type dropOnGet struct {
	host.Disks
	dropped *atomic.Bool
}

func (d dropOnGet) Get(ctx context.Context, n uint32) (host.Disk, error) {
	d.dropped.Store(true)
	return d.Disks.Get(ctx, n)
}

// Found by review: a LUN's disk number reused after its session dropped
// was written to. The stage refuses with FailedPrecondition naming both
// sessions, and writes nothing to it (a blank disk is brought online
// before it is read again, which writes no data); the retry finds the LUN
// again.
func TestStageRefusesADiskAfterTheSessionChanged(t *testing.T) {
	e := newEnv(t, false)
	var dropped atomic.Bool
	e.wrap = func(h host.Host) host.Host {
		h.ISCSI = relogin{ISCSI: h.ISCSI, dropped: &dropped}
		h.Disks = dropOnGet{Disks: h.Disks, dropped: &dropped}
		return h
	}
	e.restart()
	v := vol("v", "10.0.0.1", iqnOpen, 0)
	mark := e.sim.Mark()
	err := e.stage(v)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "the session it came from is gone") {
		t.Fatalf("stage = %v, want FailedPrecondition: the session changed", err)
	}
	for _, op := range e.sim.OpsSince(mark) {
		switch op {
		case sim.OpDisksInitialize, sim.OpDisksCreatePartition, sim.OpVolumesFormat:
			t.Fatalf("the stage wrote (%s) to a disk whose session changed: %v", op, e.sim.OpsSince(mark))
		}
	}
	dropped.Store(false)
	e.wrap = nil
	e.restart()
	must(t, "the retry", e.stage(v))
}
