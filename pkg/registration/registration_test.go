package registration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
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

// socketState stands in for pkg/server.Socket.Owned: what the test says
// has become of the registration socket.
type socketState struct{ err error }

func (o *socketState) owned() error { return o.err }

// kubeletClient is a client of the service as kubelet's plugin watcher
// has it, and its connection.
type kubeletClient struct {
	registerapi.RegistrationClient
	conn *grpc.ClientConn
}

// service starts the service on a socket in a temporary directory, served
// with ctx (whose logger it logs with), and returns a client of it, as
// kubelet's plugin watcher dials it, and what the service learns of its
// socket's fate, which the test sets.
func service(ctx context.Context, t *testing.T, reg metrics.KubeRegistry) (*Service, kubeletClient, *socketState) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "drv-reg.sock")
	s, err := New(Config{DriverName: "disk.csi.example.com", Endpoint: `C:\var\lib\kubelet\plugins\disk.csi.example.com\csi.sock`, Socket: sock, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	state := &socketState{}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, state.owned) }()
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
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, kubeletClient{registerapi.NewRegistrationClient(conn), conn}, state
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
// registration socket removed or replaced afterwards is reported.
func TestKubeletRegisters(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	ctx := context.Background()
	s, c, sock := service(ctx, t, reg)

	status := func(want string) {
		t.Helper()
		err := s.Status()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Status = %v, want %q", err, want)
		}
	}
	status("has not called GetInfo on ")
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
	status("has not confirmed the registration")

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

	for _, tt := range []struct {
		fate error
		want string
	}{
		{fmt.Errorf("socket x is gone: %w", fs.ErrNotExist), "is gone"},
		{errors.New("socket x: replaced by another process"), "is no longer the plugin's, so kubelet's plugin watcher reaches another process there, not the plugin (is a node-driver-registrar of the driver running too?): socket x: replaced by another process"},
	} {
		sock.err = tt.fate
		status(tt.want)
		if v := registered(t, reg); v != 0 {
			t.Errorf("metric with the socket %v = %v", tt.fate, v)
		}
	}
}

// TestKubeletRefuses: a refusal is delivered once, with kubelet's reason
// (or a stand-in for an empty one), and the service answers the call.
func TestKubeletRefuses(t *testing.T) {
	for _, tt := range []struct{ reason, want string }{
		{"RegisterPlugin error -- plugin validation failed with err: highest supported version reported is v2.0.0, must be v1.x", "must be v1.x"},
		{"", "kubelet gave no reason"},
	} {
		ctx := context.Background()
		s, c, _ := service(ctx, t, nil)
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
		if err := s.Status(); err == nil || !strings.HasPrefix(err.Error(), "kubelet refused the registration: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Status after a refusal = %v, want kubelet's reason", err)
		}
	}
}

// TestKubeletRefusesAfterRegistering: a refusal after a confirmation (a
// kubelet that registers the plugin again, after a restart or once its
// connection monitor deregistered it, and then refuses it) undoes the
// confirmation: /healthz and the metric fail with kubelet's reason, while
// the plugin stops.
func TestKubeletRefusesAfterRegistering(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	ctx := context.Background()
	s, c, _ := service(ctx, t, reg)
	if _, err := c.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Status(); err != nil {
		t.Fatalf("Status once registered = %v", err)
	}
	const reason = "RegisterPlugin error -- plugin registration failed with err: detected topology value collision"
	if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{Error: reason}); err != nil {
		t.Fatal(err)
	}
	if r := <-s.Refused(); r != reason {
		t.Errorf("refused with %q, want %q", r, reason)
	}
	if err := s.Status(); err == nil || !strings.Contains(err.Error(), reason) {
		t.Errorf("Status after a refusal that followed a registration = %v, want kubelet's reason", err)
	}
	if v := registered(t, reg); v != 0 {
		t.Errorf("metric after the refusal = %v", v)
	}
}

// TestLogsWithServesLogger: every line the service logs for kubelet's
// calls carries what the logger Serve was given carries (the plugin's
// driver name), like every other line of the plugin.
func TestLogsWithServesLogger(t *testing.T) {
	var log logWriter
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(4), textlogger.Output(&log))).WithValues("driver", "disk.csi.example.com")
	ctx := klog.NewContext(context.Background(), logger)
	_, c, _ := service(ctx, t, nil)
	if _, err := c.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, registered := range []bool{true, false} {
		if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: registered}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	for _, want := range []string{`"Kubelet asked for the registration info (GetInfo)"`, `"Kubelet registered the plugin"`, `"Kubelet refused the plugin's registration`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %s line:\n%s", want, log.String())
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, `driver="disk.csi.example.com"`) {
			t.Errorf("a line without the driver: %s", l)
		}
	}
}

// TestStopLetsCallsFinish: Stop lets the calls in progress answer before
// the service stops (grpc.Server.GracefulStop): kubelet gets the answer to
// the notification that stops the plugin, as it would from any call the
// shutdown overtakes. The call is held in progress where the service
// logs, and released only once kubelet's client has seen the server begin
// to stop (its connection leaves READY: a GOAWAY that lets running calls
// finish, or a closed connection that fails them).
func TestStopLetsCallsFinish(t *testing.T) {
	w := &logWriter{hold: `"Kubelet registered the plugin"`, held: make(chan struct{}), release: make(chan struct{})}
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(w))))
	s, c, _ := service(ctx, t, nil)
	answered := make(chan error, 1)
	go func() {
		_, err := c.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: true})
		answered <- err
	}()
	<-w.held // the call is in progress
	stopped := make(chan struct{})
	go func() {
		s.Stop()
		close(stopped)
	}()
	wait := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(wait, d)
		defer cancel()
	}
	if !c.conn.WaitForStateChange(wait, connectivity.Ready) {
		t.Fatal("kubelet's connection stayed ready while the service stopped")
	}
	close(w.release)
	if err := <-answered; err != nil {
		t.Errorf("the call in progress when Stop began = %v, want its answer", err)
	}
	<-stopped
}

// logWriter is where the service's log lines go in a test: it keeps them
// and, with hold set, holds the first line containing hold until release
// is closed, telling held when it does.
type logWriter struct {
	hold          string
	held, release chan struct{}
	once          sync.Once

	mu    sync.Mutex
	lines strings.Builder
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.lines.Write(p)
	w.mu.Unlock()
	if w.hold != "" && strings.Contains(string(p), w.hold) {
		w.once.Do(func() {
			close(w.held)
			<-w.release
		})
	}
	return len(p), nil
}

// String returns the lines written so far.
func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines.String()
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
