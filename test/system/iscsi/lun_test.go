//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMissingLUN: a LUN the target does not have fails after one rescan,
// naming the LUNs the target reports, instead of waiting out the deadline;
// when the target cannot be asked, the wait is the bounded one it was and
// the message names the LUNs whose disks appeared.
func TestMissingLUN(t *testing.T) {
	t.Run("the target reports its LUNs", func(t *testing.T) {
		e := newEnv(t, false)
		err := e.stage(vol("v", "10.0.0.1", iqnOpen, 7))
		wantCode(t, "stage of LUN 7", err, codes.NotFound)
		msg := status.Convert(err).Message()
		for _, want := range []string{"LUN 7 of target " + iqnOpen + " does not exist", "the target reports LUNs 0, 1 to this node"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not say %q", msg, want)
			}
		}
		if n := e.sim.Count(sim.OpDisksRescan); n != 1 {
			t.Errorf("%d rescans, want the one before asking the target", n)
		}
		if n := e.sim.Count(sim.OpISCSIReportLUNs); n != 1 {
			t.Errorf("%d REPORT LUNS, want 1", n)
		}
		if ss := e.sim.Snapshot().Sessions; len(ss) != 0 {
			t.Errorf("sessions left: %+v", ss)
		}
	})
	t.Run("the target cannot be asked", func(t *testing.T) {
		e := newEnv(t, false)
		must(t, "fault", e.sim.Faults().Add(sim.Rule{Op: sim.OpISCSIReportLUNs, Err: "internal"}))
		err := e.stage(vol("v", "10.0.0.1", iqnOpen, 7))
		wantCode(t, "stage of LUN 7", err, codes.NotFound)
		msg := status.Convert(err).Message()
		if !strings.Contains(msg, "no disk appeared after login (the target's sessions reach LUNs 0, 1;") {
			t.Errorf("message %q does not name the LUNs that appeared", msg)
		}
		if n := e.sim.Count(sim.OpDisksRescan); n != fast.Attempts-1 {
			t.Errorf("%d rescans, want the whole bounded wait (%d)", n, fast.Attempts-1)
		}
	})
}

// TestLateLUNIsAwaited: a LUN the target reports whose disk appears only
// after a few rescans is waited for, and the wait is logged at -v=2 with
// what is awaited and what the target reports.
func TestLateLUNIsAwaited(t *testing.T) {
	e := newEnv(t, false)
	var log testbin.SyncBuffer
	ctx := klog.NewContext(e.ctx(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&log))))
	must(t, "stage of the late LUN", e.stageCtx(ctx, vol("v", "10.0.0.1", iqnLate, 3)))
	var line string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, `"Waiting for the LUN's disk to appear"`) {
			line = l
			break
		}
	}
	for _, want := range []string{`iqn="` + iqnLate + `"`, "lun=3", "waited=", "surfacedLUNs=[0]", "reportedLUNs=[0,3]"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %s\n%s", line, want, log.String())
		}
	}
}
