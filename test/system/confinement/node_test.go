package confinement

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

const vol = "vol-confined"

// hostilePaths returns the paths every path-taking RPC must reject, for a
// kubelet directory k (with the links made by makeLinks). Names that only
// Windows forbids (trailing dots, alternate data streams, links whose
// target is a UNC path) are legitimate Linux names; the Windows grammar
// rejects them in winpath_test.go.
func hostilePaths(k, outside string) map[string]string {
	up := strings.ToUpper(k)
	return map[string]string{
		"dotdot":                 k + "/../etc",
		"dotdot inside":          k + "/pods/../../x",
		"dotdot at end":          k + "/pods/..",
		"backslash dotdot":       k + `\..\x`,
		"mixed separators":       k + `/pods\..\..\x`,
		"mixed separators 2":     k + `\pods/../../x`,
		"unc":                    `\\server\share\x`,
		"unc forward":            "//server/share/x",
		"unc long":               `\\?\UNC\server\share\x`,
		"device long":            `\\?\C:\var\lib\kubelet\x`,
		"device dot":             `\\.\C:\var\lib\kubelet\x`,
		"physical drive":         `\\.\PhysicalDrive0`,
		"globalroot":             `\\?\GLOBALROOT\Device\HarddiskVolume1\x`,
		"globalroot dot":         `\\.\GLOBALROOT\Device\Harddisk0\Partition1`,
		"nt object":              `\??\C:\x`,
		"device namespace":       `\Device\HarddiskVolume1\x`,
		"volume guid":            `\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}\x`,
		"drive letter":           `C:\var\lib\kubelet\x`,
		"outside":                outside + "/x",
		"etc":                    "/etc/passwd",
		"relative":               "pods/x",
		"root itself":            k,
		"root with slash":        k + "/",
		"case variation":         up + "/pods/x",
		"nul":                    k + "/pods/x\x00y",
		"control":                k + "/pods/x\ny",
		"link out absolute":      k + "/escape/x",
		"link out relative":      k + "/climb/x",
		"link chain out":         k + "/chain1/x",
		"link nested out":        k + "/pods/podlink/x",
		"prefix sibling":         k + "-other/x",
		"long":                   k + "/" + strings.Repeat("a/", 20000) + "x",
		"dotdot via dot segment": k + "/./../x",
	}
}

// makeLinks creates real symlinks in the kubelet directory that lead out
// of it.
func makeLinks(t *testing.T, k, outside string) {
	t.Helper()
	for link, target := range map[string]string{
		"escape":         outside,
		"climb":          "../..",
		"chain1":         filepath.Join(k, "chain2"),
		"chain2":         "/",
		"pods/podlink":   outside,
		"pods/inside-ok": filepath.Join(k, "pods"),
	} {
		p := filepath.Join(k, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// rpc is one path-taking RPC with the hostile path in one of its fields.
type rpc struct {
	name  string
	field string
	// lookup marks the RPCs that look a volume up by path: a well-formed
	// path outside the kubelet directory answers NotFound there (the
	// volume cannot be published at it), everything else InvalidArgument.
	lookup bool
	call   func(ctx context.Context, n *simnode.Node, good, bad string) error
}

var rpcs = []rpc{
	{name: "NodeStageVolume", field: "staging_target_path", call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: bad,
			VolumeCapability: simnode.MountCap, VolumeContext: map[string]string{"diskSerial": vol}})
		return err
	}},
	{name: "NodeUnstageVolume", field: "staging_target_path", call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: bad})
		return err
	}},
	{name: "NodePublishVolume/target", field: "target_path", call: func(ctx context.Context, n *simnode.Node, good, bad string) error {
		_, err := n.Server.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: good,
			TargetPath: bad, VolumeCapability: simnode.MountCap})
		return err
	}},
	{name: "NodePublishVolume/staging", field: "staging_target_path", call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: bad,
			TargetPath: simnode.TargetPath(n.Kubelet, "pod-x", vol), VolumeCapability: simnode.MountCap})
		return err
	}},
	{name: "NodeUnpublishVolume", field: "target_path", call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: bad})
		return err
	}},
	{name: "NodeGetVolumeStats", field: "volume_path", lookup: true, call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol, VolumePath: bad})
		return err
	}},
	{name: "NodeExpandVolume/volume", field: "volume_path", lookup: true, call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol, VolumePath: bad})
		return err
	}},
	{name: "NodeExpandVolume/staging", field: "staging_target_path", lookup: true, call: func(ctx context.Context, n *simnode.Node, good, bad string) error {
		_, err := n.Server.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol, VolumePath: good, StagingTargetPath: bad})
		return err
	}},
	{name: "NodeGetVolumeHealth/staging", field: "staging_target_path", lookup: true, call: func(ctx context.Context, n *simnode.Node, _, bad string) error {
		_, err := n.Server.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: vol, StagingTargetPath: bad})
		return err
	}},
	{name: "NodeGetVolumeHealth/publish", field: "volume_publish_path", lookup: true, call: func(ctx context.Context, n *simnode.Node, good, bad string) error {
		_, err := n.Server.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: vol, StagingTargetPath: good, VolumePublishPath: bad})
		return err
	}},
}

// TestEveryPathTakingRPCRejectsHostilePaths: with the volume staged, so
// that only the path can be wrong, every RPC rejects every hostile path
// with InvalidArgument naming the field (or, for a lookup of a well-formed
// path outside the kubelet directory, NotFound) and makes no host call.
func TestEveryPathTakingRPCRejectsHostilePaths(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "x"), 0o750); err != nil {
		t.Fatal(err)
	}
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if _, err := n.Sim.AttachDisk(sim.DiskSpec{Serial: vol, Offline: true}); err != nil {
		t.Fatal(err)
	}
	staging := simnode.StagingPath(n.Kubelet, vol)
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := n.Server.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
		VolumeCapability: simnode.MountCap, VolumeContext: map[string]string{"diskSerial": vol}}); err != nil {
		t.Fatal(err)
	}
	makeLinks(t, n.Kubelet, outside)

	cases := 0
	for name, bad := range hostilePaths(n.Kubelet, outside) {
		for _, r := range rpcs {
			cases++
			t.Run(r.name+"/"+name, func(t *testing.T) {
				mark := n.Sim.Mark()
				err := r.call(ctx, n, staging, bad)
				if ops := n.Sim.OpsSince(mark); len(ops) != 0 {
					t.Errorf("host calls before the rejection: %v", ops)
				}
				st, _ := status.FromError(err)
				switch {
				case st.Code() == codes.InvalidArgument:
					if !strings.HasPrefix(st.Message(), r.field) {
						t.Errorf("message %q does not name the field %s", st.Message(), r.field)
					}
				case st.Code() == codes.NotFound && r.lookup:
					if !strings.Contains(st.Message(), r.field) {
						t.Errorf("message %q does not name the field %s", st.Message(), r.field)
					}
				default:
					t.Errorf("code %v (%v), want InvalidArgument%s", st.Code(), err, map[bool]string{true: " or NotFound", false: ""}[r.lookup])
				}
			})
		}
	}
	// The volume is untouched and a link inside the kubelet directory is
	// still followed: the suite rejects escapes, not links.
	mark := n.Sim.Mark()
	inside := filepath.Join(n.Kubelet, "pods", "inside-ok", "pod-1", "volumes", "kubernetes.io~csi", vol, "mount")
	if err := os.MkdirAll(filepath.Dir(inside), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Server.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
		TargetPath: inside, VolumeCapability: simnode.MountCap}); err != nil {
		t.Fatalf("publish through a link inside the kubelet directory: %v", err)
	}
	if len(n.Sim.OpsSince(mark)) == 0 {
		t.Fatal("the accepted publish made no host call: the zero-call assertions above prove nothing")
	}
	t.Logf("%d hostile path cases over %d RPC fields", cases, len(rpcs))
}
