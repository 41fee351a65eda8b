//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// cancelOnCall returns a context cancelled once the simulated host has
// seen a call of op, whatever the speed of the machine.
func cancelOnCall(t *testing.T, s *sim.Sim, op string) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for s.Count(op) == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	return ctx
}

// TestCancelledStageDropsItsIntent: a stage cancelled by its caller (or by
// the shutdown, which cancels the same way) undoes its work and drops its
// intent record on a context of its own, so diagnose does not show it as
// incomplete; a stage whose host call still runs keeps the record for the
// retry or the unstage, which the volume's lock holds back until the call
// ends.
func TestCancelledStageDropsItsIntent(t *testing.T) {
	e := newEnv(t)
	// A format that would take an hour: the cancel ends it (the simulated
	// delay honours the call's context).
	mustOK(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Delay: time.Hour}))
	st := e.stagingDir("vol-c")
	ctx := cancelOnCall(t, e.sim, sim.OpVolumesFormat)
	_, err := e.srv.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-c", StagingTargetPath: st, VolumeCapability: snw})
	wantCode(t, "cancelled stage", err, codes.Canceled)
	if en, ok := e.journal().Get(context.Background(), "vol-c"); ok {
		t.Fatalf("the cancelled stage left its intent record %+v", en)
	}
	mustOK(t, "stage again", e.stage("vol-c", st, nil))

	// A hung call outlives the cancel: the record stays.
	mustOK(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpVolumesFormat, Nth: 1, Hang: true}))
	st2 := e.stagingDir("vol-h")
	hctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for e.sim.Faults().Hung(sim.OpVolumesFormat) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = e.srv.NodeStageVolume(hctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-h", StagingTargetPath: st2, VolumeCapability: snw})
	wantCode(t, "stage with a hung format", err, codes.Canceled)
	if _, ok := e.journal().Get(context.Background(), "vol-h"); !ok {
		t.Fatal("the record of a stage whose host call still runs was dropped")
	}
	e.sim.Faults().Release(sim.OpVolumesFormat)
}
