package main

import (
	"context"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
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
// chooses between the real and the simulated host; the simulated one is
// built into the binary only off Windows (host_sim.go). setup is
// --sim-config, read (the zero value: newHost reads it itself when the
// flag is set); rec, when set, records the Windows executor's calls.
func newHost(ctx context.Context, opts *config.Options, setup simSetup, rec *record) (*node, error) {
	switch opts.Host {
	case config.HostSim:
		if rec != nil {
			return nil, fmt.Errorf("recording %s: only the Windows host's calls are recorded; --host=sim makes none", rec.path)
		}
		return simHost(ctx, opts, setup)
	case config.HostWindows:
		return windowsHost(ctx, opts, rec)
	}
	return nil, fmt.Errorf("unknown host %q", opts.Host)
}

// readHost opens the host to read while the plugin may be serving it
// (diagnose, preflight without --fix): the Windows host as the plugin
// opens it (only calls that read are made; WMI and Win32 serve any number
// of processes), or the simulated host read-only (simReadHost).
func readHost(ctx context.Context, opts *config.Options) (*node, error) {
	if opts.Host == config.HostSim {
		return simReadHost(ctx, opts)
	}
	return newHost(ctx, opts, simSetup{}, nil)
}
