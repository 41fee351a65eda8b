package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wmiexec"
)

// executorCloseTimeout bounds the wait at shutdown for host calls still
// running; a call stuck in a hung provider is left behind rather than
// holding the process.
const executorCloseTimeout = 10 * time.Second

// windowsHost returns the Windows host: winhost over the WMI/Win32
// executor. Start-up fails when COM cannot be initialised, since no host
// call could work. Close stops the executor's workers; Healthy reports a
// wedged executor (too many workers stuck in calls that never returned) so
// that Probe turns not ready, livenessprobe's /healthz fails and kubelet
// restarts the plugin.
func windowsHost(ctx context.Context, _ *config.Options) (plugin.Host, func(), error) {
	logger := klog.FromContext(ctx)
	exec, err := wmiexec.New(wmiexec.Options{Logger: logger.WithName("wmiexec")})
	if err != nil {
		return plugin.Host{}, nil, fmt.Errorf("start the Windows host (COM and WMI initialisation): %w", err)
	}
	logger.Info("Windows host ready: WMI and Win32 executor started")
	return plugin.Host{Host: winhost.New(exec), Healthy: exec.Healthy}, func() {
		cctx, cancel := context.WithTimeout(context.Background(), executorCloseTimeout)
		defer cancel()
		if err := exec.Close(cctx); err != nil {
			logger.Error(err, "Stopping the WMI/Win32 executor")
		}
	}, nil
}
