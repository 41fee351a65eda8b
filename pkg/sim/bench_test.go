//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// BenchmarkMountUnmount measures one Mount plus one Unmount, each a
// mutating call that waits for its state write (fsync included).
func BenchmarkMountUnmount(b *testing.B) {
	s := newSim(b)
	_, guid := formattedDisk(b, s, "bench")
	dir := emptyDir(b, "stage")
	vols := s.Host().Volumes
	ctx := context.Background()
	for b.Loop() {
		if err := vols.Mount(ctx, guid, dir); err != nil {
			b.Fatal(err)
		}
		if err := vols.Unmount(ctx, dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMountUnmountParallel shows group commit at work: many volumes
// mounted and unmounted concurrently share state writes.
func BenchmarkMountUnmountParallel(b *testing.B) {
	s := newSim(b)
	_, guid := formattedDisk(b, s, "bench")
	vols := s.Host().Volumes
	ctx := context.Background()
	base := b.TempDir()
	var next atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		dir := filepath.Join(base, fmt.Sprintf("stage-%d", next.Add(1)))
		if err := s.Host().Files.MakeDir(ctx, dir); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if err := vols.Mount(ctx, guid, dir); err != nil {
				b.Error(err)
				return
			}
			if err := vols.Unmount(ctx, dir); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkStat measures Files.Stat of a mount point.
func BenchmarkStat(b *testing.B) {
	s := newSim(b)
	_, guid := formattedDisk(b, s, "bench")
	dir := emptyDir(b, "stage")
	ctx := context.Background()
	if err := s.Host().Volumes.Mount(ctx, guid, dir); err != nil {
		b.Fatal(err)
	}
	files := s.Host().Files
	for b.Loop() {
		info, err := files.Stat(ctx, dir)
		if err != nil || info.Kind != host.PathMountPoint {
			b.Fatal(info, err)
		}
	}
}

// BenchmarkMountUnmountManyDisks shows how the cost of a mutating call
// grows with the size of the model the sim persists: the same Mount plus
// Unmount as BenchmarkMountUnmount, on a host with more attached disks.
func BenchmarkMountUnmountManyDisks(b *testing.B) {
	for _, n := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("disks=%d", n), func(b *testing.B) {
			s := newSim(b)
			_, guid := formattedDisk(b, s, "bench")
			// One durable write for all the others.
			if err := s.control(func(st *State) error {
				for i := 1; i < n; i++ {
					if _, err := s.attachDisk(st, DiskSpec{Serial: fmt.Sprintf("other-%04d", i), FileSystem: "NTFS"}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			dir := emptyDir(b, "stage")
			vols := s.Host().Volumes
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if err := vols.Mount(ctx, guid, dir); err != nil {
					b.Fatal(err)
				}
				if err := vols.Unmount(ctx, dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
