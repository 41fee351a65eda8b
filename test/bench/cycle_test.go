package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// BenchmarkNodePublishUnpublish is the bench's publish+unpublish cycle
// without gRPC and without a second process: the node service called
// directly on the simulated host, wired as cmd/csi-windows-node wires it.
// It is the focused benchmark to profile the cycle with
// (go test -run NONE -bench NodePublishUnpublish -cpuprofile cpu.out
// ./test/bench). The "ancestors-unchecked" case replaces the file system
// Root.CheckLinks inspects with one that reports plain directories without
// a system call: the difference is what the link check of the request
// paths costs; it is not a configuration the plugin offers.
func BenchmarkNodePublishUnpublish(b *testing.B) {
	for _, c := range []struct {
		name string
		fs   winpath.FS
	}{
		{"as-deployed", nil},
		{"ancestors-unchecked", plainDirs{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ns, v := stagedNode(b, c.fs)
			ctx := context.Background()
			for b.Loop() {
				if _, err := ns.NodePublishVolume(ctx, v.publish()); err != nil {
					b.Fatal(err)
				}
				if _, err := ns.NodeUnpublishVolume(ctx, v.unpublish()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stagedNode returns a node service over a fresh sim with one disk volume
// staged, the directories kubelet makes already there.
func stagedNode(b *testing.B, fsys winpath.FS) (*node.Server, volume) {
	b.Helper()
	base := b.TempDir()
	kubelet := filepath.Join(base, "kubelet")
	s, err := sim.New(sim.Config{Dir: filepath.Join(base, "sim")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	v := diskVolume(kubelet, "cyc", 0, 0)
	if err := attachDisks(s, []volume{v}, false); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{v.staging, filepath.Dir(v.target)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			b.Fatal(err)
		}
	}
	jr, err := journal.Open(filepath.Join(base, "journal"))
	if err != nil {
		b.Fatal(err)
	}
	root, err := winpath.NewRoot(kubelet, winpath.POSIX)
	if err != nil {
		b.Fatal(err)
	}
	h := s.Host()
	ns := node.New(node.Config{
		NodeID: "bench-node", Root: root, FS: fsys, Host: h, Journal: jr,
		Contract: contract.Options{VolumeIDDisk: "serial"},
		Backends: map[contract.Kind]node.Backend{contract.KindDisk: disk.New(h, disk.Options{OfflineOnUnstage: true})},
	})
	if _, err := ns.NodeStageVolume(context.Background(), v.stage()); err != nil {
		b.Fatal(err)
	}
	return ns, v
}

// plainDirs is a winpath.FS in which every path is a plain directory.
type plainDirs struct{}

func (plainDirs) Lstat(string) (fs.FileInfo, error) { return dirInfo{}, nil }
func (plainDirs) Readlink(name string) (string, error) {
	return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
}

type dirInfo struct{}

func (dirInfo) Name() string       { return "dir" }
func (dirInfo) Size() int64        { return 0 }
func (dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o750 }
func (dirInfo) ModTime() time.Time { return time.Time{} }
func (dirInfo) IsDir() bool        { return true }
func (dirInfo) Sys() any           { return nil }
