package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/winpath"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// BenchmarkNodePublishUnpublish is the bench's publish+unpublish cycle
// without gRPC and without a second process: the node service called
// directly on the simulated host, built by plugin.New as
// cmd/csi-windows-node builds it (test/harness/simnode).
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
func stagedNode(b *testing.B, fsys winpath.FS) (csi.NodeServer, volume) {
	b.Helper()
	n, err := simnode.Open(simnode.Options{Base: b.TempDir(), FS: fsys})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := n.Close(); err != nil {
			b.Error(err)
		}
	})
	v := diskVolume(n.Kubelet, "cyc", 0, 0)
	if err := attachDisks(n.Sim, []volume{v}, false); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{v.staging, filepath.Dir(v.target)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := n.Server.NodeStageVolume(context.Background(), v.stage()); err != nil {
		b.Fatal(err)
	}
	return n.Server, v
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
