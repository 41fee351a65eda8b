package disk

import (
	"context"
	"errors"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

// growDisks answers GetSupportedSize and Resize for growToDisk.
type growDisks struct {
	host.Disks
	max       uint64
	maxErr    error
	resizeErr error
	maxCalls  int
	resized   []uint64
}

func (g *growDisks) MaxPartitionSize(context.Context, host.Partition) (uint64, error) {
	g.maxCalls++
	return g.max, g.maxErr
}

func (g *growDisks) ResizePartition(_ context.Context, _ host.Partition, size uint64) error {
	g.resized = append(g.resized, size)
	return g.resizeErr
}

// growToDisk at its edges: a disk whose end beyond the partition is the
// backup GPT and alignment (growSlack) has not grown; a growth below
// Windows' 1 MiB minimum is not asked for.
func TestGrowToDisk(t *testing.T) {
	const off, size = 16 << 20, 1 << 30
	part := host.Partition{Offset: off, Size: size}
	end := uint64(off + size)
	fail := errors.New("defrag service stopped")
	tests := []struct {
		name      string
		disk      uint64
		max       uint64
		maxErr    error
		resizeErr error
		asks      bool   // GetSupportedSize is called
		resize    uint64 // 0: none
		err       error
	}{
		{"the partition ends at the disk's end", end, 0, nil, nil, false, 0, nil},
		{"the disk is smaller", end - 1, 0, nil, nil, false, 0, nil},
		{"only the backup GPT beyond it", end + growSlack - 1, 0, nil, nil, false, 0, nil},
		{"growSlack beyond it", end + growSlack, size + minGrowth, nil, nil, true, size + minGrowth, nil},
		{"room, but less than 1 MiB supported", end + 8<<20, size + minGrowth - 1, nil, nil, true, 0, nil},
		{"grown to the supported size", end + 1<<30, 2*size - 1<<20, nil, nil, true, 2*size - 1<<20, nil},
		{"the supported size cannot be read", end + 1<<30, 0, fail, nil, true, 0, fail},
		{"the resize fails", end + 1<<30, 2 * size, nil, fail, true, 2 * size, fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &growDisks{Disks: hosttest.Unimplemented().Disks, max: tt.max, maxErr: tt.maxErr, resizeErr: tt.resizeErr}
			h := hosttest.Unimplemented()
			h.Disks = g
			err := New(h, nil, Options{Backoff: once}).growToDisk(context.Background(), host.Disk{Number: 3, Size: tt.disk}, part)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("growToDisk = %v, want %v", err, tt.err)
			}
			if (g.maxCalls > 0) != tt.asks {
				t.Errorf("GetSupportedSize called %d times", g.maxCalls)
			}
			var resized uint64
			if len(g.resized) > 0 {
				resized = g.resized[0]
			}
			if len(g.resized) > 1 || resized != tt.resize {
				t.Errorf("resized to %v, want %d", g.resized, tt.resize)
			}
		})
	}
}
