package main

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
)

// node is a started host: what the plugin uses, what the operator's
// commands use, and how to stop it.
type node struct {
	plugin plugin.Host
	admin  host.Admin
	// roundTrips counts the host's round trips so far (WMI round trips on
	// Windows, host calls on the simulated host).
	roundTrips func() int
	// recorder is set when the executor's calls are recorded.
	recorder *recording.Recorder
	close    func()
}

// record asks for the executor's calls to be written to path, with the
// header's scenario and parameters (the source, format and Windows are
// filled in).
type record struct {
	path   string
	header recording.Header
}

// newHost starts the host backend the flags name. Only this package
// chooses between the real and the simulated host. setup is --sim-config,
// read (nil: newHost reads it); rec, when set, records the Windows
// executor's calls.
func newHost(ctx context.Context, opts *config.Options, setup *sim.Setup, rec *record) (*node, error) {
	logger := klog.FromContext(ctx)
	switch opts.Host {
	case config.HostSim:
		if rec != nil {
			return nil, fmt.Errorf("recording %s: only the Windows host's calls are recorded; --host=sim makes none", rec.path)
		}
		if setup == nil && opts.SimConfig != "" {
			var err error
			if setup, err = sim.LoadSetup(opts.SimConfig); err != nil {
				return nil, fmt.Errorf("--sim-config %s: %w", opts.SimConfig, err)
			}
		}
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
				return nil, fmt.Errorf("start the simulated host with --sim-config %s: %w", opts.SimConfig, err)
			}
			return nil, fmt.Errorf("start the simulated host: %w", err)
		}
		// The volume of each RPC's host calls is what auto-attach reads,
		// and an expansion's size what its stand-in for the controller's
		// expansion reads. No System: the plugin runs no preflight checks
		// at start on the simulated host, whose node facts are fixed by
		// its model and whose host calls the suites count (preflight and
		// diagnose run them on demand).
		return &node{
			plugin:     plugin.Host{Host: s.Host(), ForVolume: sim.WithVolume, ForExpand: sim.WithExpansion},
			admin:      s.Admin(),
			roundTrips: simCalls(s),
			close: func() {
				if err := s.Close(); err != nil {
					logger.Error(err, "Closing the simulated host")
				}
			},
		}, nil
	case config.HostWindows:
		return windowsHost(ctx, opts, rec)
	}
	return nil, fmt.Errorf("unknown host %q", opts.Host)
}

// simCalls counts the simulated host's calls.
func simCalls(s *sim.Sim) func() int {
	return func() int {
		n := 0
		for _, c := range s.Calls() {
			n += c
		}
		return n
	}
}

// readHost opens the host to read while the plugin may be serving it
// (diagnose, preflight without --fix): the Windows host as the plugin
// opens it (only calls that read are made; WMI and Win32 serve any number
// of processes), or the simulated host read-only (sim.OpenReadOnly: no
// lock taken, nothing written, every call that would change it refused).
func readHost(ctx context.Context, opts *config.Options) (*node, error) {
	logger := klog.FromContext(ctx)
	if opts.Host == config.HostSim {
		s, err := sim.OpenReadOnly(opts.SimDir, logger)
		if err != nil {
			return nil, fmt.Errorf("open the simulated host read-only: %w", err)
		}
		return &node{plugin: plugin.Host{Host: s.Host(), System: s.Admin().System}, admin: s.Admin(), roundTrips: simCalls(s),
			close: func() { _ = s.Close() }}, nil // closing a read-only sim cannot fail
	}
	return newHost(ctx, opts, nil, nil)
}
