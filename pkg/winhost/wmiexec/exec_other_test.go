//go:build !windows

package wmiexec

import (
	"errors"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestNewOffWindows(t *testing.T) {
	if _, err := New(Options{}); !errors.Is(err, host.ErrNotImplemented) {
		t.Errorf("New off Windows = %v, want host.ErrNotImplemented", err)
	}
}
