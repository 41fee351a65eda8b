package mistakes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// rpcTimeout is a liveness bound only, like csc's default of a minute: no
// test depends on how long an RPC takes, only on whether it ends.
const rpcTimeout = time.Minute

// node is the plugin binary on the simulated network of
// docs/sim-config.yaml, as make run starts it.
type node struct {
	t   *testing.T
	p   *testbin.Plugin
	csi csi.NodeClient
}

// start runs the binary with the README's network and --v=2, plus args.
func start(t *testing.T, args ...string) *node {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := testbin.Build(t)
	p := testbin.Start(t, bin, testbin.Options{Dir: t.TempDir(), HTTP: true,
		Args: append([]string{"--sim-config=" + filepath.Join(root, "docs", "sim-config.yaml"), "--v=2"}, args...)})
	return &node{t: t, p: p, csi: csi.NewNodeClient(p.Dial(t))}
}

// The README's secrets and volume_context (docs/sim-config.yaml).
var (
	aliceSecret = map[string]string{"username": "alice", "password": "alice-password"}
	chapSecret  = map[string]string{"node.session.auth.username": "node1", "node.session.auth.password": "node1-secret12"}
	smbContext  = map[string]string{"source": "//files/data"}
)

func iscsiContext(lun string) map[string]string {
	return map[string]string{"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2026-01.io.example:storage", "lun": lun, "sessionCHAPAuth": "true"}
}

// The capabilities of the README's csc commands: --cap 1,mount,ntfs and
// --cap 5,mount,cifs.
var (
	ntfsCap = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ntfs")
	cifsCap = mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "cifs")
)

func mountCap(mode csi.VolumeCapability_AccessMode_Mode, fs string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

// staging makes the staging directory kubelet makes for vol.
func (n *node) staging(vol string) string {
	n.t.Helper()
	p := filepath.Join(n.p.Kubelet, "plugins", "kubernetes.io", "csi", "sim.csi.wincsi.io", vol, "globalmount")
	if err := os.MkdirAll(p, 0o750); err != nil {
		n.t.Fatal(err)
	}
	return p
}

// stage sends NodeStageVolume and returns its error.
func (n *node) stage(ctx context.Context, vol string, c *csi.VolumeCapability, vctx, secrets map[string]string) error {
	_, err := n.csi.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: n.staging(vol),
		VolumeCapability: c, VolumeContext: vctx, Secrets: secrets})
	return err
}

func (n *node) unstage(ctx context.Context, vol string) error {
	_, err := n.csi.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: n.staging(vol)})
	return err
}

// wantStatus checks err's code and that its message says each of says.
func wantStatus(t *testing.T, what string, err error, code codes.Code, says ...string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("%s: %v (%s), want %v", what, st.Code(), st.Message(), code)
	}
	for _, s := range says {
		if !strings.Contains(st.Message(), s) {
			t.Errorf("%s: message %q does not say %q", what, st.Message(), s)
		}
	}
}

// TestTypoInAKey: sorce for source, with SMB secrets and an NTFS
// capability, used to stage a blank disk named after the volume ID. Now it
// is InvalidArgument saying what was meant, and nothing is staged; another
// backend's secret on an inferred backend is refused likewise; an unknown
// key that is no typo is logged at -v=2, by name, once per volume.
func TestTypoInAKey(t *testing.T) {
	n := start(t)
	ctx := testbin.Context(t, rpcTimeout)
	tests := []struct {
		name    string
		vctx    map[string]string
		secrets map[string]string
		says    []string
	}{
		{"sorce", map[string]string{"sorce": "//files/data"}, aliceSecret, []string{`parameter "sorce"`, `did you mean "source"?`}},
		{"lunn", map[string]string{"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2026-01.io.example:storage", "lunn": "0", "sessionCHAPAuth": "true"},
			chapSecret, []string{`parameter "lunn"`, `did you mean "lun"?`}},
		{"diskSerail", map[string]string{"diskSerail": "data-1"}, nil, []string{`parameter "diskSerail"`, `did you mean "diskSerial"?`}},
		{"smb-secret-no-source", nil, aliceSecret, []string{"keys of the smb backend", "without source or iqn this is a disk volume"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := n.stage(ctx, "typo-"+tt.name, ntfsCap, tt.vctx, tt.secrets)
			wantStatus(t, "stage", err, codes.InvalidArgument, tt.says...)
			if strings.Contains(status.Convert(err).Message(), "alice-password") {
				t.Errorf("the message quotes the password")
			}
		})
	}
	if strings.Contains(n.p.Log.String(), `auto-attached disk" logger="sim" driver="sim.csi.wincsi.io" volumeID="typo-`) {
		t.Errorf("a disk was attached for a refused volume:\n%s", n.p.Log.String())
	}
	// A vendor's key that is no typo: staged, and logged once.
	vctx := map[string]string{"source": "//files/data", "storagePolicyName": "gold-never-logged"}
	for range 2 {
		if err := n.stage(ctx, "smb-vendor", cifsCap, vctx, aliceSecret); err != nil {
			t.Fatalf("stage with a vendor's key: %v", err)
		}
	}
	log := n.p.Log.String()
	if c := strings.Count(log, `"Ignoring volume parameters the contract does not know`); c != 1 {
		t.Errorf("%d lines for the vendor's key, want 1:\n%s", c, log)
	}
	if !strings.Contains(log, "storagePolicyName") || strings.Contains(log, "gold-never-logged") {
		t.Errorf("the log does not name the key, or quotes its value:\n%s", log)
	}
	if err := n.unstage(ctx, "smb-vendor"); err != nil {
		t.Fatal(err)
	}
}

// TestSMBWithoutCredentials: a stage of the README's share without
// X_CSI_SECRETS used to try a mapping without credentials and report "the
// server rejected the credentials of the node-stage secret". Now the
// missing keys are named before anything touches the host; the opt-in
// mapWithoutCredentials tries the mapping and says what the server did.
func TestSMBWithoutCredentials(t *testing.T) {
	n := start(t)
	ctx := testbin.Context(t, rpcTimeout)
	err := n.stage(ctx, "smb-nosecret", cifsCap, smbContext, nil)
	wantStatus(t, "stage without a secret", err, codes.InvalidArgument, `parameter "username"`, "neither username nor password", "mapWithoutCredentials")
	if u := n.p.HostUsage(t); u.Calls["smb.Map"] != 0 {
		t.Errorf("a mapping was tried: %d calls of smb.Map", u.Calls["smb.Map"])
	}
	optIn := map[string]string{"source": "//files/data", "mapWithoutCredentials": "true"}
	err = n.stage(ctx, "smb-nosecret", cifsCap, optIn, nil)
	wantStatus(t, "stage without credentials, opted in", err, codes.Unauthenticated, "without credentials", "give the volume a node-stage secret")
	if u := n.p.HostUsage(t); u.Calls["smb.Map"] != 1 {
		t.Errorf("%d calls of smb.Map, want the one the opt-in allows (the check above would prove nothing)", u.Calls["smb.Map"])
	}
	err = n.stage(ctx, "smb-nosecret", cifsCap, optIn, aliceSecret)
	wantStatus(t, "opt-in with a secret", err, codes.InvalidArgument, `parameter "username"`, "mapWithoutCredentials is true")
}
