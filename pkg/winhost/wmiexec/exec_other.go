//go:build !windows

package wmiexec

import (
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// comThread is a COM worker's state; off Windows there is none.
type comThread struct{}

// New fails off Windows: there is no WMI or Win32 to call.
func New(Options) (*Executor, error) {
	return nil, fmt.Errorf("the WMI and Win32 executor runs only on Windows: %w", host.ErrNotImplemented)
}
