package main

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// newHost starts the host backend the flags name and returns it with the
// function that stops it. Only this package chooses between the real and
// the simulated host. setup is --sim-config, read.
func newHost(ctx context.Context, opts *config.Options, setup *sim.Setup) (plugin.Host, func(), error) {
	logger := klog.FromContext(ctx)
	switch opts.Host {
	case config.HostSim:
		logger.Info("SIMULATED WINDOWS HOST: no real disk, share or iSCSI target is touched; "+
			"this mode is for development and tests only", "simDir", opts.SimDir, "autoAttach", opts.SimAutoAttach)
		s, err := sim.New(sim.Config{
			Dir:            opts.SimDir,
			AutoAttach:     opts.SimAutoAttach,
			AutoAttachSize: uint64(opts.SimDiskSize),
			Latency:        opts.SimLatency,
			Logger:         logger,
			Setup:          setup,
		})
		if err != nil {
			if setup != nil {
				return plugin.Host{}, nil, fmt.Errorf("start the simulated host with --sim-config %s: %w", opts.SimConfig, err)
			}
			return plugin.Host{}, nil, fmt.Errorf("start the simulated host: %w", err)
		}
		// The volume of each RPC's host calls is what auto-attach reads,
		// and an expansion's size what its stand-in for the controller's
		// expansion reads.
		return plugin.Host{Host: s.Host(), ForVolume: sim.WithVolume, ForExpand: sim.WithExpansion}, func() {
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
	h, closeHost, err := newHost(ctx, opts, nil)
	if err != nil {
		return host.Host{}, nil, err
	}
	return h.Host, closeHost, nil
}
