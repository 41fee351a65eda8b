package fuzz

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// secretMark starts every fuzzed secret value; when no public input
// carries it, no error may either.
const secretMark = "\u2603"

// hostCodes are the codes of host-level failures a well-formed but wrong
// request may get (docs/reliability.md, "Error codes"): a disk, share or
// target that does not exist or refuses, a staging path holding something
// else, a deadline. InvalidArgument is checked separately; Internal,
// Unknown and Unimplemented never come out of a fuzzed request.
var hostCodes = map[codes.Code]bool{
	codes.OK: true, codes.NotFound: true, codes.AlreadyExists: true, codes.FailedPrecondition: true,
	codes.Unauthenticated: true, codes.PermissionDenied: true, codes.Unavailable: true,
	codes.DeadlineExceeded: true, codes.OutOfRange: true,
}

// knownKeys are the keys an error may name without the request holding
// them: the contract's keys (a required key that is missing) and the CSI
// fields.
var knownKeys = func() map[string]bool {
	m := map[string]bool{"volume_id": true}
	for _, k := range contract.Keys() {
		m[strings.ToLower(k.Name)] = true
	}
	return m
}()

// Fields a message may start with.
var fieldPrefixes = []string{"volume_id", "staging_target_path", "volume_capability"}

var paramKey = regexp.MustCompile(`^parameter "((?:[^"\\]|\\.)*)": `)

// seed is one input: the mode bits pick the base context (0 none, 1 disk,
// 2 smb, 3 iscsi), whether the fuzzed pairs go to publish_context (4),
// whether the staging path is taken as is (8) or below the kubelet
// directory, and whether the capability is block (16) or has a fuzzed
// access mode (32).
type seed struct {
	mode               uint8
	volumeID, path     string
	k1, v1, k2, v2     string
	secK, secV, fsType string
}

var seeds = []seed{
	{1, "vol-1", "s/1", "diskLUN", "3", "fsType", "refs", "", "", ""},
	{1, "vol-disk", "s/2", "", "", "", "", "", "", "ntfs"},
	{2, "vol-smb", "s/3", "subDir", "v1", "", "", "username", "alice", ""},
	{2, "v", "s/4", "subDir", "../x", "requirePrivacy", "maybe", "password", "pw", ""},
	{3, "v", "s/5", "lun", "70000", "portals", "[::1]:99999", "", "", ""},
	{3, "v", "s/6", "sessionCHAPAuth", "true", "", "", "node.session.auth.password", "short", ""},
	{3 | 4, "v", "s/7", "iqn", "IQN.bad name", "", "", "", "", ""},
	{0, "v", "s/8", "backend", "nfs", "", "", "", "", ""},
	{8, "v", "relative/path", "", "", "", "", "", "", ""},
	{8, "v", `\\?\GLOBALROOT\Device\Harddisk0`, "", "", "", "", "", "", ""},
	{8, "v", "/etc/passwd", "", "", "", "", "", "", ""},
	{1, "v", "../../../etc", "", "", "", "", "", "", ""},
	{1, "v", "escape/inside", "", "", "", "", "", "", ""},
	{1, "v", `s\..\..\x`, "", "", "", "", "", "", ""},
	{1 | 16, "v", "s/9", "", "", "", "", "", "", ""},
	{1 | 32, "v", "s/10", "", "", "", "", "", "", "xfs"},
	{2, "v", "s/11", "source", `\\srv\data\"quoted"`, "", "", "username", `dom\"u:%v`, ""},
	{1, "", "s/12", "", "", "", "", "", "", ""},
	{1, strings.Repeat("x", 5000), "s/13", "", "", "", "", "", "", ""},
	{2, "v", "s/14", "csi.storage.k8s.io/ephemeral", "true", "", "", "", "", ""},
	{1, "v", "s/15", "node.session.auth.password", "in-context", "", "", "", "", ""},
}

// FuzzNodeStage feeds fuzzed requests into NodeStageVolume. It asserts no
// panic; the code is OK, InvalidArgument or a host-level failure code; an
// InvalidArgument message names the offending field or key (a field
// prefix, or `parameter "<key>"` for a key of the request or of the
// contract); no error carries a secret value; a stage that succeeded is
// unstaged again cleanly.
func FuzzNodeStage(f *testing.F) {
	for _, s := range seeds {
		f.Add(s.mode, s.volumeID, s.path, s.k1, s.v1, s.k2, s.v2, s.secK, s.secV, s.fsType)
	}
	base := f.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base, NoAutoAttach: true,
		Backoff: backend.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = n.Close() })
	if err := setupHost(n); err != nil {
		f.Fatal(err)
	}
	ns := n.Server

	f.Fuzz(func(t *testing.T, mode uint8, volumeID, path, k1, v1, k2, v2, secK, secV, fsType string) {
		vc := map[string]string{}
		switch mode & 3 {
		case 1:
			vc["diskSerial"] = "disk-1"
		case 2:
			vc["source"] = `\\srv\data`
		case 3:
			vc["targetPortal"], vc["iqn"], vc["lun"] = "10.0.0.1", "iqn.2024-01.io.wincsi.sim:fuzz", "1"
		}
		pc := map[string]string{}
		dst := vc
		if mode&4 != 0 {
			dst = pc
		}
		dst[k1], dst[k2] = v1, v2
		secrets := map[string]string{"username": "alice", "password": secretMark + "pw"}
		if secK != "" {
			// User names are not secret (errors name them); passwords are.
			secrets[secK] = secV
			if strings.Contains(strings.ToLower(secK), "password") {
				secrets[secK] = secretMark + secV
			}
		}
		staging := path
		if mode&8 == 0 {
			staging = n.Kubelet + "/" + path
		}
		capability := &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}
		if mode&16 != 0 {
			capability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		}
		if mode&32 != 0 {
			capability.AccessMode.Mode = csi.VolumeCapability_AccessMode_Mode(int32(len(v2)) - 1)
		}
		req := &csi.NodeStageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging, VolumeCapability: capability,
			VolumeContext: vc, PublishContext: pc, Secrets: secrets}

		// No deadline: the disk lookup then waits the backoff's short Bound
		// for a disk that never appears, not a deadline's worth.
		ctx := context.Background()
		_, err := ns.NodeStageVolume(ctx, req)
		public := strings.Join([]string{volumeID, path, k1, v1, k2, v2, secK, fsType}, "\x00")
		checkError(t, "NodeStageVolume", err, req, public)
		if err != nil {
			return
		}
		// Leave nothing behind for the next input.
		_, err = ns.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging})
		if err != nil {
			t.Fatalf("unstage after a successful stage: %v", err)
		}
	})
}

// checkError applies the assertions of FuzzNodeStage to one RPC's error.
func checkError(t *testing.T, rpc string, err error, req *csi.NodeStageVolumeRequest, public string) {
	t.Helper()
	st, _ := status.FromError(err)
	msg := st.Message()
	if !strings.Contains(public, secretMark) && strings.Contains(msg, secretMark) {
		t.Fatalf("%s: the error carries a secret value: %v", rpc, err)
	}
	if st.Code() != codes.InvalidArgument {
		if !hostCodes[st.Code()] {
			t.Fatalf("%s: code %v (%v), want OK, InvalidArgument or a host-level failure", rpc, st.Code(), err)
		}
		return
	}
	for _, p := range fieldPrefixes {
		if strings.HasPrefix(msg, p) {
			return
		}
	}
	m := paramKey.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("%s: InvalidArgument %q names no field or key", rpc, msg)
	}
	key := m[1]
	if knownKeys[strings.ToLower(key)] {
		return
	}
	for _, mp := range []map[string]string{req.GetVolumeContext(), req.GetPublishContext(), req.GetSecrets()} {
		for k := range mp {
			if k == key || strings.Contains(key, k) && k != "" {
				return
			}
		}
	}
	t.Fatalf("%s: InvalidArgument %q names key %q, which is neither in the request nor a contract key", rpc, msg, key)
}

// setupHost gives the fuzzed requests something real to find: disk
// "disk-1", share \\srv\data with user alice and directory v1, target
// ...:fuzz with LUN 1, and a link in the kubelet directory that leads out
// of it (kubelet/escape -> /).
func setupHost(n *simnode.Node) error {
	if _, err := n.Sim.AttachDisk(sim.DiskSpec{Serial: "disk-1", Offline: true}); err != nil {
		return err
	}
	if err := n.Sim.AddShare(sim.ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"alice": secretMark + "pw"}}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(n.SimDir, "smb", "srv", "data", "v1"), 0o750); err != nil {
		return err
	}
	if err := n.Sim.AddTarget(sim.TargetSpec{IQN: "iqn.2024-01.io.wincsi.sim:fuzz",
		Portals: []host.Portal{{Address: "10.0.0.1"}}, LUNs: []sim.LUNSpec{{LUN: 1}}}); err != nil {
		return err
	}
	return os.Symlink("/", filepath.Join(n.Kubelet, "escape"))
}
