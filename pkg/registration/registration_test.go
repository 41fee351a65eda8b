package registration

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"k8s.io/component-base/metrics"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

func TestPaths(t *testing.T) {
	tests := []struct {
		name, root, driver string
		style              winpath.Style
		socket, lock       string
	}{
		{"windows", `C:\var\lib\kubelet`, "disk.csi.example.com", winpath.Windows,
			`C:\var\lib\kubelet\plugins_registry\disk.csi.example.com-reg.sock`, `C:\var\lib\kubelet\plugins\disk.csi.example.com\registration.lock`},
		{"windows, root spelt with slashes", `C:/k/`, "a.b", winpath.Windows, `C:\k\plugins_registry\a.b-reg.sock`, `C:\k\plugins\a.b\registration.lock`},
		{"posix", "/var/lib/kubelet", "a.b", winpath.POSIX, "/var/lib/kubelet/plugins_registry/a.b-reg.sock", "/var/lib/kubelet/plugins/a.b/registration.lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := winpath.NewRoot(tt.root, tt.style)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := SocketPath(root, tt.driver); err != nil || got != tt.socket {
				t.Errorf("SocketPath = %q, %v; want %q", got, err, tt.socket)
			}
			if got, err := LockPath(root, tt.driver); err != nil || got != tt.lock {
				t.Errorf("LockPath = %q, %v; want %q", got, err, tt.lock)
			}
		})
	}
	// A name that is no file name on Windows (a DOS device) is refused,
	// not turned into a path out of the directory.
	root, err := winpath.NewRoot(`C:\k`, winpath.Windows)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := LockPath(root, "NUL"); err == nil {
		t.Errorf("LockPath(NUL) = %q, want an error", p)
	}
}

// service starts the service on a socket in a temporary directory and
// returns a client of it, as kubelet's plugin watcher dials it, and the
// file the service knows as its socket: a stand-in beside the one it
// listens on, so that the test can remove it on any OS (Windows may not
// let a socket that is listened on go).
func service(t *testing.T, reg metrics.KubeRegistry) (*Service, registerapi.RegistrationClient, string) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "drv-reg.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{DriverName: "disk.csi.example.com", Endpoint: `C:\var\lib\kubelet\plugins\disk.csi.example.com\csi.sock`, Socket: sock, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	listen := filepath.Join(dir, "l.sock")
	l, err := net.Listen("unix", listen)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// Dialled the way kubelet dials it (operation_generator.go, dial): the
	// socket's path through a context dialer, on Windows too.
	conn, err := grpc.NewClient("passthrough:///registration", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", listen)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, registerapi.NewRegistrationClient(conn), sock
}

// registered reads csi_windows_node_kubelet_registered.
func registered(t *testing.T, reg metrics.KubeRegistry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == namespace+"_"+registeredName {
			if mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) != 1 {
				t.Fatalf("%s: %v", mf.GetName(), mf)
			}
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s_%s is not registered", namespace, registeredName)
	return 0
}

// TestKubeletRegisters follows kubelet: GetInfo, then
// NotifyRegistrationStatus true; the status and the metric follow, and a
// registration socket removed afterwards is reported.
func TestKubeletRegisters(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	s, c, sock := service(t, reg)
	ctx := context.Background()

	status := func(want string) {
		t.Helper()
		err := s.Status()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Status = %v, want %q", err, want)
		}
	}
	status("has not called GetInfo on " + sock)
	if v := registered(t, reg); v != 0 {
		t.Errorf("metric before registration = %v", v)
	}

	info, err := c.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &registerapi.PluginInfo{Type: "CSIPlugin", Name: "disk.csi.example.com",
		Endpoint: `C:\var\lib\kubelet\plugins\disk.csi.example.com\csi.sock`, SupportedVersions: []string{"1.0.0"}}
	if !proto.Equal(info, want) {
		t.Errorf("GetInfo = %v, want %v", info, want)
	}
	status("called GetInfo on " + sock)

	if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	status("")
	if v := registered(t, reg); v != 1 {
		t.Errorf("metric once registered = %v", v)
	}
	select {
	case r := <-s.Refused():
		t.Fatalf("refused after a registration: %q", r)
	default:
	}

	// kubelet's connection monitor asks again; nothing changes.
	if _, err := c.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	status("")

	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	status("is gone")
	if v := registered(t, reg); v != 0 {
		t.Errorf("metric with the socket gone = %v", v)
	}
}

// TestKubeletRefuses: a refusal is delivered once, with kubelet's reason
// (or a stand-in for an empty one), and the service answers the call.
func TestKubeletRefuses(t *testing.T) {
	for _, tt := range []struct{ reason, want string }{
		{"RegisterPlugin error -- plugin validation failed with err: highest supported version reported is v2.0.0, must be v1.x", "must be v1.x"},
		{"", "kubelet gave no reason"},
	} {
		s, c, _ := service(t, nil)
		ctx := context.Background()
		for range 2 {
			if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{Error: tt.reason}); err != nil {
				t.Fatal(err)
			}
		}
		if r := <-s.Refused(); !strings.Contains(r, tt.want) {
			t.Errorf("refused with %q, want %q", r, tt.want)
		}
		select {
		case r := <-s.Refused():
			t.Errorf("refused twice: %q", r)
		default:
		}
		if err := s.Status(); err == nil {
			t.Error("Status after a refusal = nil")
		}
	}
}

func TestNewRequiresEverything(t *testing.T) {
	full := Config{DriverName: "a.b", Endpoint: "/k/csi.sock", Socket: "/k/r.sock"}
	for _, c := range []Config{
		{Endpoint: full.Endpoint, Socket: full.Socket},
		{DriverName: full.DriverName, Socket: full.Socket},
		{DriverName: full.DriverName, Endpoint: full.Endpoint},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error", c)
		}
	}
	if _, err := New(full); err != nil {
		t.Errorf("New(%+v) = %v", full, err)
	}
}
