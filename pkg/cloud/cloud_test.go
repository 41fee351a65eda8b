package cloud

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/test/harness/imds"
)

// generous bounds a discovery that must succeed: never reached unless the
// code under test is broken.
const generous = 30 * time.Second

// short bounds a discovery that must fail because the service never
// answers: whenever the deadline comes, the failure is the same. A
// discovery whose answers are errors is not bounded by time at all (on a
// loaded machine the first answer could come after any deadline): it is
// cancelled once its first request failed (untilRetry). What is asserted is
// the kind of failure, never how long it took.
const short = 500 * time.Millisecond

// untilRetry returns a context that is cancelled once Resolve logs that a
// request failed and will be sent again.
func untilRetry(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &onRetry{cancel: cancel}
	l := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(w), textlogger.Verbosity(10)))
	return klog.NewContext(ctx, l)
}

// onRetry calls cancel when a retry is logged.
type onRetry struct {
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (w *onRetry) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(string(p), "Metadata request failed; retrying") {
		w.cancel()
	}
	return len(p), nil
}

// logTo returns a context whose logger writes everything, to buf.
func logTo(buf *strings.Builder) context.Context {
	l := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(buf), textlogger.Verbosity(10)))
	return klog.NewContext(context.Background(), l)
}

var (
	awsFake   = imds.AWS{InstanceID: "i-0123456789abcdef0", AvailabilityZone: "eu-west-1a", Region: "eu-west-1"}
	gceFake   = imds.GCE{ProjectID: "my-project", ProjectNumber: "123456789012", Zone: "europe-west1-b", InstanceName: "win-node-1"}
	azureFake = imds.Azure{Location: "WestEurope", Zone: "2", Name: "aks-win-vm", FaultDomain: "0"}
)

// The identities the upstream node plugins report for the fakes above.
var (
	awsWant = Identity{NodeID: "i-0123456789abcdef0", Topology: map[string]string{
		"topology.ebs.csi.aws.com/zone": "eu-west-1a", "topology.kubernetes.io/zone": "eu-west-1a", "kubernetes.io/os": "windows",
	}}
	gceWant = Identity{NodeID: "projects/my-project/zones/europe-west1-b/instances/win-node-1", Topology: map[string]string{
		"topology.gke.io/zone": "europe-west1-b",
	}}
	azureWant = Identity{NodeID: "aks-win-node", Topology: map[string]string{
		"topology.disk.csi.azure.com/zone": "westeurope-2", "topology.kubernetes.io/zone": "westeurope-2",
	}}
)

func driverOf(p Provider) string {
	return map[Provider]string{AWS: "ebs.csi.aws.com", GCE: "pd.csi.storage.gke.io", Azure: "disk.csi.azure.com"}[p]
}

func TestResolve(t *testing.T) {
	withAWS := func(f func(*imds.AWS)) imds.AWS { a := awsFake; f(&a); return a }
	withAzure := func(f func(*imds.Azure)) imds.Azure { a := azureFake; f(&a); return a }
	withGCE := func(f imds.Faults) imds.GCE { g := gceFake; g.Faults = f; return g }
	outpost := Identity{NodeID: awsWant.NodeID, Topology: maps.Clone(awsWant.Topology)}
	maps.Copy(outpost.Topology, map[string]string{
		"topology.ebs.csi.aws.com/partition": "aws", "topology.ebs.csi.aws.com/region": "us-west-2",
		"topology.ebs.csi.aws.com/account-id": "111122223333", "topology.ebs.csi.aws.com/outpost-id": "op-0123456789abcdef0",
	})
	tests := []struct {
		name     string
		provider Provider
		start    func(testing.TB) *imds.Server
		want     Identity
		v1       bool // AWS read without a token
	}{
		{name: "aws, IMDSv2 required", provider: AWS, start: awsFake.Start, want: awsWant},
		{name: "aws, IMDSv2 optional", provider: AWS, start: withAWS(func(a *imds.AWS) { a.Tokens = imds.TokensOptional }).Start, want: awsWant},
		{name: "aws, token PUT refused with 403", provider: AWS, start: withAWS(func(a *imds.AWS) { a.Tokens = imds.TokensRefused }).Start, want: awsWant, v1: true},
		{name: "aws, token PUT refused with 404", provider: AWS, start: withAWS(func(a *imds.AWS) { a.Tokens, a.RefuseWith = imds.TokensRefused, 404 }).Start, want: awsWant, v1: true},
		{name: "aws, token PUT refused with 405", provider: AWS, start: withAWS(func(a *imds.AWS) { a.Tokens, a.RefuseWith = imds.TokensRefused, 405 }).Start, want: awsWant, v1: true},
		{name: "aws, on an Outpost", provider: AWS, want: outpost,
			start: withAWS(func(a *imds.AWS) {
				a.OutpostARN = "arn:aws:outposts:us-west-2:111122223333:outpost/op-0123456789abcdef0"
			}).Start},
		{name: "aws, a bad outpost ARN is ignored", provider: AWS, want: awsWant,
			start: withAWS(func(a *imds.AWS) { a.OutpostARN = "not an arn" }).Start},
		{name: "aws, two 500s then answers", provider: AWS, want: awsWant,
			start: withAWS(func(a *imds.AWS) { a.Faults = imds.Faults{Status: 500, Times: 2} }).Start},
		{name: "aws, a 401 for the token's first GET", provider: AWS, want: awsWant,
			start: withAWS(func(a *imds.AWS) { a.Faults = imds.Faults{Status: 401, After: 1, Times: 1} }).Start},
		{name: "gce", provider: GCE, start: gceFake.Start, want: gceWant},
		{name: "gce, a 503 then answers", provider: GCE, want: gceWant, start: withGCE(imds.Faults{Status: 503, Times: 1}).Start},
		{name: "gce, rate-limited once", provider: GCE, want: gceWant, start: withGCE(imds.Faults{Status: 429, Times: 1}).Start},
		{name: "azure, zonal", provider: Azure, start: azureFake.Start, want: azureWant},
		{name: "azure, no zone", provider: Azure, want: Identity{NodeID: "aks-win-node", Topology: map[string]string{"topology.disk.csi.azure.com/zone": ""}},
			start: withAzure(func(a *imds.Azure) { a.Zone = "" }).Start},
		{name: "azure, 410 while IMDS starts", provider: Azure, want: azureWant,
			start: withAzure(func(a *imds.Azure) { a.Faults = imds.Faults{Status: http.StatusGone, Times: 2} }).Start},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.start(t)
			var log strings.Builder
			got, err := Resolve(logTo(&log), Config{Provider: tt.provider, Endpoint: s.URL, Timeout: generous,
				DriverName: driverOf(tt.provider), NodeName: "aks-win-node"})
			if err != nil {
				t.Fatalf("Resolve: %v\n%s", err, log.String())
			}
			if got.NodeID != tt.want.NodeID || !maps.Equal(got.Topology, tt.want.Topology) {
				t.Fatalf("Resolve = %+v, want %+v", got, tt.want)
			}
			checkRequests(t, tt.provider, s, tt.v1)
			for _, tok := range s.Tokens() {
				if strings.Contains(log.String(), tok) {
					t.Fatalf("the session token is in the log:\n%s", log.String())
				}
			}
			if fellBack := strings.Contains(log.String(), "reading it with IMDSv1"); fellBack != tt.v1 {
				t.Errorf("IMDSv1 fallback logged: %t, want %t\n%s", fellBack, tt.v1, log.String())
			}
		})
	}
}

// checkRequests asserts that every request carried what the protocol
// needs: the AWS session token (or none after a refused PUT), GCE's and
// Azure's headers and Azure's pinned api-version.
func checkRequests(t *testing.T, p Provider, s *imds.Server, v1 bool) {
	t.Helper()
	tokens := map[string]bool{}
	for _, tok := range s.Tokens() {
		tokens[tok] = true
	}
	for _, r := range s.Requests() {
		switch p {
		case AWS:
			if r.Method == http.MethodPut {
				if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") != awsTokenTTL {
					t.Errorf("%s %s without the TTL header", r.Method, r.Path)
				}
				continue
			}
			if tok := r.Header.Get("X-aws-ec2-metadata-token"); tokens[tok] == v1 {
				t.Errorf("GET %s: token %t, want %t", r.Path, tok != "", !v1)
			}
		case GCE:
			if r.Header.Get("Metadata-Flavor") != "Google" {
				t.Errorf("GET %s without Metadata-Flavor: Google", r.Path)
			}
		case Azure:
			if r.Header.Get("Metadata") != "true" || !strings.Contains(r.Path, "api-version="+azureAPIVersion) {
				t.Errorf("GET %s: Metadata %q", r.Path, r.Header.Get("Metadata"))
			}
		}
	}
}

// TestResolveFails covers a service that cannot give the identity: the
// error names the cloud and the URL, and final answers are not retried.
func TestResolveFails(t *testing.T) {
	tests := []struct {
		name     string
		provider Provider
		start    func(testing.TB) *imds.Server
		timeout  time.Duration // 0: generous, the discovery cancelled at its first retry
		noAnswer bool          // the error says the service did not answer
		status   int           // the final HTTP status, or 0
		once     bool          // a final answer: exactly one request
	}{
		{name: "aws hangs", provider: AWS, timeout: short, noAnswer: true,
			start: imds.AWS{InstanceID: "i-1", AvailabilityZone: "z", Faults: imds.Faults{Hang: true}}.Start},
		{name: "aws answers 500", provider: AWS, status: 500,
			start: imds.AWS{InstanceID: "i-1", AvailabilityZone: "z", Faults: imds.Faults{Status: 500}}.Start},
		{name: "aws refuses the token PUT with 400", provider: AWS, timeout: generous, status: 400, once: true,
			start: imds.AWS{InstanceID: "i-1", AvailabilityZone: "z", Tokens: imds.TokensRefused, RefuseWith: 400}.Start},
		{name: "aws without a zone", provider: AWS, timeout: generous,
			start: imds.AWS{InstanceID: "i-1"}.Start},
		{name: "gce hangs", provider: GCE, timeout: short, noAnswer: true,
			start: imds.GCE{Faults: imds.Faults{Hang: true}}.Start},
		{name: "gce answers 500", provider: GCE, status: 500,
			start: imds.GCE{Faults: imds.Faults{Status: 500}}.Start},
		{name: "azure hangs", provider: Azure, timeout: short, noAnswer: true,
			start: imds.Azure{Faults: imds.Faults{Hang: true}}.Start},
		{name: "azure answers 500", provider: Azure, status: 500,
			start: imds.Azure{Faults: imds.Faults{Status: 500}}.Start},
		{name: "azure zone not a number", provider: Azure, timeout: generous,
			start: imds.Azure{Location: "westeurope", Zone: "two"}.Start},
		{name: "gce against AWS's service", provider: GCE, timeout: generous, status: 404, once: true,
			start: imds.AWS{InstanceID: "i-1", AvailabilityZone: "z", Tokens: imds.TokensOptional}.Start},
		{name: "azure against GCE's service", provider: Azure, timeout: generous, status: 403, once: true,
			start: imds.GCE{}.Start},
		{name: "nobody listens", provider: GCE, start: imds.Absent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.start(t)
			ctx, timeout := context.Background(), tt.timeout
			if timeout == 0 {
				ctx, timeout = untilRetry(t), generous
			}
			_, err := Resolve(ctx, Config{Provider: tt.provider, Endpoint: s.URL, Timeout: timeout,
				DriverName: driverOf(tt.provider), NodeName: "n"})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Resolve: %v, want a *cloud.Error", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "--cloud="+string(tt.provider)) || !strings.Contains(msg, s.URL) {
				t.Errorf("%q names neither the cloud nor the URL", msg)
			}
			if got := errors.Is(err, errNoAnswer); got != tt.noAnswer {
				t.Errorf("no answer: %t, want %t: %v", got, tt.noAnswer, err)
			}
			var se *statusError
			if got := 0; errors.As(err, &se) {
				got = se.code
				if got != tt.status {
					t.Errorf("status %d, want %d: %v", got, tt.status, err)
				}
			} else if tt.status != 0 {
				t.Errorf("no HTTP status, want %d: %v", tt.status, err)
			}
			if tt.once && (e.Attempts != 1 || len(s.Requests()) != 1) {
				t.Errorf("a final answer was asked %d times (%d requests)", e.Attempts, len(s.Requests()))
			}
		})
	}
}

// TestResolveCanceled: a start-up interrupted (SIGTERM) ends at once.
func TestResolveCanceled(t *testing.T) {
	s := imds.GCE{Faults: imds.Faults{Hang: true}}.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Resolve(ctx, Config{Provider: GCE, Endpoint: s.URL, Timeout: generous}); !errors.Is(err, errNoAnswer) {
		t.Fatalf("Resolve = %v, want no answer", err)
	}
}

// TestFlagsWin: --node-id and --topology win over what was discovered,
// and each override is logged.
func TestFlagsWin(t *testing.T) {
	s := awsFake.Start(t)
	var log strings.Builder
	got, err := Resolve(logTo(&log), Config{Provider: AWS, Endpoint: s.URL + "/", Timeout: generous, DriverName: "ebs.csi.aws.com",
		NodeID: "node-from-flag", Topology: map[string]string{"topology.ebs.csi.aws.com/zone": "zone-from-flag", "example.com/rack": "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"topology.ebs.csi.aws.com/zone": "zone-from-flag", "topology.kubernetes.io/zone": "eu-west-1a",
		"kubernetes.io/os": "windows", "example.com/rack": "r1"}
	if got.NodeID != "node-from-flag" || !maps.Equal(got.Topology, want) {
		t.Fatalf("Resolve = %+v, want node-from-flag and %v", got, want)
	}
	for _, line := range []string{`"--node-id overrides the discovered node ID" cloud="aws"`, `"--topology overrides a discovered segment" cloud="aws"`} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log lacks %s:\n%s", line, log.String())
		}
	}
	if strings.Contains(log.String(), "example.com/rack\" value") {
		t.Errorf("a segment that overrides nothing is logged as an override:\n%s", log.String())
	}
}

func TestResolveUnknownProvider(t *testing.T) {
	if _, err := Resolve(context.Background(), Config{Provider: None, Timeout: generous}); err == nil {
		t.Fatal("Resolve with --cloud=none succeeded")
	}
}

// The instance's disks as the gce-pd preset reads them on NVMe machine
// types. The identifier is larger than a float64 holds exactly: it must
// come through as the uint64 the metadata server sent.
func TestGCEMetadataDisks(t *testing.T) {
	fake := gceFake
	fake.Disks = `[{"deviceName":"persistent-disk-0","index":0,"interface":"NVME","mode":"READ_WRITE","nvmeNamespaceIdentifier":1210507561596603904,"type":"PERSISTENT"},
 {"deviceName":"pvc-4a5b6c7d","index":1,"interface":"NVME","mode":"READ_WRITE","nvmeNamespaceIdentifier":1210507561596603963,"type":"PERSISTENT"},
 {"deviceName":"data-scsi","index":2,"interface":"SCSI","mode":"READ_WRITE","type":"PERSISTENT"}]`
	s := fake.Start(t)
	disks, err := NewGCEMetadata(s.URL, 0).Disks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(disks) != 3 || disks[1].DeviceName != "pvc-4a5b6c7d" || !disks[1].NVMe() || disks[1].NVMeNamespaceID == nil ||
		*disks[1].NVMeNamespaceID != 1210507561596603963 || disks[2].NVMe() || disks[2].NVMeNamespaceID != nil {
		t.Fatalf("disks %+v", disks)
	}
	if r := s.Requests(); len(r) != 1 || r[0].Path != "/computeMetadata/v1/instance/disks/?recursive=true" || r[0].Header.Get("Metadata-Flavor") != "Google" {
		t.Fatalf("requests %+v", r)
	}

	_, err = NewGCEMetadata(imds.GCE{Faults: imds.Faults{Status: 403}}.Start(t).URL, 0).Disks(context.Background())
	var se *statusError
	if !errors.As(err, &se) || se.code != http.StatusForbidden {
		t.Fatalf("err = %v, want the 403", err)
	}
	bad := gceFake
	bad.Disks = `{"deviceName":`
	if _, err := NewGCEMetadata(bad.Start(t).URL, 0).Disks(context.Background()); err == nil {
		t.Fatal("a damaged answer was read")
	}
}
