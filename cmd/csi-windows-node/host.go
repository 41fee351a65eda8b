package main

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
)

// hostHandle is a started host: the interfaces, how to stop it, and a
// cheap health check (nil when the host has none) that Probe consults.
type hostHandle struct {
	host.Host
	Close   func()
	Healthy func() error
	// ForVolume annotates the context of a volume's host calls (nil for
	// hosts that need no annotation): the simulated host's auto-attach.
	ForVolume func(context.Context, string) context.Context
}

// newHost builds the host backend the flags name. Only this package chooses
// between the real and the simulated host.
func newHost(ctx context.Context, opts *config.Options) (hostHandle, error) {
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
			Logger:         logger.WithName("sim"),
		})
		if err != nil {
			return hostHandle{}, fmt.Errorf("start the simulated host: %w", err)
		}
		return hostHandle{Host: s.Host(), ForVolume: sim.WithVolume, Close: func() {
			if err := s.Close(); err != nil {
				logger.Error(err, "Closing the simulated host")
			}
		}}, nil
	case config.HostWindows:
		return windowsHost(ctx, opts)
	}
	return hostHandle{}, fmt.Errorf("unknown host %q", opts.Host)
}
