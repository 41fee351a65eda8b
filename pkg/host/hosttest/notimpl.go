package hosttest

import (
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// unimplemented.go, Unimplemented and a failing type per area, is written
// by hostgen from the interfaces of pkg/host.
//go:generate go run ../internal/hostgen -kind unimplemented -host .. -o unimplemented.go

// notImpl is the error of every method of Unimplemented: op names it
// ("disks.List").
func notImpl(op string) error { return fmt.Errorf("%s: %w", op, host.ErrNotImplemented) }
