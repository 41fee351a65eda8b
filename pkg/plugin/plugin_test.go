package plugin_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
	"github.com/wincsi/csi-windows-node/pkg/hostmetrics"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sweep"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// flags parses the binary's flags for goos, with CSI_ENDPOINT empty (a
// developer may have exported it for csc), so that defaults derive from
// the flags alone.
func flags(t *testing.T, goos string, args ...string) *config.Options {
	t.Helper()
	t.Setenv(config.EndpointEnv, "")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := config.Register(fs, goos)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(fs, goos, "node-a"); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFromConfig(t *testing.T) {
	c := flags(t, "windows", "--driver-name=disk.csi.example.com", "--topology=topology.kubernetes.io/zone=z1",
		"--context-alias=LUN=diskLUN", "--disk-preset=azure-disk", "--default-backend=disk", "--smb-require-privacy=false",
		"--smb-default-domain=CORP", "--smb-keep-mappings", "--keep-iscsi-portals", "--max-volumes-per-node=8",
		"--http-endpoint=127.0.0.1:0", "--orphan-sweep=clean", "--orphan-sweep-interval=1h")
	got, err := plugin.FromConfig(c, "windows")
	if err != nil {
		t.Fatal(err)
	}
	if got.Started != (plugin.Options{}).Started || got.Version == "" {
		t.Errorf("Started %v, Version %q: want zero and the build's version", got.Started, got.Version)
	}
	got.Version = ""
	want := plugin.Options{
		DriverName: "disk.csi.example.com", NodeID: "node-a", MaxVolumesPerNode: 8,
		Topology:   map[string]string{"topology.kubernetes.io/zone": "z1"},
		KubeletDir: `C:\var\lib\kubelet`, PathStyle: winpath.Windows,
		StateDir: `C:\var\lib\kubelet\plugins\disk.csi.example.com\state`,
		Contract: contract.Options{DefaultKind: contract.KindDisk, Aliases: map[string]string{"LUN": "diskLUN"},
			Presets: []string{"azure-disk"}, DefaultDomain: "CORP"},
		OfflineDiskOnUnstage: true, SMBKeepMappings: true, KeepISCSIPortals: true,
		OrphanSweep: sweep.Clean, OrphanSweepInterval: time.Hour,
		HTTPEndpoint: "127.0.0.1:0", ShutdownGrace: c.ShutdownGrace,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromConfig =\n%+v\nwant\n%+v", got, want)
	}

	sim, err := plugin.FromConfig(flags(t, "linux", "--driver-name=a.b", "--host=sim", "--sim-dir=/s"), "linux")
	if err != nil {
		t.Fatal(err)
	}
	if sim.PathStyle != winpath.POSIX || sim.StateDir != "/s/journal" || sim.Contract.VolumeIDDisk != "" ||
		!sim.Contract.RequirePrivacy || !sim.OfflineDiskOnUnstage {
		t.Errorf("defaults with --host=sim: %+v", sim)
	}
}

func TestFromConfigRefusesBeforeTouchingTheHost(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the flag the error names
	}{
		{"relative kubelet dir", []string{"--kubelet-dir=kubelet"}, "--kubelet-dir"},
		{"alias to an unknown key", []string{"--context-alias=X=noSuchKey"}, "--context-alias"},
		{"unknown preset", []string{"--disk-preset=nope"}, "--disk-preset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := flags(t, "linux", append([]string{"--driver-name=a.b", "--host=sim", "--sim-dir=/s"}, tt.args...)...)
			if _, err := plugin.FromConfig(c, "linux"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("FromConfig: %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func validOptions(t *testing.T) plugin.Options {
	return plugin.Options{DriverName: "a.b", NodeID: "n1", KubeletDir: "/var/lib/kubelet", PathStyle: winpath.POSIX,
		StateDir: t.TempDir(), Topology: map[string]string{"zone": "z1"}, Version: "v9"}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	tests := []struct {
		name   string
		change func(*plugin.Options)
	}{
		{"no driver name", func(o *plugin.Options) { o.DriverName = "" }},
		{"no state dir", func(o *plugin.Options) { o.StateDir = "" }},
		{"relative kubelet dir", func(o *plugin.Options) { o.KubeletDir = "kubelet" }},
		{"Windows kubelet dir in POSIX style", func(o *plugin.Options) { o.KubeletDir = `C:\k` }},
		{"invalid contract", func(o *plugin.Options) { o.Contract.DefaultKind = "nfs" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions(t)
			tt.change(&o)
			if p, err := plugin.New(o, plugin.Host{Host: hosttest.Unimplemented()}); err == nil {
				t.Fatalf("New accepted it: %+v", p)
			}
		})
	}
}

// statFiles answers Stat for the staging path with an empty directory and
// counts the calls.
type statFiles struct {
	host.Files
	calls int
}

func (f *statFiles) Stat(context.Context, string) (host.PathInfo, error) {
	f.calls++
	return host.PathInfo{Kind: host.PathDir}, nil
}

// standIn is a stand-in for the controller that counts the unstages it
// passes on.
type standIn struct {
	csi.NodeServer
	unstages int
}

func (s *standIn) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	s.unstages++
	return s.NodeServer.NodeUnstageVolume(ctx, req)
}

// TestNewWiresTheServices checks what New puts together: the identity
// (name, version, topology, health check), the node (ID, topology), the
// journal in StateDir, the host-call metrics around the host, and the
// host's stand-in for the controller in front of the node, given the
// node's contract options.
func TestNewWiresTheServices(t *testing.T) {
	ctx := context.Background()
	o := validOptions(t)
	files := &statFiles{}
	h := hosttest.Unimplemented()
	h.Files = files
	unhealthy := errors.New("wedged")
	healthy := true
	var ctl *standIn
	var ctlContract contract.Options
	p, err := plugin.New(o, plugin.Host{Host: h,
		Healthy: func() error { return map[bool]error{true: nil, false: unhealthy}[healthy] },
		Controller: func(n csi.NodeServer, c contract.Options) csi.NodeServer {
			ctl, ctlContract = &standIn{NodeServer: n}, c
			return ctl
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := p.Identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != "a.b" || info.GetVendorVersion() != "v9" {
		t.Errorf("GetPluginInfo = %v, %v", info, err)
	}
	ni, err := p.Node().NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "n1" || ni.GetAccessibleTopology().GetSegments()["zone"] != "z1" {
		t.Errorf("NodeGetInfo = %v, %v", ni, err)
	}
	p.Identity.SetReady(true)
	if !p.Identity.Ready() {
		t.Error("not ready with a healthy host")
	}
	healthy = false
	if p.Identity.Ready() {
		t.Error("ready with a host whose health check fails")
	}
	if j, err := journal.OpenReadOnly(o.StateDir); err != nil || len(j.List(ctx)) != 0 {
		t.Errorf("no empty journal in the state directory %s: %v", o.StateDir, err)
	}
	_, err = p.Node().NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/elsewhere/globalmount"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), o.KubeletDir) {
		t.Errorf("a staging path outside the kubelet directory %s: %v, want InvalidArgument naming it", o.KubeletDir, err)
	}

	staging := filepath.Join(o.KubeletDir, "plugins", "x", "vol-1", "globalmount")
	if _, err := p.Node().NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging}); err != nil {
		t.Fatalf("unstage of a volume that is not staged: %v", err)
	}
	if files.calls != 1 {
		t.Fatalf("%d host calls of the RPC, want one", files.calls)
	}
	if ctl == nil || p.Node() != ctl || ctl.unstages != 2 || !reflect.DeepEqual(ctlContract, o.Contract) {
		t.Errorf("the node is not served behind the controller's stand-in (%v) given the contract options %+v (got %+v)", ctl, o.Contract, ctlContract)
	}
	mfs, err := p.Metrics.GetRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := false
	for _, mf := range mfs {
		if mf.GetName() == hostmetrics.Namespace+"_"+hostmetrics.Name {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					counted = counted || l.GetName() == hostmetrics.LabelOperation && l.GetValue() == "Stat"
				}
			}
		}
	}
	if !counted {
		t.Error("the Stat of the unstage is not counted in the host-call metrics")
	}
}
