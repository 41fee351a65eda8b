package cloud

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/test/harness/imds"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// rpcTimeout bounds the RPCs of a test; never reached unless it fails.
const rpcTimeout = 30 * time.Second

// The fakes' instances, and what the upstream node plugins report on
// them (pkg/cloud cites each source).
var (
	awsFake   = imds.AWS{InstanceID: "i-0123456789abcdef0", AvailabilityZone: "eu-west-1a", Region: "eu-west-1"}
	gceFake   = imds.GCE{ProjectID: "my-project", ProjectNumber: "123456789012", Zone: "europe-west1-b", InstanceName: "gke-win-pool-1a2b"}
	azureFake = imds.Azure{Location: "westeurope", Zone: "3", Name: "akswin000000", FaultDomain: "0"}
)

// nodeInfo starts the plugin with args against a fake and returns its
// NodeGetInfo answer, whether it advertises accessibility constraints, and
// its log.
func nodeInfo(t *testing.T, driver string, args ...string) (*csi.NodeGetInfoResponse, bool, *testbin.Plugin) {
	t.Helper()
	p := testbin.Start(t, testbin.Build(t), testbin.Options{Dir: t.TempDir(), DriverName: driver, OmitNodeID: true,
		Args: append([]string{"--v=10"}, args...)})
	ctx := testbin.Context(t, rpcTimeout)
	conn := p.Dial(t)
	ni, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatalf("NodeGetInfo: %v\n%s", err, p.Log.String())
	}
	caps, err := csi.NewIdentityClient(conn).GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	constrained := false
	for _, c := range caps.GetCapabilities() {
		constrained = constrained || c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS
	}
	return ni, constrained, p
}

// TestNodeGetInfoPerCloud: for each cloud, what the plugin started with
// --cloud answers is what that cloud's controller expects.
func TestNodeGetInfoPerCloud(t *testing.T) {
	tests := []struct {
		name     string
		driver   string
		start    func(testing.TB) *imds.Server
		args     []string
		nodeID   string
		segments map[string]string
		imdsV1   bool
	}{
		{
			name: "aws", driver: "ebs.csi.aws.com", start: awsFake.Start, args: []string{"--cloud=aws"},
			nodeID: "i-0123456789abcdef0",
			segments: map[string]string{"topology.ebs.csi.aws.com/zone": "eu-west-1a", "topology.kubernetes.io/zone": "eu-west-1a",
				"kubernetes.io/os": "windows"},
		},
		{
			name: "aws without IMDSv2", driver: "ebs.csi.aws.com", args: []string{"--cloud=aws"}, imdsV1: true,
			start:  imds.AWS{InstanceID: "i-0123456789abcdef0", AvailabilityZone: "eu-west-1a", Tokens: imds.TokensRefused, RefuseWith: 404}.Start,
			nodeID: "i-0123456789abcdef0",
			segments: map[string]string{"topology.ebs.csi.aws.com/zone": "eu-west-1a", "topology.kubernetes.io/zone": "eu-west-1a",
				"kubernetes.io/os": "windows"},
		},
		{
			name: "gce", driver: "pd.csi.storage.gke.io", start: gceFake.Start, args: []string{"--cloud=gce"},
			nodeID:   "projects/my-project/zones/europe-west1-b/instances/gke-win-pool-1a2b",
			segments: map[string]string{"topology.gke.io/zone": "europe-west1-b"},
		},
		{
			// The manifests pass the node name as --node-id; Azure
			// Disk's node ID is the node name.
			name: "azure", driver: "disk.csi.azure.com", start: azureFake.Start, args: []string{"--cloud=azure", "--node-id=akswin000000"},
			nodeID:   "akswin000000",
			segments: map[string]string{"topology.disk.csi.azure.com/zone": "westeurope-3", "topology.kubernetes.io/zone": "westeurope-3"},
		},
		{
			name: "azure without zones", driver: "disk.csi.azure.com", args: []string{"--cloud=azure", "--node-id=akswin000000"},
			start:    imds.Azure{Location: "westeurope", Name: "akswin000000", FaultDomain: "1"}.Start,
			nodeID:   "akswin000000",
			segments: map[string]string{"topology.disk.csi.azure.com/zone": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.start(t)
			ni, constrained, p := nodeInfo(t, tt.driver, append(tt.args, "--cloud-metadata-endpoint="+s.URL)...)
			if got := ni.GetNodeId(); got != tt.nodeID {
				t.Errorf("node ID %q, want %q", got, tt.nodeID)
			}
			if got := ni.GetAccessibleTopology().GetSegments(); !maps.Equal(got, tt.segments) {
				t.Errorf("segments %v, want %v", got, tt.segments)
			}
			if !constrained {
				t.Error("VOLUME_ACCESSIBILITY_CONSTRAINTS not advertised")
			}
			log := p.Log.String()
			for _, tok := range s.Tokens() {
				if strings.Contains(log, tok) {
					t.Fatal("an IMDSv2 session token is in the plugin's log")
				}
			}
			if fellBack := strings.Contains(log, "reading it with IMDSv1"); fellBack != tt.imdsV1 {
				t.Errorf("IMDSv1 fallback logged: %t, want %t", fellBack, tt.imdsV1)
			}
			if t.Failed() {
				t.Log(log)
			}
		})
	}
}

// TestFlagsWin: --node-id and --topology win over the metadata service,
// and the plugin says so.
func TestFlagsWin(t *testing.T) {
	s := awsFake.Start(t)
	ni, _, p := nodeInfo(t, "ebs.csi.aws.com", "--cloud=aws", "--cloud-metadata-endpoint="+s.URL,
		"--node-id=i-0fedcba9876543210", "--topology=topology.ebs.csi.aws.com/zone=eu-west-1c", "--topology=example.com/rack=r7")
	want := map[string]string{"topology.ebs.csi.aws.com/zone": "eu-west-1c", "topology.kubernetes.io/zone": "eu-west-1a",
		"kubernetes.io/os": "windows", "example.com/rack": "r7"}
	if ni.GetNodeId() != "i-0fedcba9876543210" || !maps.Equal(ni.GetAccessibleTopology().GetSegments(), want) {
		t.Fatalf("NodeGetInfo = %v, want node ID i-0fedcba9876543210 and %v", ni, want)
	}
	log := p.Log.String()
	for _, msg := range []string{"--node-id overrides the discovered node ID", "--topology overrides a discovered segment"} {
		if !strings.Contains(log, msg) {
			t.Errorf("the log does not say %q:\n%s", msg, log)
		}
	}
}

// TestStartFails: when the metadata service cannot give the identity, the
// plugin exits with status 1 and one message naming the cloud and the URL,
// before it serves anything.
func TestStartFails(t *testing.T) {
	tests := []struct {
		name  string
		cloud string
		start func(testing.TB) *imds.Server
	}{
		{"aws hangs", "aws", imds.AWS{Faults: imds.Faults{Hang: true}}.Start},
		{"aws answers 500", "aws", imds.AWS{Faults: imds.Faults{Status: 500}}.Start},
		{"gce hangs", "gce", imds.GCE{Faults: imds.Faults{Hang: true}}.Start},
		{"gce answers 500", "gce", imds.GCE{Faults: imds.Faults{Status: 500}}.Start},
		{"azure hangs", "azure", imds.Azure{Faults: imds.Faults{Hang: true}}.Start},
		{"azure answers 500", "azure", imds.Azure{Faults: imds.Faults{Status: 500}}.Start},
		{"gce absent", "gce", imds.Absent},
	}
	bin := testbin.Build(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.start(t)
			o := testbin.Options{Dir: t.TempDir(), OmitNodeID: true,
				Args: []string{"--cloud=" + tt.cloud, "--cloud-metadata-endpoint=" + s.URL, "--cloud-metadata-timeout=1s"}}
			// The context only stops a plugin that would never exit.
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			out, err := testbin.Command(ctx, bin, o).CombinedOutput()
			var ee *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v (context: %v), want status 1\n%s", err, ctx.Err(), out)
			}
			var failures []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "Could not settle the node's identity") {
					failures = append(failures, line)
				}
			}
			if len(failures) != 1 || !strings.Contains(failures[0], "--cloud="+tt.cloud) || !strings.Contains(failures[0], s.URL) {
				t.Fatalf("want one message naming --cloud=%s and %s, got %q\n%s", tt.cloud, s.URL, failures, out)
			}
			if _, err := os.Stat(o.Dir + "/csi.sock"); !os.IsNotExist(err) {
				t.Fatalf("the socket exists (%v): the plugin served before it knew its identity", err)
			}
		})
	}
}
