//go:build linux

// Linux only: the simulated host runs only on Linux (see doc.go).

package sim

import (
	"slices"
	"testing"
	"time"
)

// TestWin32Latency: the Win32 ops are ops, and take Win32Latency when it
// is set, Latency otherwise.
func TestWin32Latency(t *testing.T) {
	for op := range win32Ops {
		if !slices.Contains(AllOps, op) {
			t.Errorf("win32Ops names %q, which is no op", op)
		}
	}
	short := time.Millisecond
	s := &Sim{cfg: Config{Latency: 50 * time.Millisecond}}
	if s.latency(OpFilesStat) != 50*time.Millisecond || s.latency(OpDisksList) != 50*time.Millisecond {
		t.Fatalf("without Win32Latency every op takes Latency")
	}
	s.cfg.Win32Latency = &short
	if s.latency(OpFilesStat) != short || s.latency(OpSMBCheck) != short || s.latency(OpDisksList) != 50*time.Millisecond {
		t.Fatalf("with Win32Latency: Stat %v, Check %v, List %v", s.latency(OpFilesStat), s.latency(OpSMBCheck), s.latency(OpDisksList))
	}
}
