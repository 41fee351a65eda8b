// Package sidecars plays node-driver-registrar, livenessprobe and kubelet
// against the real plugin binary over its socket, with the same library
// calls those programs make (csi-lib-utils/rpc, the kubelet
// pluginregistration API; kubernetes-csi/node-driver-registrar v2.17.0
// cmd/csi-node-driver-registrar, kubernetes-csi/livenessprobe v2.19.0
// cmd/livenessprobe): the sidecars' own binaries are not among the test
// tools.
package sidecars

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

const driver = "disk.csi.example.com"

// registrar is node-driver-registrar's plugin-facing side: the
// Registration service kubelet's plugin watcher talks to.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	status         chan *registerapi.RegistrationStatus
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.status <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

func TestRegistrarKubeletAndLivenessProbe(t *testing.T) {
	bin := testbin.Build(t)
	base := t.TempDir()
	p := testbin.Start(t, bin, testbin.Options{Dir: base, DriverName: driver, HTTP: true,
		Args: []string{"--topology=topology.kubernetes.io/zone=zone-a", "--max-volumes-per-node=24"}})
	ctx := testbin.Context(t, 30*time.Second)
	conn := p.Dial(t)

	// node-driver-registrar: GetPluginInfo is the only CSI call it makes.
	name, err := rpc.GetDriverName(ctx, conn)
	if err != nil || name != driver {
		t.Fatalf("GetDriverName = %q, %v", name, err)
	}
	regDir := filepath.Join(base, "plugins_registry")
	if err := os.MkdirAll(regDir, 0o750); err != nil {
		t.Fatal(err)
	}
	regSock := filepath.Join(regDir, driver+"-reg.sock")
	l, err := net.Listen("unix", regSock)
	if err != nil {
		t.Fatal(err)
	}
	reg := &registrar{name: name, endpoint: p.Socket, status: make(chan *registerapi.RegistrationStatus, 1)}
	gs := grpc.NewServer()
	registerapi.RegisterRegistrationServer(gs, reg)
	go func() { _ = gs.Serve(l) }() // stopped below
	defer gs.Stop()

	// kubelet's plugin watcher: GetInfo, then NodeGetInfo on the
	// advertised endpoint, then NotifyRegistrationStatus.
	rc := registerapi.NewRegistrationClient(testbin.Dial(t, "unix://"+regSock))
	info, err := rc.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil || info.GetType() != registerapi.CSIPlugin || info.GetName() != driver {
		t.Fatalf("GetInfo = %v, %v", info, err)
	}
	nc := csi.NewNodeClient(testbin.Dial(t, "unix://"+info.GetEndpoint()))
	ni, err := nc.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "test-node" || ni.GetMaxVolumesPerNode() != 24 ||
		ni.GetAccessibleTopology().GetSegments()["topology.kubernetes.io/zone"] != "zone-a" {
		t.Fatalf("NodeGetInfo = %v, %v", ni, err)
	}
	caps, err := nc.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) == 0 {
		t.Fatalf("NodeGetCapabilities = %v, %v", caps, err)
	}
	if _, err := rc.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if s := <-reg.status; !s.GetPluginRegistered() {
		t.Fatalf("registration status %v", s)
	}

	// livenessprobe: Probe over the socket, and the plugin's own /healthz.
	ready, err := rpc.Probe(ctx, conn)
	if err != nil || !ready {
		t.Fatalf("Probe = %v, %v", ready, err)
	}
	if body := p.Get(t, "/healthz"); body != "ok" { // Get fails on anything but 200 OK
		t.Fatalf("/healthz = %q", body)
	}
	if body := p.Get(t, "/metrics"); !strings.Contains(body, "csi_plugin_operations_seconds") {
		t.Fatalf("/metrics lacks csi_plugin_operations_seconds:\n%.2000s", body)
	}

	// SIGTERM: a graceful exit that removes the socket.
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Log.String())
	}
	if _, err := os.Stat(p.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket left after a graceful stop: %v", err)
	}
}

func TestSocketOwnership(t *testing.T) {
	bin := testbin.Build(t)
	base := t.TempDir()
	p := testbin.Start(t, bin, testbin.Options{Dir: base})

	// A second plugin on the same socket refuses to start and leaves the
	// first one serving.
	second := testbin.Options{Dir: base}
	out, err := runToExit(bin, second)
	if err == nil || !strings.Contains(out, "served by another process") {
		t.Fatalf("second instance: err=%v\n%s", err, out)
	}
	if ok, err := rpc.Probe(testbin.Context(t, 30*time.Second), p.Dial(t)); err != nil || !ok {
		t.Fatalf("first instance stopped serving: %v %v", ok, err)
	}

	// A crash leaves a stale socket file; the next start removes it.
	p.Kill()
	if _, err := os.Stat(p.Socket); err != nil {
		t.Fatalf("expected a stale socket after kill: %v", err)
	}
	p2 := testbin.Start(t, bin, testbin.Options{Dir: base})
	if ok, err := rpc.Probe(testbin.Context(t, 30*time.Second), p2.Dial(t)); err != nil || !ok {
		t.Fatalf("restart over a stale socket: %v %v", ok, err)
	}
}

// runToExit runs the binary with the options of testbin.Start and waits for it to exit.
func runToExit(bin string, o testbin.Options) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := testbin.Command(ctx, bin, o)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("did not exit: %w", ctx.Err())
	}
	return string(out), err
}
