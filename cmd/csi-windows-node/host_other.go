//go:build !windows

package main

import (
	"context"
	"errors"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

// windowsHost is unavailable off Windows; config.Finish already refuses
// --host=windows there, so this is only reached by a programming error.
func windowsHost(context.Context, *config.Options, *record) (*node, error) {
	return nil, errors.New("the Windows host only runs on Windows; use --host=sim")
}
