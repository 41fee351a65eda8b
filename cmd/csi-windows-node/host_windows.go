package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/version"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wmiexec"
)

// executorCloseTimeout bounds the wait at shutdown for host calls still
// running; a call stuck in a hung provider is left behind rather than
// holding the process.
const executorCloseTimeout = 10 * time.Second

// windowsHost returns the Windows host: winhost over the WMI/Win32
// executor, through a recorder when rec (or --record-host-calls) asks for
// one. Start-up fails when COM cannot be initialised, since no host call
// could work. Close stops the executor's workers; Healthy reports a
// wedged executor (too many workers stuck in calls that never returned) so
// that Probe turns not ready, livenessprobe's /healthz fails and kubelet
// restarts the plugin.
func windowsHost(ctx context.Context, opts *config.Options, rec *record) (*node, error) {
	logger := klog.FromContext(ctx)
	exec, err := wmiexec.New(wmiexec.Options{Logger: logger.WithName("wmiexec")})
	if err != nil {
		return nil, fmt.Errorf("start the Windows host (COM and WMI initialisation): %w", err)
	}
	stop := func() {
		cctx, cancel := context.WithTimeout(context.Background(), executorCloseTimeout)
		defer cancel()
		if err := exec.Close(cctx); err != nil {
			logger.Error(err, "Stopping the WMI/Win32 executor")
		}
	}
	if rec == nil && opts.RecordHostCalls != "" {
		rec = &record{path: opts.RecordHostCalls, header: recording.Header{Scenario: recording.ScenarioPlugin}}
	}
	var e winhost.AdminExecutor = exec
	n := &node{close: stop, roundTrips: func() int { return int(exec.Stats().WMI.ByKind["wmi"]) }}
	if rec != nil {
		f, err := os.OpenFile(rec.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			stop()
			return nil, fmt.Errorf("recording: %w", err)
		}
		h := rec.header
		h.Source, h.Plugin = recording.SourceWindows, version.Version
		if info, err := winhost.NewAdmin(exec).System.OS(ctx); err == nil {
			h.Windows = fmt.Sprintf("%s %s.%d", info.Caption, info.Version, info.UBR)
		}
		r, err := recording.NewRecorder(exec, f, h)
		if err != nil {
			_ = f.Close() // the header's error is the one to report
			stop()
			return nil, fmt.Errorf("recording %s: %w", rec.path, err)
		}
		e, n.recorder = r, r
		n.close = func() {
			stop()
			if err := r.Err(); err != nil {
				logger.Error(err, "Recording the host calls failed", "path", rec.path)
			}
			if err := f.Close(); err != nil {
				logger.Error(err, "Closing the recording", "path", rec.path)
			}
		}
		logger.Info("Recording every WMI and Win32 call and its answer", "path", rec.path)
	}
	logger.Info("Windows host ready: WMI and Win32 executor started")
	n.admin = winhost.NewAdmin(e)
	n.plugin = plugin.Host{Host: winhost.New(e), System: n.admin.System, Healthy: exec.Healthy}
	return n, nil
}
