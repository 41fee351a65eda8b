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
	now       host.Disk // what Get answers: the disk read again
	gets      int
}

func (g *growDisks) Get(context.Context, uint32) (host.Disk, error) {
	g.gets++
	return g.now, nil
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
// Windows' 1 MiB minimum is not asked for. Before it resizes, the disk is
// read again and must be the one chosen (writeGuard): found by review, a
// restage grew whatever disk then had the number.
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
		changed   func(d *host.Disk) // the disk read again before the resize
	}{
		{"the partition ends at the disk's end", end, 0, nil, nil, false, 0, nil, nil},
		{"the disk is smaller", end - 1, 0, nil, nil, false, 0, nil, nil},
		{"only the backup GPT beyond it", end + growSlack - 1, 0, nil, nil, false, 0, nil, nil},
		{"growSlack beyond it", end + growSlack, size + minGrowth, nil, nil, true, size + minGrowth, nil, nil},
		{"room, but less than 1 MiB supported", end + 8<<20, size + minGrowth - 1, nil, nil, true, 0, nil, nil},
		{"grown to the supported size", end + 1<<30, 2*size - 1<<20, nil, nil, true, 2*size - 1<<20, nil, nil},
		{"the supported size cannot be read", end + 1<<30, 0, fail, nil, true, 0, fail, nil},
		{"the resize fails", end + 1<<30, 2 * size, nil, fail, true, 2 * size, fail, nil},
		{"another serial under the number", end + 1<<30, 2 * size, nil, nil, true, 0, host.ErrConflict,
			func(d *host.Disk) { d.SerialNumber = "OTHER" }},
		{"another UniqueId under the number", end + 1<<30, 2 * size, nil, nil, true, 0, host.ErrConflict,
			func(d *host.Disk) { d.UniqueID = "60022480AAAA" }},
		{"another size under the number", end + 1<<30, 2 * size, nil, nil, true, 0, host.ErrConflict,
			func(d *host.Disk) { d.Size++ }},
		{"another GPT disk GUID under the number", end + 1<<30, 2 * size, nil, nil, true, 0, host.ErrConflict,
			func(d *host.Disk) { d.GUID = "{0F1E2D3C-0000-4000-8000-000000000002}" }},
		{"the GUID as Windows renders it", end + 1<<30, 2 * size, nil, nil, true, 2 * size, nil,
			func(d *host.Disk) { d.GUID = "0f1e2d3c-0000-4000-8000-000000000001" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &growDisks{Disks: hosttest.Unimplemented().Disks, max: tt.max, maxErr: tt.maxErr, resizeErr: tt.resizeErr}
			h := hosttest.Unimplemented()
			h.Disks = g
			d := host.Disk{Number: 3, Size: tt.disk, SerialNumber: "D", UniqueID: "60022480F48D", GUID: "{0F1E2D3C-0000-4000-8000-000000000001}"}
			g.now = d
			if tt.changed != nil {
				tt.changed(&g.now)
			}
			b := New(h, nil, Options{Backoff: once})
			err := b.growToDisk(context.Background(), d, part, newWriteGuard(b, d, nil, nil))
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
			if (g.gets > 0) != (g.maxCalls > 0 && tt.max >= part.Size+minGrowth) {
				t.Errorf("the disk was read again %d times; want once before a resize, never otherwise", g.gets)
			}
		})
	}
}
