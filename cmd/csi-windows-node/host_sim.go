//go:build !windows

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/sim/controller"
)

// simSetup is the --sim-config file, read; the zero value is none.
type simSetup struct{ setup *sim.Setup }

// loadSimSetup reads and checks the --sim-config file.
func loadSimSetup(path string) (simSetup, error) {
	s, err := sim.LoadSetup(path)
	return simSetup{setup: s}, err
}

// simHost starts the simulated Windows host in --sim-dir with the stand-in
// for the controller side in front of the node (pkg/sim/controller): it
// names and, with --sim-auto-attach, attaches and grows the disks of disk
// volumes, as a cloud's controller would. The plugin gets no System: it
// runs no preflight checks at start on the simulated host, whose node
// facts are fixed by its model and whose host calls the suites count
// (preflight and diagnose run them on demand).
func simHost(ctx context.Context, opts *config.Options, setup simSetup) (*node, error) {
	logger := klog.FromContext(ctx)
	if setup.setup == nil && opts.SimConfig != "" {
		var err error
		if setup, err = loadSimSetup(opts.SimConfig); err != nil {
			return nil, fmt.Errorf("--sim-config %s: %w", opts.SimConfig, err)
		}
	}
	logger.Info("SIMULATED WINDOWS HOST: no real disk, share or iSCSI target is touched; "+
		"this mode is for development and tests only", "simDir", opts.SimDir, "autoAttach", opts.SimAutoAttach)
	s, err := sim.New(sim.Config{
		Dir:     opts.SimDir,
		Latency: opts.SimLatency,
		Logger:  logger,
		Setup:   setup.setup,
	})
	if err != nil {
		if setup.setup != nil {
			return nil, fmt.Errorf("start the simulated host with --sim-config %s: %w", opts.SimConfig, err)
		}
		return nil, fmt.Errorf("start the simulated host: %w", err)
	}
	ctl := controller.Wrap(s, controller.Options{Attach: opts.SimAutoAttach, DiskSize: uint64(opts.SimDiskSize)})
	return &node{
		plugin:     plugin.Host{Host: s.Host(), Controller: ctl},
		admin:      s.Admin(),
		roundTrips: simCalls(s),
		close: func() {
			if err := s.Close(); err != nil {
				logger.Error(err, "Closing the simulated host")
			}
		},
	}, nil
}

// simReadHost opens the simulated host read-only (sim.OpenReadOnly: no
// lock taken, nothing written, every call that would change it refused).
func simReadHost(ctx context.Context, opts *config.Options) (*node, error) {
	s, err := sim.OpenReadOnly(opts.SimDir, klog.FromContext(ctx))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no simulated host in --sim-dir %s yet (the plugin, selftest or preflight --fix with --host=sim makes one): %w", opts.SimDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open the simulated host read-only: %w", err)
	}
	return &node{plugin: plugin.Host{Host: s.Host()}, admin: s.Admin(), roundTrips: simCalls(s),
		close: func() { _ = s.Close() }}, nil // closing a read-only sim cannot fail
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
