package main

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
)

// newHost starts the host backend the flags name and returns it with the
// function that stops it. Only this package chooses between the real and
// the simulated host.
func newHost(ctx context.Context, opts *config.Options) (plugin.Host, func(), error) {
	logger := klog.FromContext(ctx)
	switch opts.Host {
	case config.HostSim:
		logger.Info("SIMULATED WINDOWS HOST: no real disk, share or iSCSI target is touched; "+
			"this mode is for development and tests only", "simDir", opts.SimDir, "autoAttach", opts.SimAutoAttach)
		var setup *sim.Setup
		if opts.SimConfig != "" {
			var err error
			if setup, err = sim.LoadSetup(opts.SimConfig); err != nil {
				return hostHandle{}, fmt.Errorf("--sim-config %s: %w", opts.SimConfig, err)
			}
		}
		s, err := sim.New(sim.Config{
			Setup:          setup,
			Dir:            opts.SimDir,
			AutoAttach:     opts.SimAutoAttach,
			AutoAttachSize: uint64(opts.SimDiskSize),
			Latency:        opts.SimLatency,
			Logger:         logger.WithName("sim"),
		})
		if err != nil {
			return plugin.Host{}, nil, fmt.Errorf("start the simulated host: %w", err)
		}
		// The volume of each RPC's host calls is what auto-attach reads.
		return plugin.Host{Host: s.Host(), ForVolume: sim.WithVolume}, func() {
			if err := s.Close(); err != nil {
				logger.Error(err, "Closing the simulated host")
			}
		}, nil
	case config.HostWindows:
		return windowsHost(ctx, opts)
	}
	return plugin.Host{}, nil, fmt.Errorf("unknown host %q", opts.Host)
}

// diagnoseHost opens the host diagnose reads while the plugin may be
// serving it: the Windows host as the plugin opens it (diagnose makes only
// calls that read; WMI and Win32 serve any number of processes), or the
// simulated host read-only (sim.OpenReadOnly: no lock taken, nothing
// written, every call that would change it refused).
func diagnoseHost(ctx context.Context, opts *config.Options) (host.Host, func(), error) {
	logger := klog.FromContext(ctx)
	if opts.Host == config.HostSim {
		s, err := sim.OpenReadOnly(opts.SimDir, logger)
		if err != nil {
			return host.Host{}, nil, fmt.Errorf("open the simulated host read-only: %w", err)
		}
		return s.Host(), func() { _ = s.Close() }, nil // closing a read-only sim cannot fail
	}
	h, closeHost, err := newHost(ctx, opts)
	if err != nil {
		return host.Host{}, nil, err
	}
	return h.Host, closeHost, nil
}
