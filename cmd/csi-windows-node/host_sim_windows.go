package main

import (
	"context"
	"errors"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

// The Windows binary does not link the simulated host (test/rules/wiring checks
// it): config.Finish refuses --host=sim and --sim-* on Windows, so these
// are only reached by a programming error.

var errNoSim = errors.New("the simulated host is not built into the Windows binary; use --host=windows")

// simSetup is the --sim-config file; there is none on Windows.
type simSetup struct{}

func loadSimSetup(string) (simSetup, error) { return simSetup{}, errNoSim }

func simHost(context.Context, *config.Options, simSetup) (*node, error) { return nil, errNoSim }

func simReadHost(context.Context, *config.Options) (*node, error) { return nil, errNoSim }
