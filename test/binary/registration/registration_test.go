// Package registration plays kubelet's plugin watcher against the real
// plugin binary run with --kubelet-registration, and checks that the
// plugin answers as node-driver-registrar v2.17.0 answers for the same
// driver name and paths. The registrar's module cannot be a Go dependency
// here, so what it answers is written down from its source
// (kubernetes-csi/node-driver-registrar v2.17.0,
// cmd/csi-node-driver-registrar/main.go and node_register.go, cited by
// line) in nodeDriverRegistrar below; test/binary/sidecars plays the registrar's
// other side, towards the plugin.
package registration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestMain removes the plugin build when the tests are done.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

const driver = "disk.csi.example.com"

// nodeDriverRegistrar is what node-driver-registrar v2.17.0 serves, given
// its two path flags and the driver name it reads from the plugin, as its
// source says.
type nodeDriverRegistrar struct {
	// --plugin-registration-path (main.go:52) and
	// --kubelet-registration-path (main.go:53).
	pluginRegistrationPath, kubeletRegistrationPath string
	// The plugin's GetPluginInfo name: the registrar asks it once at start
	// (csirpc.GetDriverName, main.go:175) and registers under it
	// (nodeRegister(ctx, csiDriverName, …), main.go:184).
	csiDriverName string
}

// socket is the registration socket's path (buildSocketPath,
// node_register.go:89-91).
func (r nodeDriverRegistrar) socket() string {
	return fmt.Sprintf("%s/%s-reg.sock", r.pluginRegistrationPath, r.csiDriverName)
}

// getInfo is its GetInfo answer (main.go:88-98) for the server
// nodeRegister builds: newRegistrationServer(csiDriverName,
// *kubeletRegistrationPath, supportedVersions) (node_register.go:43),
// with supportedVersions = []string{"1.0.0"} (main.go:63-64).
func (r nodeDriverRegistrar) getInfo() *registerapi.PluginInfo {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,     // main.go:93
		Name:              r.csiDriverName,           // main.go:94
		Endpoint:          r.kubeletRegistrationPath, // main.go:95
		SupportedVersions: []string{"1.0.0"},         // main.go:96, from main.go:64
	}
}

// notifyResponse is its answer to NotifyRegistrationStatus with
// PluginRegistered true (main.go:108); with false it logs status.Error
// and exits with status 1 without answering (main.go:103-106).
func (nodeDriverRegistrar) notifyResponse() *registerapi.RegistrationStatusResponse {
	return &registerapi.RegistrationStatusResponse{}
}

// regSocket is where the plugin serves its registration.
func regSocket(p *testbin.Plugin) string {
	return filepath.Join(p.Kubelet, "plugins_registry", driver+"-reg.sock")
}

// start runs the plugin with --kubelet-registration and its HTTP endpoint.
func start(t *testing.T, bin, dir string, args ...string) *testbin.Plugin {
	t.Helper()
	return testbin.Start(t, bin, testbin.Options{Dir: dir, DriverName: driver, HTTP: true,
		Args: append([]string{"--kubelet-registration"}, args...)})
}

// kubelet is kubelet's plugin watcher on one registration socket
// (kubernetes/kubernetes pkg/kubelet/pluginmanager/operationexecutor
// operation_generator.go, GenerateRegisterPluginFunc, at commit
// db8b216c556c): it dials the socket, calls GetInfo, validates the answer
// and registers the driver, which for a CSI plugin calls NodeGetInfo on
// the endpoint GetInfo named, then calls NotifyRegistrationStatus.
// Kubelet gives GetInfo 1 s and the notification 5 s; the test's deadlines
// are liveness bounds only, so that a loaded machine does not fail it.
//
// It waits for the socket to answer: the plugin creates it just after its
// CSI socket answers (which testbin.Start waits for). The wait ends when
// the socket answers, when p (if not nil) exits, or when ctx ends.
func kubelet(ctx context.Context, t *testing.T, p *testbin.Plugin, socket string) registerapi.RegistrationClient {
	t.Helper()
	var exited <-chan struct{} // nil: never
	if p != nil {
		exited = p.Done()
	}
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", socket)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("the plugin exited before serving %s: %v\n%s", socket, p.ExitErr(), p.Log.String())
		case <-ctx.Done():
			t.Fatalf("nothing answers on %s: %v", socket, err)
		case <-time.After(10 * time.Millisecond): // a poll interval, not a bound
		}
	}
	return registerapi.NewRegistrationClient(testbin.Dial(t, "unix://"+socket))
}

// logLine returns the first line of log that contains msg, or "".
func logLine(log, msg string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, msg) {
			return l
		}
	}
	return ""
}

func wantHealthz(t *testing.T, p *testbin.Plugin, code int, body string) {
	t.Helper()
	if c, b := p.Fetch(t, "/healthz"); c != code || !strings.Contains(b, body) {
		t.Errorf("/healthz = %d %q, want %d with %q", c, b, code, body)
	}
}

var registeredMetric = regexp.MustCompile(`(?m)^csi_windows_node_kubelet_registered (\S+)$`)

func wantRegisteredMetric(t *testing.T, p *testbin.Plugin, want string) {
	t.Helper()
	m := registeredMetric.FindStringSubmatch(p.Get(t, "/metrics"))
	if m == nil || m[1] != want {
		t.Errorf("csi_windows_node_kubelet_registered = %v, want %s", m, want)
	}
}

// TestKubeletPluginWatcher follows kubelet through a registration and
// compares every answer with node-driver-registrar's for the same driver
// name and paths, then watches /healthz and the metric move, and the
// sockets go at SIGTERM.
func TestKubeletPluginWatcher(t *testing.T) {
	bin := testbin.Build(t)
	p := start(t, bin, testbin.ShortDir(t))
	ctx := testbin.Context(t, 60*time.Second)

	// The registrar of the default deployment: its registration directory
	// is kubelet's plugins_registry, and kubelet is told the plugin's own
	// socket (deploy/kubernetes/base/daemonset.yaml); it asks the plugin
	// for the driver name.
	name, err := rpc.GetDriverName(ctx, p.Dial(t))
	if err != nil {
		t.Fatal(err)
	}
	ndr := nodeDriverRegistrar{
		pluginRegistrationPath:  filepath.Join(p.Kubelet, "plugins_registry"),
		kubeletRegistrationPath: p.Socket,
		csiDriverName:           name,
	}
	// The same file for kubelet's watcher (the registrar joins with '/'
	// whatever the OS; the plugin writes the node's separator).
	if got, want := regSocket(p), filepath.Clean(ndr.socket()); got != want {
		t.Fatalf("registration socket %s, node-driver-registrar's %s", got, want)
	}
	rc := kubelet(ctx, t, p, regSocket(p))
	// kubelet's plugin watcher takes every file in plugins_registry for a
	// plugin's socket, so the socket's lock is not there
	// (registration.LockPath).
	entries, err := os.ReadDir(filepath.Dir(regSocket(p)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{filepath.Base(regSocket(p))}; !slices.Equal(names, want) {
		t.Errorf("plugins_registry holds %q, want only %q", names, want)
	}
	wantHealthz(t, p, http.StatusServiceUnavailable, "kubelet has not called GetInfo on "+regSocket(p))
	wantRegisteredMetric(t, p, "0")

	info, err := rc.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := ndr.getInfo()
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"type", info.GetType(), want.GetType()},
		{"name", info.GetName(), want.GetName()},
		{"endpoint", info.GetEndpoint(), want.GetEndpoint()},
		{"supported_versions", fmt.Sprint(info.GetSupportedVersions()), fmt.Sprint(want.GetSupportedVersions())},
	} {
		if f.got != f.want {
			t.Errorf("GetInfo %s = %q, node-driver-registrar answers %q", f.field, f.got, f.want)
		}
	}
	if !proto.Equal(info, want) {
		t.Errorf("GetInfo = %v, node-driver-registrar answers %v", info, want)
	}
	wantHealthz(t, p, http.StatusServiceUnavailable, "has not confirmed the registration")

	// kubelet's CSI handler registers the driver: NodeGetInfo on the
	// endpoint as GetInfo gave it.
	ni, err := csi.NewNodeClient(testbin.Dial(t, "unix://"+info.GetEndpoint())).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "test-node" {
		t.Fatalf("NodeGetInfo on the endpoint GetInfo named = %v, %v", ni, err)
	}
	resp, err := rc.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	if err != nil || !proto.Equal(resp, ndr.notifyResponse()) {
		t.Fatalf("NotifyRegistrationStatus(true) = %v, %v; node-driver-registrar answers %v", resp, err, ndr.notifyResponse())
	}
	wantHealthz(t, p, http.StatusOK, "ok")
	wantRegisteredMetric(t, p, "1")
	// Logged as the plugin logs everything, with the driver's name.
	if l := logLine(p.Log.String(), `"Kubelet registered the plugin"`); !strings.Contains(l, `driver="`+driver+`"`) {
		t.Errorf("the registration is not logged with the driver's name:\n%s", p.Log.String())
	}

	// kubelet's connection monitor keeps asking GetInfo; the answer stays.
	if again, err := rc.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil || !proto.Equal(again, want) {
		t.Errorf("GetInfo again = %v, %v", again, err)
	}

	// SIGTERM: a clean exit that removes both sockets, as the registrar
	// removes its socket on SIGTERM (removeRegSocket, node_register.go:179-190).
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Log.String())
	}
	for _, s := range []string{regSocket(p), p.Socket} {
		if _, err := os.Lstat(s); !os.IsNotExist(err) {
			t.Errorf("%s left after a graceful stop: %v", s, err)
		}
	}
}

// TestRegistrationPathAsGiven: --kubelet-registration-path is answered as
// given, as the registrar answers its flag of the same name.
func TestRegistrationPathAsGiven(t *testing.T) {
	bin := testbin.Build(t)
	dir := testbin.ShortDir(t)
	// A path kubelet would reach the socket by, other than the plugin's.
	given := filepath.Join(dir, "host-view", "csi.sock")
	p := start(t, bin, dir, "--kubelet-registration-path="+given)
	ndr := nodeDriverRegistrar{kubeletRegistrationPath: given, csiDriverName: driver}
	ctx := testbin.Context(t, 60*time.Second)
	info, err := kubelet(ctx, t, p, regSocket(p)).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil || !proto.Equal(info, ndr.getInfo()) {
		t.Errorf("GetInfo = %v, %v; node-driver-registrar answers %v", info, err, ndr.getInfo())
	}
}

// TestRefusedRegistration: kubelet's NotifyRegistrationStatus with
// PluginRegistered false makes the plugin log kubelet's reason and exit
// with status 1, as the registrar does (main.go:103-106), so that kubelet
// restarts the container. Unlike the registrar, which exits inside the
// call, the plugin stops cleanly first: both sockets are gone.
func TestRefusedRegistration(t *testing.T) {
	bin := testbin.Build(t)
	p := start(t, bin, testbin.ShortDir(t))
	ctx := testbin.Context(t, 60*time.Second)
	rc := kubelet(ctx, t, p, regSocket(p))
	if _, err := rc.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	// What kubelet sends when its CSI handler rejects the driver
	// (operation_generator.go, notifyPlugin with the handler's error).
	const reason = "RegisterPlugin error -- plugin registration failed with err: error updating CSINode object with CSI driver node info: detected topology value collision"
	// The plugin may stop before its answer reaches kubelet, as the
	// registrar does; kubelet ignores the answer either way.
	_, _ = rc.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: reason})
	select {
	case <-p.Done():
	case <-ctx.Done():
		t.Fatalf("the plugin did not exit after kubelet refused its registration\n%s", p.Log.String())
	}
	var exit *exec.ExitError
	if !errors.As(p.ExitErr(), &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1\n%s", p.ExitErr(), p.Log.String())
	}
	log := p.Log.String()
	for _, msg := range []string{`"Kubelet refused the plugin's registration`, `"Plugin failed"`} {
		if l := logLine(log, msg); !strings.Contains(l, reason) || !strings.Contains(l, `driver="`+driver+`"`) {
			t.Errorf("kubelet's reason is not logged with %s and the driver's name:\n%s", msg, log)
		}
	}
	for _, s := range []string{regSocket(p), p.Socket} {
		if _, err := os.Lstat(s); !os.IsNotExist(err) {
			t.Errorf("%s left after the exit: %v", s, err)
		}
	}
}

// TestStaleRegistrationSocket: what a killed plugin or registrar leaves at
// the registration socket's path is removed at start, as the registrar
// removes it (util.CleanupSocketFile, node_register.go:44-48; on Windows
// whatever file is there, pkg/util/util_windows.go:32-56), and the plugin
// registers.
func TestStaleRegistrationSocket(t *testing.T) {
	bin := testbin.Build(t)
	for _, tt := range []struct {
		name  string
		leave func(t *testing.T, path string)
	}{
		{"socket nobody answers on", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"plain file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := testbin.ShortDir(t)
			reg := filepath.Join(dir, "kubelet", "plugins_registry", driver+"-reg.sock")
			if err := os.MkdirAll(filepath.Dir(reg), 0o750); err != nil {
				t.Fatal(err)
			}
			tt.leave(t, reg)
			p := start(t, bin, dir)
			ctx := testbin.Context(t, 60*time.Second)
			info, err := kubelet(ctx, t, p, reg).GetInfo(ctx, &registerapi.InfoRequest{})
			if err != nil || info.GetName() != driver {
				t.Fatalf("GetInfo over a replaced socket = %v, %v\n%s", info, err, p.Log.String())
			}
			if !strings.Contains(p.Log.String(), `"Removed a stale socket`) {
				t.Errorf("replacing the stale socket is not logged:\n%s", p.Log.String())
			}
		})
	}

	// A plugin killed (no clean stop) leaves its socket; the next one
	// replaces it and registers again.
	dir := testbin.ShortDir(t)
	p := start(t, bin, dir)
	p.Kill()
	if _, err := os.Lstat(regSocket(p)); err != nil {
		t.Fatalf("no registration socket after a kill: %v", err)
	}
	p = start(t, bin, dir)
	ctx := testbin.Context(t, 60*time.Second)
	if _, err := kubelet(ctx, t, p, regSocket(p)).GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatalf("GetInfo after a restart over a killed plugin's socket: %v\n%s", err, p.Log.String())
	}
}

// TestSecondPluginLoses: a second plugin of the driver on the node, on
// another CSI socket, and a plugin started next to a node-driver-registrar
// that serves the registration socket, both exit non-zero with "served by
// another process" before they touch anything; the socket keeps answering
// for its owner.
func TestSecondPluginLoses(t *testing.T) {
	bin := testbin.Build(t)
	dir := testbin.ShortDir(t)
	first := start(t, bin, dir)
	ctx := testbin.Context(t, 60*time.Second)
	out, err := runToExit(ctx, bin, testbin.Options{Dir: dir, DriverName: driver, Args: []string{"--kubelet-registration",
		"--endpoint=unix://" + filepath.Join(dir, "second.sock"), "--sim-dir=" + filepath.Join(dir, "sim-second")}})
	if err == nil || !strings.Contains(out, "served by another process") || !strings.Contains(out, regSocket(first)) {
		t.Fatalf("second plugin: err=%v\n%s", err, out)
	}
	if info, err := kubelet(ctx, t, first, regSocket(first)).GetInfo(ctx, &registerapi.InfoRequest{}); err != nil || info.GetEndpoint() != first.Socket {
		t.Fatalf("the first plugin's registration after the second one's start: %v, %v", info, err)
	}
	if err := first.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	// node-driver-registrar (without the plugin's lock) serves the socket.
	dir = testbin.ShortDir(t)
	reg := filepath.Join(dir, "kubelet", "plugins_registry", driver+"-reg.sock")
	if err := os.MkdirAll(filepath.Dir(reg), 0o750); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", reg)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	registerapi.RegisterRegistrationServer(gs, registrarServer{ndr: nodeDriverRegistrar{kubeletRegistrationPath: "registrar", csiDriverName: driver}})
	go func() { _ = gs.Serve(l) }() // stopped below
	defer gs.Stop()
	out, err = runToExit(ctx, bin, testbin.Options{Dir: dir, DriverName: driver, Args: []string{"--kubelet-registration"}})
	if err == nil || !strings.Contains(out, "served by another process") {
		t.Fatalf("plugin next to a registrar: err=%v\n%s", err, out)
	}
	if info, err := kubelet(ctx, t, nil, reg).GetInfo(ctx, &registerapi.InfoRequest{}); err != nil || info.GetEndpoint() != "registrar" {
		t.Fatalf("the registrar's socket after the plugin's start: %v, %v", info, err)
	}
}

// TestRegistrarReplacesSocket: a node-driver-registrar of the driver
// started after the plugin registered removes the plugin's registration
// socket and serves its own there (util.CleanupSocketFile and net.Listen,
// node_register.go:44-61). The plugin's /healthz and metric say so, since
// kubelet's plugin watcher now reaches the registrar, not the plugin; and
// at SIGTERM the plugin leaves the registrar's socket, which keeps
// answering (the registrar itself would remove the plugin's,
// removeRegSocket, node_register.go:179-190).
func TestRegistrarReplacesSocket(t *testing.T) {
	bin := testbin.Build(t)
	p := start(t, bin, testbin.ShortDir(t))
	ctx := testbin.Context(t, 60*time.Second)
	rc := kubelet(ctx, t, p, regSocket(p))
	if _, err := rc.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	wantHealthz(t, p, http.StatusOK, "ok")
	wantRegisteredMetric(t, p, "1")

	if err := os.Remove(regSocket(p)); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", regSocket(p))
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	registerapi.RegisterRegistrationServer(gs, registrarServer{ndr: nodeDriverRegistrar{kubeletRegistrationPath: "registrar", csiDriverName: driver}})
	go func() { _ = gs.Serve(l) }() // stopped below
	defer gs.Stop()
	wantHealthz(t, p, http.StatusServiceUnavailable, "replaced by another process")
	wantRegisteredMetric(t, p, "0")

	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Log.String())
	}
	if info, err := kubelet(ctx, t, nil, regSocket(p)).GetInfo(ctx, &registerapi.InfoRequest{}); err != nil || info.GetEndpoint() != "registrar" {
		t.Fatalf("the registrar's socket after the plugin stopped: %v, %v\n%s", info, err, p.Log.String())
	}
	if !strings.Contains(p.Log.String(), `"Left the socket in place`) {
		t.Errorf("leaving the registrar's socket is not logged:\n%s", p.Log.String())
	}
}

// registrarServer serves nodeDriverRegistrar's answers.
type registrarServer struct {
	registerapi.UnimplementedRegistrationServer
	ndr nodeDriverRegistrar
}

func (r registrarServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return r.ndr.getInfo(), nil
}

// runToExit runs the binary with the options of testbin.Start and waits
// for it to exit.
func runToExit(ctx context.Context, bin string, o testbin.Options) (string, error) {
	out, err := testbin.Command(ctx, bin, o).CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("did not exit: %w", ctx.Err())
	}
	return string(out), err
}
