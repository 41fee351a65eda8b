package config

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func parse(t *testing.T, goos string, args ...string) (*Options, error) {
	t.Helper()
	return parseEnv(t, nil, goos, args...)
}

// parseEnv is parse in an environment of env only, whatever the test
// process has (a developer may have exported CSI_ENDPOINT for csc).
func parseEnv(t *testing.T, env map[string]string, goos string, args ...string) (*Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := Register(fs, goos)
	o.lookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Finish(fs, goos, "node-a")
}

// TestEndpointFromEnvironment: CSI_ENDPOINT, which a CSI plugin supervisor
// sets (CSI spec v1.13.0, "CSI_ENDPOINT"), is the endpoint unless
// --endpoint is given.
func TestEndpointFromEnvironment(t *testing.T) {
	const derived = "unix:///var/lib/kubelet/plugins/a.b/csi.sock"
	base := []string{"--driver-name=a.b", "--host=sim", "--sim-dir=/s"}
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		want   string
		source string
	}{
		{"no variable", nil, nil, derived, "--endpoint"},
		{"variable", map[string]string{"CSI_ENDPOINT": "unix:///run/csi/csi.sock"}, nil, "unix:///run/csi/csi.sock", "CSI_ENDPOINT"},
		{"empty variable", map[string]string{"CSI_ENDPOINT": ""}, nil, derived, "--endpoint"},
		{"flag wins", map[string]string{"CSI_ENDPOINT": "unix:///run/csi/csi.sock"}, []string{"--endpoint=unix:///flag/csi.sock"}, "unix:///flag/csi.sock", "--endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseEnv(t, tt.env, "linux", append(slices.Clone(base), tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if o.Endpoint != tt.want || o.EndpointSource() != tt.source {
				t.Errorf("Endpoint = %q from %s, want %q from %s", o.Endpoint, o.EndpointSource(), tt.want, tt.source)
			}
		})
	}
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name     string
		goos     string
		args     []string
		wantErr  string // substring naming the flag; "" for success
		endpoint string
		stateDir string
		volIDDsk string
		// wantNodeID is the node ID Finish settles on; "" means the host name.
		wantNodeID string
	}{
		{name: "sim minimal", goos: "linux", args: []string{"--driver-name=disk.csi.example.com", "--host=sim", "--sim-dir=/tmp/s"},
			endpoint: "unix:///var/lib/kubelet/plugins/disk.csi.example.com/csi.sock", stateDir: "/tmp/s/journal"},
		{name: "windows defaults", goos: "windows", args: []string{"--driver-name=disk.csi.example.com"},
			endpoint: `unix://C:\var\lib\kubelet\plugins\disk.csi.example.com\csi.sock`,
			stateDir: `C:\var\lib\kubelet\plugins\disk.csi.example.com\state`},
		{name: "no host outside windows", goos: "linux", args: []string{"--driver-name=a.b"}, wantErr: "--host is required"},
		{name: "windows host on linux", goos: "linux", args: []string{"--driver-name=a.b", "--host=windows"}, wantErr: "--host=windows"},
		{name: "sim on windows", goos: "windows", args: []string{"--driver-name=a.b", "--host=sim", "--sim-dir=C:\\sim"}, wantErr: "--host=sim"},
		{name: "sim without dir", goos: "linux", args: []string{"--driver-name=a.b", "--host=sim"}, wantErr: "--sim-dir"},
		{name: "missing driver name", goos: "windows", wantErr: "--driver-name"},
		{name: "bad driver name", goos: "windows", args: []string{"--driver-name=-bad"}, wantErr: "--driver-name"},
		{name: "long driver name", goos: "windows", args: []string{"--driver-name=" + strings.Repeat("a", 64)}, wantErr: "--driver-name"},
		{name: "bad topology", goos: "windows", args: []string{"--driver-name=a.b", "--topology=zone=eu west"}, wantErr: "--topology"},
		{name: "good topology", goos: "windows", args: []string{"--driver-name=a.b", "--topology=topology.kubernetes.io/zone=eu-west-1a"},
			endpoint: `unix://C:\var\lib\kubelet\plugins\a.b\csi.sock`, stateDir: `C:\var\lib\kubelet\plugins\a.b\state`},
		{name: "node id of 256 bytes", goos: "linux", args: []string{"--driver-name=a.b", "--host=sim", "--sim-dir=/s", "--node-id=" + strings.Repeat("n", 256)},
			wantNodeID: strings.Repeat("n", 256), endpoint: "unix:///var/lib/kubelet/plugins/a.b/csi.sock", stateDir: "/s/journal"},
		{name: "node id over 256 bytes", goos: "windows", args: []string{"--driver-name=a.b", "--node-id=" + strings.Repeat("n", 257)}, wantErr: "--node-id"},
		{name: "topology keys differing in case", goos: "windows", args: []string{"--driver-name=a.b", "--topology=Zone=z1", "--topology=zone=z1"},
			wantErr: `"Zone" and "zone" differ only in case`},
		{name: "negative max volumes", goos: "windows", args: []string{"--driver-name=a.b", "--max-volumes-per-node=-1"}, wantErr: "--max-volumes-per-node"},
		{name: "bad default backend", goos: "windows", args: []string{"--driver-name=a.b", "--default-backend=nfs"}, wantErr: "--default-backend"},
		{name: "sim flag without sim", goos: "windows", args: []string{"--driver-name=a.b", "--sim-dir=x"}, wantErr: "--sim-dir only applies"},
		{name: "http endpoint without port", goos: "windows", args: []string{"--driver-name=a.b", "--http-endpoint=localhost"}, wantErr: "--http-endpoint"},
		{name: "http endpoint port not a number", goos: "windows", args: []string{"--driver-name=a.b", "--http-endpoint=:http"}, wantErr: "--http-endpoint"},
		{name: "http endpoint port too large", goos: "windows", args: []string{"--driver-name=a.b", "--http-endpoint=:70000"}, wantErr: "--http-endpoint"},
		{name: "sim config without sim", goos: "windows", args: []string{"--driver-name=a.b", "--sim-config=net.yaml"}, wantErr: "--sim-config only applies"},
		{name: "bad orphan sweep", goos: "windows", args: []string{"--driver-name=a.b", "--orphan-sweep=delete"}, wantErr: "--orphan-sweep="},
		{name: "zero orphan sweep interval", goos: "windows", args: []string{"--driver-name=a.b", "--orphan-sweep-interval=0s"}, wantErr: "--orphan-sweep-interval"},
		{name: "negative orphan sweep interval", goos: "windows", args: []string{"--driver-name=a.b", "--orphan-sweep-interval=-1m"}, wantErr: "--orphan-sweep-interval"},
		{name: "orphan sweep clean", goos: "windows", args: []string{"--driver-name=a.b", "--orphan-sweep=clean", "--orphan-sweep-interval=1h"},
			endpoint: `unix://C:\var\lib\kubelet\plugins\a.b\csi.sock`, stateDir: `C:\var\lib\kubelet\plugins\a.b\state`},
		{name: "registration path without registration", goos: "windows", args: []string{"--driver-name=a.b", `--kubelet-registration-path=C:\k\csi.sock`},
			wantErr: "--kubelet-registration-path only applies with --kubelet-registration"},
		{name: "registration path with scheme", goos: "windows", args: []string{"--driver-name=a.b", "--kubelet-registration", `--kubelet-registration-path=unix://C:\k\csi.sock`},
			wantErr: "--kubelet-registration-path=unix://"},
		{name: "kubelet registration", goos: "windows", args: []string{"--driver-name=a.b", "--kubelet-registration", `--kubelet-registration-path=C:\k\csi.sock`},
			endpoint: `unix://C:\var\lib\kubelet\plugins\a.b\csi.sock`, stateDir: `C:\var\lib\kubelet\plugins\a.b\state`},
		{name: "volume-id-disk serial in sim", goos: "linux", args: []string{"--driver-name=a.b", "--host=sim", "--sim-dir=/s", "--volume-id-disk=serial"},
			endpoint: "unix:///var/lib/kubelet/plugins/a.b/csi.sock", stateDir: "/s/journal", volIDDsk: "serial"},
		{name: "volume-id-disk none", goos: "windows", args: []string{"--driver-name=a.b", "--volume-id-disk=none"},
			endpoint: `unix://C:\var\lib\kubelet\plugins\a.b\csi.sock`, stateDir: `C:\var\lib\kubelet\plugins\a.b\state`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(t, tt.goos, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Endpoint != tt.endpoint {
				t.Errorf("Endpoint = %q, want %q", o.Endpoint, tt.endpoint)
			}
			if o.StateDir != tt.stateDir {
				t.Errorf("StateDir = %q, want %q", o.StateDir, tt.stateDir)
			}
			if o.VolumeIDDisk != tt.volIDDsk {
				t.Errorf("VolumeIDDisk = %q, want %q", o.VolumeIDDisk, tt.volIDDsk)
			}
			wantNodeID := tt.wantNodeID
			if wantNodeID == "" {
				wantNodeID = "node-a"
			}
			if o.NodeID != wantNodeID {
				t.Errorf("NodeID = %q, want %q", o.NodeID, wantNodeID)
			}
		})
	}
}

func TestRepeatableFlags(t *testing.T) {
	o, err := parse(t, "windows", "--driver-name=a.b", "--context-alias=LUN=diskLUN", "--context-alias=diskUUID=diskPage83",
		"--disk-preset=azure-disk,vsphere", "--disk-preset=aws-ebs")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.ContextAliases) != 2 || o.ContextAliases["LUN"] != "diskLUN" {
		t.Fatalf("aliases = %v", o.ContextAliases)
	}
	if strings.Join(o.DiskPresets, ",") != "azure-disk,vsphere,aws-ebs" {
		t.Fatalf("presets = %v", o.DiskPresets)
	}
	if _, err := parse(t, "windows", "--driver-name=a.b", "--context-alias=LUN"); err == nil {
		t.Fatal("alias without '=' accepted")
	}
	if _, err := parse(t, "windows", "--driver-name=a.b", "--topology=k=v1", "--topology=k=v2"); err == nil {
		t.Fatal("conflicting repeated topology accepted")
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]uint64{"1024": 1024, "16Gi": 16 << 30} {
		var s Size
		if err := s.Set(in); err != nil || uint64(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"0", "16G"} {
		var s Size
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) accepted", in)
		}
	}
}

func TestCloudFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // substring naming the flag; "" for success
		nodeID  string // after Finish: "" when the metadata service gives it
	}{
		{name: "no cloud", nodeID: "node-a"},
		{name: "none", args: []string{"--cloud=none"}, nodeID: "node-a"},
		{name: "aws reads the node ID", args: []string{"--cloud=aws"}, nodeID: ""},
		{name: "gce reads the node ID", args: []string{"--cloud=gce"}, nodeID: ""},
		{name: "azure keeps the node name", args: []string{"--cloud=azure"}, nodeID: "node-a"},
		{name: "aws with --node-id", args: []string{"--cloud=aws", "--node-id=i-1"}, nodeID: "i-1"},
		{name: "endpoint", args: []string{"--cloud=gce", "--cloud-metadata-endpoint=http://127.0.0.1:8080/"}, nodeID: ""},
		{name: "https endpoint with a path", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=https://imds.example.com/proxy"}, nodeID: ""},
		{name: "timeout", args: []string{"--cloud=azure", "--cloud-metadata-timeout=5s"}, nodeID: "node-a"},
		{name: "unknown cloud", args: []string{"--cloud=openstack"}, wantErr: "--cloud=openstack"},
		{name: "endpoint without cloud", args: []string{"--cloud-metadata-endpoint=http://127.0.0.1"}, wantErr: "--cloud-metadata-endpoint only applies"},
		{name: "timeout without cloud", args: []string{"--cloud=none", "--cloud-metadata-timeout=1s"}, wantErr: "--cloud-metadata-timeout only applies"},
		{name: "endpoint not a URL", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=169.254.169.254"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "endpoint scheme", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=ftp://169.254.169.254"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "endpoint without host", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=http://"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "endpoint with a port only", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=http://:80"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "endpoint with user information", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=http://u:p@169.254.169.254"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "endpoint with a query", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=http://169.254.169.254/?a=b"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "endpoint with a fragment", args: []string{"--cloud=aws", "--cloud-metadata-endpoint=http://169.254.169.254#x"}, wantErr: "--cloud-metadata-endpoint"},
		{name: "zero timeout", args: []string{"--cloud=aws", "--cloud-metadata-timeout=0s"}, wantErr: "--cloud-metadata-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(t, "windows", append([]string{"--driver-name=a.b"}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.NodeID != tt.nodeID {
				t.Errorf("NodeID = %q, want %q", o.NodeID, tt.nodeID)
			}
		})
	}
}

// TestRegisterLogging: the logging flags are component-base's format,
// verbosity and flush options, nothing else (not klog's output flags, not
// the alpha options the plugin has no feature gate for).
func TestRegisterLogging(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l := RegisterLogging(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if want := []string{"log-flush-frequency", "logging-format", "v", "vmodule"}; !slices.Equal(names, want) {
		t.Fatalf("logging flags %v, want %v", names, want)
	}
	if l.Format() != "text" {
		t.Fatalf("default format %q, want text", l.Format())
	}
	if err := fs.Parse([]string{"--logging-format=json", "--v=3"}); err != nil {
		t.Fatal(err)
	}
	if l.Format() != "json" {
		t.Fatalf("format %q after --logging-format=json", l.Format())
	}
	if err := fs.Parse([]string{"--logtostderr=false"}); err == nil {
		t.Fatal("klog's --logtostderr accepted")
	}
}
