package main

import (
	"context"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
)

// newHost starts the host backend the flags name and returns it with the
// function that stops it. Only this package chooses between the real and
// the simulated host; the simulated one is built into the binary only off
// Windows (host_sim.go). setup is --sim-config, read.
func newHost(ctx context.Context, opts *config.Options, setup simSetup) (plugin.Host, func(), error) {
	switch opts.Host {
	case config.HostSim:
		return simHost(ctx, opts, setup)
	case config.HostWindows:
		return windowsHost(ctx, opts)
	}
	return plugin.Host{}, nil, fmt.Errorf("unknown host %q", opts.Host)
}

// diagnoseHost opens the host diagnose reads while the plugin may be
// serving it: the Windows host as the plugin opens it (diagnose makes only
// calls that read; WMI and Win32 serve any number of processes), or the
// simulated host read-only (simDiagnoseHost).
func diagnoseHost(ctx context.Context, opts *config.Options) (host.Host, func(), error) {
	if opts.Host == config.HostSim {
		return simDiagnoseHost(ctx, opts)
	}
	h, closeHost, err := newHost(ctx, opts, simSetup{})
	if err != nil {
		return host.Host{}, nil, err
	}
	return h.Host, closeHost, nil
}
