package mistakes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/sim"
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
	return startIn(t, t.TempDir(), args...)
}

// startIn is start on the node under base (its sim/ may hold faults.json).
func startIn(t *testing.T, base string, args ...string) *node {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := testbin.Build(t)
	p := testbin.Start(t, bin, testbin.Options{Dir: base, HTTP: true,
		Args: append([]string{"--sim-config=" + filepath.Join(root, "docs", "sim-config.yaml"), "--v=2"}, args...)})
	return &node{t: t, p: p, csi: csi.NewNodeClient(p.Dial(t))}
}

// hasDisk reports whether the simulated host has a disk whose serial is
// serial, as the sim's stand-in for a controller attaches one for a disk
// volume named after its volume ID.
func (n *node) hasDisk(serial string) bool {
	n.t.Helper()
	s, err := sim.OpenReadOnly(n.p.SimDir, klog.Background())
	if err != nil {
		n.t.Fatal(err)
	}
	defer s.Close()
	return slices.ContainsFunc(s.Snapshot().Disks, func(d sim.DiskState) bool { return d.Serial == serial })
}

// withFaults returns a base directory whose simulated host starts with the
// fault rules.
func withFaults(t *testing.T, rules ...sim.Rule) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "sim")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteFaultsFile(dir, rules...); err != nil {
		t.Fatal(err)
	}
	return base
}

// waitLog waits until the plugin's log holds s, or the plugin exits.
// go test's -timeout bounds a wait that never ends: no wall-clock margin.
func (n *node) waitLog(s string) {
	n.t.Helper()
	for !strings.Contains(n.p.Log.String(), s) {
		select {
		case <-n.p.Done():
			n.t.Fatalf("the plugin exited before logging %q:\n%s", s, n.p.Log.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// diagnose runs csi-windows-node diagnose -o json on the node.
func (n *node) diagnose() *inventory.Report {
	n.t.Helper()
	ctx := testbin.Context(n.t, rpcTimeout)
	cmd := exec.CommandContext(ctx, testbin.Build(n.t), "diagnose", "--host=sim", "--sim-dir="+n.p.SimDir,
		"--kubelet-dir="+n.p.Kubelet, "--driver-name=sim.csi.wincsi.io", "-o", "json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		n.t.Fatalf("diagnose: %v\n%s", err, errOut.String())
	}
	var rep inventory.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		n.t.Fatalf("diagnose -o json: %v\n%s", err, out.String())
	}
	return &rep
}

// settled waits until diagnose shows no volume and no mapping: a cancelled
// stage undid its work and dropped its intent. It returns the last report
// if that never happens before the test's deadline.
func (n *node) settled() {
	n.t.Helper()
	for {
		rep := n.diagnose()
		if len(rep.Volumes) == 0 && !slices.ContainsFunc(rep.Resources, func(r inventory.Resource) bool { return r.Kind == inventory.KindSMBMapping }) {
			return
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-n.t.Context().Done():
			n.t.Fatalf("the cancelled stage is still recorded or mapped: %+v", rep)
		}
	}
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
	for _, tt := range tests {
		if n.hasDisk("typo-" + tt.name) {
			t.Errorf("a disk was attached for the refused volume typo-%s", tt.name)
		}
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

// slowLink makes the stage's link of the staging path take an hour: the
// share is mapped, then the stage waits (the simulated delay honours the
// call's context, as a host call does).
var slowLink = sim.Rule{Op: sim.OpFilesSymlink, Nth: 1, Delay: time.Hour}

// stageInFlight starts the README's SMB stage of smb-1 and returns once the
// stage waits in its link, with the channel of its result.
func (n *node) stageInFlight(ctx context.Context) <-chan error {
	n.t.Helper()
	done := make(chan error, 1)
	go func() { done <- n.stage(ctx, "smb-1", cifsCap, smbContext, aliceSecret) }()
	n.waitLog(`"injected delay" logger="sim" driver="sim.csi.wincsi.io" method="files.Symlink"`)
	return done
}

// TestCancelledStage: a stage its caller gives up on (csc's or kubelet's
// deadline) used to clean up with the cancelled context, so its intent
// record stayed (diagnose: StageIncomplete) until someone unstaged by
// hand. Now it undoes the mapping it made and drops the record.
func TestCancelledStage(t *testing.T) {
	n := startIn(t, withFaults(t, slowLink))
	ctx, cancel := context.WithCancel(context.Background())
	done := n.stageInFlight(ctx)
	cancel()
	wantStatus(t, "cancelled stage", <-done, codes.Canceled)
	n.settled()
}

// TestShutdownCancelsAStage: at SIGTERM the plugin names the RPCs it waits
// for; when the grace runs out it cancels them, and the cancelled stage
// undoes its work before the plugin exits.
func TestShutdownCancelsAStage(t *testing.T) {
	n := startIn(t, withFaults(t, slowLink), "--shutdown-grace=1s")
	done := n.stageInFlight(context.Background())
	if err := n.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	n.waitLog(`"Shutting down; waiting for in-flight RPCs`)
	n.waitLog(`"NodeStageVolume smb-1 (`)
	<-n.p.Done()
	if err := n.p.ExitErr(); err != nil {
		t.Fatalf("plugin exit: %v\n%s", err, n.p.Log.String())
	}
	if err := <-done; status.Code(err) == codes.OK {
		t.Fatal("the stage succeeded; it was to be cancelled")
	}
	if !strings.Contains(n.p.Log.String(), `"Shutdown grace over; cancelled the RPCs still running`) {
		t.Errorf("the log does not say the grace ran out:\n%s", n.p.Log.String())
	}
	n.settled()
}

// TestSecondSignal: a second SIGTERM during the shutdown grace ends the
// plugin at once, after sealing the journal, and says so with the RPCs it
// abandons; the journal stays readable and records the stage cut short,
// for its retry or unstage to finish.
func TestSecondSignal(t *testing.T) {
	n := startIn(t, withFaults(t, slowLink), "--shutdown-grace=1h")
	done := n.stageInFlight(context.Background())
	for range 2 {
		if err := n.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		n.waitLog(`"Shutting down; waiting for in-flight RPCs`)
	}
	<-n.p.Done() // the grace is an hour: only the second signal ends it
	<-done
	log := n.p.Log.String()
	var ee *exec.ExitError
	if err := n.p.ExitErr(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want status 1\n%s", err, log)
	}
	if !strings.Contains(log, `"Second signal: exiting now, without waiting for the RPCs in flight`) || !strings.Contains(log, `NodeStageVolume smb-1 (`) {
		t.Errorf("the log does not say why the plugin ended, or which RPC it abandoned:\n%s", log)
	}
	// The stage was cut between removing kubelet's empty staging
	// directory and linking it: diagnose finds the record (state gone,
	// the path missing) for kubelet's retry, which makes the directory
	// again, to finish.
	rep := n.diagnose()
	if len(rep.Volumes) != 1 || rep.Volumes[0].VolumeID != "smb-1" || rep.Volumes[0].State == inventory.StateHealthy {
		t.Errorf("diagnose after the exit: %+v; want smb-1 recorded, not healthy", rep.Volumes)
	}
}

// interrupted runs the README's SMB stage on a node under base, cut by a
// second SIGTERM after it made the share's mapping and removed kubelet's
// empty staging directory, before it linked the staging path: the host
// and the journal as a pod's forced termination leaves them. The faults
// are gone for the node's next start.
func interrupted(t *testing.T) (base string) {
	t.Helper()
	base = withFaults(t, slowLink)
	n := startIn(t, base, "--shutdown-grace=1h")
	done := n.stageInFlight(context.Background())
	for range 2 {
		if err := n.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		n.waitLog(`"Shutting down; waiting for in-flight RPCs`)
	}
	<-n.p.Done()
	<-done
	if err := sim.WriteFaultsFile(n.p.SimDir); err != nil {
		t.Fatal(err)
	}
	rep := n.diagnose()
	if !slices.ContainsFunc(rep.Resources, func(r inventory.Resource) bool { return r.Kind == inventory.KindSMBMapping }) {
		t.Fatalf("the interrupted stage left no mapping; the test no longer cuts it where it means to: %+v", rep)
	}
	return base
}

// TestSecondSignalRetried: after a second signal cut a stage short, the
// plugin's next start finishes it when kubelet retries the stage (kubelet
// makes the staging directory again): the volume is staged, healthy, on
// the mapping the cut stage made, and its unstage leaves nothing behind.
func TestSecondSignalRetried(t *testing.T) {
	n := startIn(t, interrupted(t))
	ctx := testbin.Context(t, rpcTimeout)
	if err := n.stage(ctx, "smb-1", cifsCap, smbContext, aliceSecret); err != nil {
		t.Fatalf("kubelet's retry of the interrupted stage: %v\n%s", err, n.p.Log.String())
	}
	rep := n.diagnose()
	if len(rep.Volumes) != 1 || rep.Volumes[0].State != inventory.StateHealthy {
		t.Fatalf("after the retry: %+v, want smb-1 healthy", rep.Volumes)
	}
	if err := n.unstage(ctx, "smb-1"); err != nil {
		t.Fatal(err)
	}
	n.settled()
}

// TestSecondSignalSwept: after a second signal cut a stage short and its
// pod went (kubelet never retries), the orphan sweep of the plugin's next
// start finishes it: the record whose staging path is gone and the
// mapping only it used are removed.
func TestSecondSignalSwept(t *testing.T) {
	n := startIn(t, interrupted(t), "--orphan-sweep=clean")
	n.settled()
}

// TestMissingLUN: a stage of a LUN the README's target does not have used
// to wait until csc's deadline (59 s) without a word. Now, after one
// rescan, the target is asked for its LUNs and the stage fails at once
// with NotFound naming them.
func TestMissingLUN(t *testing.T) {
	n := start(t)
	ctx := testbin.Context(t, rpcTimeout)
	err := n.stage(ctx, "iscsi-5", ntfsCap, iscsiContext("5"), chapSecret)
	wantStatus(t, "stage of LUN 5", err, codes.NotFound,
		"LUN 5 of target iqn.2026-01.io.example:storage does not exist", "the target reports LUNs 0, 1 to this node")
	u := n.p.HostUsage(t)
	if u.Calls["disks.Rescan"] != 1 || u.Calls["iscsi.ReportLUNs"] != 1 {
		t.Errorf("%d rescans and %d REPORT LUNS, want one of each: the stage waited", u.Calls["disks.Rescan"], u.Calls["iscsi.ReportLUNs"])
	}
	rep := n.diagnose()
	if len(rep.Volumes) != 0 || slices.ContainsFunc(rep.Resources, func(r inventory.Resource) bool { return r.Kind == inventory.KindISCSISession }) {
		t.Errorf("the failed stage left %+v and %+v", rep.Volumes, rep.Resources)
	}
	// The simulated host's stand-in for a controller attaches disks for
	// disk volumes only: an iSCSI volume's disk is its LUN's, never a
	// blank disk named after the volume.
	if err := n.stage(ctx, "iscsi-0", ntfsCap, iscsiContext("0"), chapSecret); err != nil {
		t.Fatal(err)
	}
	for _, vol := range []string{"iscsi-5", "iscsi-0"} {
		if n.hasDisk(vol) {
			t.Errorf("a disk named after the iSCSI volume %s was attached", vol)
		}
	}
	if err := n.stage(ctx, "disk-1", ntfsCap, nil, nil); err != nil || !n.hasDisk("disk-1") {
		t.Errorf("a disk volume got no disk named after it (%v): the checks above would prove nothing", err)
	}
}

// recordedMACs returns the MACs the plugin's journal records (its entries
// and notes under the simulated host's state directory): what must never
// reach a log line, a metric or diagnose.
func (n *node) recordedMACs() []string {
	n.t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(n.p.SimDir, "journal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var v struct {
			Key   string            `json:"key"`
			Value string            `json:"value"`
			Attrs map[string]string `json:"attrs"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		for _, a := range []string{"secretMAC", "chapSecretMAC"} {
			if m := v.Attrs[a]; m != "" {
				out = append(out, m)
			}
		}
		if strings.HasPrefix(v.Key, "smb-mapping-secret:") {
			out = append(out, v.Value)
		}
		return nil
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return out
}

// TestAnotherUsersSecret: a second volume of the README's share (or
// target) with a secret of another user used to stage through the first
// volume's mapping (or session): a tenant's volume riding another
// tenant's credentials. Now it is FailedPrecondition naming the share or
// target, the user it is connected as, the volume that uses it and what to
// do; the first volume is untouched.
func TestAnotherUsersSecret(t *testing.T) {
	n := start(t)
	ctx := testbin.Context(t, rpcTimeout)
	if err := n.stage(ctx, "smb-1", cifsCap, smbContext, aliceSecret); err != nil {
		t.Fatal(err)
	}
	err := n.stage(ctx, "smb-2", cifsCap, smbContext, map[string]string{"username": "bob", "password": "bob-password"})
	wantStatus(t, "stage as bob", err, codes.FailedPrecondition,
		`share \\files\data is mapped as user alice`, `"smb-1"`, "names user bob", "give this volume the Secret of user alice")
	if err := n.stage(ctx, "iscsi-1", ntfsCap, iscsiContext("0"), chapSecret); err != nil {
		t.Fatal(err)
	}
	err = n.stage(ctx, "iscsi-2", ntfsCap, iscsiContext("1"),
		map[string]string{"node.session.auth.username": "node2", "node.session.auth.password": "node2-secret12"})
	wantStatus(t, "stage as CHAP user node2", err, codes.FailedPrecondition,
		"target iqn.2026-01.io.example:storage is logged in as CHAP user node1", `"iscsi-1"`, "names CHAP user node2")
	rep := n.diagnose()
	if len(rep.Volumes) != 2 {
		t.Errorf("diagnose after the refusals: %+v; want smb-1 and iscsi-1 only", rep.Volumes)
	}
	for _, v := range rep.Volumes {
		if v.State != inventory.StateHealthy {
			t.Errorf("%s is %s after the refusals: %+v", v.VolumeID, v.State, v.Problems)
		}
	}
	users := map[inventory.Kind]string{}
	for _, r := range rep.Resources {
		users[r.Kind] = r.User
	}
	if users[inventory.KindSMBMapping] != "alice" || users[inventory.KindISCSISession] != "node1" {
		t.Errorf("diagnose shows the users %v, want the mapping's alice and the session's node1", users)
	}
}

// TestSameUserAnotherSecret: a volume of the share's (or target's) user
// with another password (or CHAP secret) while another volume uses the
// mapping (or session) is a rotation or a mistake the node cannot tell
// apart without disturbing that volume: it stages, and the drift is
// reported in one -v=2 line, by diagnose and by
// csi_windows_node_credential_drift, none of which shows the recorded
// secrets' MACs.
func TestSameUserAnotherSecret(t *testing.T) {
	n := start(t)
	ctx := testbin.Context(t, rpcTimeout)
	if err := n.stage(ctx, "smb-1", cifsCap, smbContext, aliceSecret); err != nil {
		t.Fatal(err)
	}
	if err := n.stage(ctx, "smb-2", cifsCap, smbContext, map[string]string{"username": "alice", "password": "alice-new-password"}); err != nil {
		t.Fatalf("stage with another password of alice: %v", err)
	}
	if err := n.stage(ctx, "iscsi-1", ntfsCap, iscsiContext("0"), chapSecret); err != nil {
		t.Fatal(err)
	}
	if err := n.stage(ctx, "iscsi-2", ntfsCap, iscsiContext("1"),
		map[string]string{"node.session.auth.username": "node1", "node.session.auth.password": "node1-newsec12"}); err != nil {
		t.Fatalf("stage with another CHAP secret of node1: %v", err)
	}
	log := n.p.Log.String()
	for _, line := range []string{`"Keeping the global mapping of the share although it was made with another password of user alice`,
		`"Keeping the target's sessions although they were logged in with another CHAP secret of the same user`} {
		if c := strings.Count(log, line); c != 1 {
			t.Errorf("%d lines %s, want 1", c, line)
		}
	}
	metrics := n.p.Get(t, "/metrics")
	for _, want := range []string{`csi_windows_node_credential_drift{backend="smb"} 1`, `csi_windows_node_credential_drift{backend="iscsi"} 1`,
		`csi_windows_node_credential_mismatch{backend="smb"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	rep := n.diagnose()
	drifted := map[string]bool{}
	for _, v := range rep.Volumes {
		for _, p := range v.Problems {
			if p.Reason == inventory.ReasonCredentialDrift {
				drifted[v.VolumeID] = true
			}
		}
	}
	if len(drifted) != 2 || !drifted["smb-2"] || !drifted["iscsi-2"] {
		t.Errorf("diagnose reports drift for %v, want smb-2 and iscsi-2", drifted)
	}
	out, _ := json.Marshal(rep)
	macs := n.recordedMACs()
	if len(macs) < 4 {
		t.Fatalf("%d MACs recorded, want the volumes' and the mapping's: the check below would prove little", len(macs))
	}
	for _, m := range macs {
		for what, text := range map[string]string{"the log": log, "/metrics": metrics, "diagnose": string(out)} {
			if strings.Contains(text, m) {
				t.Errorf("%s shows a recorded MAC", what)
			}
		}
	}
}
