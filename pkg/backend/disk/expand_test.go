package disk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

// expandHost is a node with one staged volume on disk 3, for Expand: the
// staging path is the volume's mount point, the disk has parts, and the
// provider supports growing a partition to max.
type expandHost struct {
	host.Disks
	host.Files
	disk    host.Disk
	parts   []host.Partition
	max     uint64
	resized []string // "partition N to S"
}

const expandGUID = `\\?\Volume{6f0a2b1c-0000-4000-8000-000000000001}\`

func (e *expandHost) Stat(context.Context, string) (host.PathInfo, error) {
	return host.PathInfo{Kind: host.PathMountPoint, Target: expandGUID}, nil
}
func (e *expandHost) Rescan(context.Context) error                   { return nil }
func (e *expandHost) Get(context.Context, uint32) (host.Disk, error) { return e.disk, nil }
func (e *expandHost) Partitions(context.Context, host.Disk) ([]host.Partition, error) {
	return e.parts, nil
}
func (e *expandHost) MaxPartitionSize(context.Context, host.Partition) (uint64, error) {
	return e.max, nil
}
func (e *expandHost) ResizePartition(_ context.Context, p host.Partition, size uint64) error {
	e.resized = append(e.resized, fmt.Sprintf("partition %d to %d", p.Number, size))
	return nil
}

// expandVolumes answers for the staged volume: on disk 3, 1 GiB.
type expandVolumes struct{ host.Volumes }

func (expandVolumes) Get(context.Context, string) (host.Volume, error) {
	return host.Volume{GUIDPath: expandGUID, Size: 1 << 30}, nil
}
func (expandVolumes) DiskNumber(context.Context, string) (uint32, error) { return 3, nil }

// Expand at its edges: a disk exactly as large as required is large
// enough; a growth of exactly Windows' 1 MiB minimum is asked for and one
// below it is not; the partition grown is the one whose access path names
// the staged volume, never another data partition of the disk.
func TestExpandEdges(t *testing.T) {
	const size = 1 << 30
	msr := host.Partition{Number: 1, Offset: 1 << 20, Size: 16 << 20, GptType: host.GptTypeMSR}
	data := host.Partition{Number: 2, Offset: 17 << 20, Size: size, GptType: host.GptTypeBasicData, AccessPaths: []string{expandGUID}}
	other := host.Partition{Number: 3, Offset: 17<<20 + size, Size: size, GptType: host.GptTypeBasicData,
		AccessPaths: []string{`D:\`, `\\?\Volume{6f0a2b1c-0000-4000-8000-000000000002}\`}}
	// The volume's access path as Windows may render it: no trailing
	// backslash, upper-case GUID.
	named := data
	named.Number, named.AccessPaths = 4, []string{`\\?\Volume{6F0A2B1C-0000-4000-8000-000000000001}`}
	tests := []struct {
		name     string
		diskSize uint64
		parts    []host.Partition
		max      uint64
		req      backend.ExpandRequest
		resized  []string
		err      error
	}{
		{name: "a disk exactly as large as required", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: size,
			req: backend.ExpandRequest{RequiredBytes: 4 << 30}},
		{name: "a disk one byte smaller than required", diskSize: 4<<30 - 1, parts: []host.Partition{msr, data}, max: size,
			req: backend.ExpandRequest{RequiredBytes: 4 << 30}, err: host.ErrNotReady},
		{name: "1 MiB to grow", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: size + minGrowth,
			resized: []string{fmt.Sprintf("partition 2 to %d", size+minGrowth)}},
		{name: "less than 1 MiB to grow", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: size + minGrowth - 1},
		{name: "the partition fills its disk", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: size},
		{name: "grown to the limit", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: 3 << 30,
			req: backend.ExpandRequest{LimitBytes: 2 << 30}, resized: []string{fmt.Sprintf("partition 2 to %d", 2<<30)}},
		{name: "a limit the partition already has", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: 3 << 30,
			req: backend.ExpandRequest{LimitBytes: size}},
		{name: "a limit below the partition's size", diskSize: 4 << 30, parts: []host.Partition{msr, data}, max: 3 << 30,
			req: backend.ExpandRequest{LimitBytes: size - 1}, err: host.ErrOutOfRange},
		{name: "the partition whose access path names the volume", diskSize: 4 << 30, parts: []host.Partition{msr, other, named}, max: 2 << 30,
			resized: []string{fmt.Sprintf("partition 4 to %d", 2<<30)}},
		{name: "two data partitions, neither the volume's", diskSize: 4 << 30, parts: []host.Partition{msr, other, {Number: 5, GptType: host.GptTypeBasicData}},
			max: 2 << 30, err: host.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &expandHost{disk: host.Disk{Number: 3, SerialNumber: "D", Size: tt.diskSize}, parts: tt.parts, max: tt.max}
			h := hosttest.Unimplemented()
			e.Disks, e.Files = h.Disks, h.Files
			h.Disks, h.Volumes, h.Files = e, expandVolumes{h.Volumes}, e
			tt.req.VolumeID, tt.req.StagingPath = "v", `c:\var\lib\kubelet\plugins\staging\v`
			got, err := New(h, nil, Options{Backoff: once}).Expand(context.Background(), tt.req)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Expand = %d, %v; want %v", got, err, tt.err)
			}
			if !slices.Equal(e.resized, tt.resized) {
				t.Errorf("resized %q, want %q", e.resized, tt.resized)
			}
		})
	}
}
