package registration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// RegistryDir is kubelet's plugin watcher directory, below its root
// directory: node-driver-registrar's --plugin-registration-path in the
// default deployment (deploy/kubernetes/base/daemonset.yaml).
const RegistryDir = "plugins_registry"

// SocketPath returns the registration socket of driver below the kubelet
// directory root: <root>\plugins_registry\<driver>-reg.sock, the file
// node-driver-registrar v2.17.0 creates (buildSocketPath,
// cmd/csi-node-driver-registrar/node_register.go:89-91, names it
// "<plugin-registration-path>/<driver>-reg.sock"). The path is confined
// below root like every path of the plugin (winpath.Root.Resolve).
func SocketPath(root *winpath.Root, driver string) (string, error) {
	p, err := root.Resolve(root.Join(RegistryDir, driver+"-reg.sock"))
	if err != nil {
		return "", fmt.Errorf("registration socket of %q: %w", driver, err)
	}
	return p, nil
}

// LockPath returns the lock file that claims driver's registration socket
// (pkg/server.ClaimLocked): <root>\plugins\<driver>\registration.lock, in
// the plugin's own directory. It cannot lie beside the socket: kubelet's
// plugin watcher takes every file in plugins_registry for a socket, and on
// Windows tells one apart only by dialling it, for up to 4 s per file
// (IsUnixDomainSocket, kubernetes/kubernetes pkg/kubelet/util/util_windows.go
// at commit 025f2834a128, kubernetes#104584), when it starts, when the
// file appears and on every scan of its connection monitor.
func LockPath(root *winpath.Root, driver string) (string, error) {
	p, err := root.Resolve(root.Join("plugins", driver, "registration.lock"))
	if err != nil {
		return "", fmt.Errorf("registration lock of %q: %w", driver, err)
	}
	return p, nil
}

// SupportedVersions returns what GetInfo answers as the supported
// versions: node-driver-registrar v2.17.0's list
// (cmd/csi-node-driver-registrar/main.go:63-64), the CSI versions kubelet's
// CSI handler accepts (a major version of at most 1).
func SupportedVersions() []string { return []string{"1.0.0"} }

// The metric (docs/metrics.md).
const (
	namespace      = "csi_windows_node"
	registeredName = "kubelet_registered"
)

// Config configures the service.
type Config struct {
	// DriverName is the name GetInfo answers: --driver-name, which is what
	// the plugin's GetPluginInfo answers and so what node-driver-registrar
	// would answer (it asks GetPluginInfo, main.go:175, and answers that
	// name, node_register.go:43).
	DriverName string
	// Endpoint is the CSI socket as kubelet must dial it
	// (--kubelet-registration-path), answered as given, as the registrar
	// answers its --kubelet-registration-path (node_register.go:43).
	Endpoint string
	// Socket is the registration socket the service is served on; once
	// kubelet confirmed the registration, Status fails when it is gone.
	Socket string
	// Registry receives csi_windows_node_kubelet_registered; nil for none.
	Registry metrics.KubeRegistry
	// Logger is what the service logs with; zero means klog.Background().
	Logger klog.Logger
}

// Service is kubelet's Registration service for the plugin, and what
// kubelet said of it.
type Service struct {
	registerapi.UnimplementedRegistrationServer

	c      Config
	logger klog.Logger
	grpc   *grpc.Server

	mu         sync.Mutex
	asked      time.Time // the last GetInfo
	registered bool      // kubelet confirmed the registration

	refused    chan string // kubelet's reason, once
	refuseOnce sync.Once
}

var _ registerapi.RegistrationServer = (*Service)(nil)

// New returns the service for c, with its metric registered in
// c.Registry.
func New(c Config) (*Service, error) {
	if c.DriverName == "" || c.Endpoint == "" || c.Socket == "" {
		return nil, errors.New("registration: the driver name, the endpoint and the socket are all required")
	}
	s := &Service{c: c, logger: c.Logger, refused: make(chan string, 1)}
	if s.logger.GetSink() == nil {
		s.logger = klog.Background()
	}
	if c.Registry != nil {
		g := metrics.NewGaugeFunc(&metrics.GaugeOpts{
			Namespace:      namespace,
			Name:           registeredName,
			Help:           "1 while kubelet has confirmed the plugin's own registration (--kubelet-registration) and its registration socket is in place, else 0.",
			StabilityLevel: metrics.ALPHA,
		}, func() float64 {
			if s.Status() != nil {
				return 0
			}
			return 1
		})
		if err := c.Registry.Registerer().Register(g); err != nil {
			return nil, fmt.Errorf("register %s_%s: %w", namespace, registeredName, err)
		}
	}
	s.grpc = grpc.NewServer()
	registerapi.RegisterRegistrationServer(s.grpc, s)
	return s, nil
}

// GetInfo answers what node-driver-registrar v2.17.0 answers
// (cmd/csi-node-driver-registrar/main.go:88-98): type CSIPlugin, the
// driver name, the endpoint and the supported versions. It logs at V(4),
// as the registrar does (main.go:90): kubelet may call it every 10 s.
func (s *Service) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	s.mu.Lock()
	s.asked = time.Now()
	s.mu.Unlock()
	s.logger.V(4).Info("Kubelet asked for the registration info (GetInfo)")
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              s.c.DriverName,
		Endpoint:          s.c.Endpoint,
		SupportedVersions: SupportedVersions(),
	}, nil
}

// NotifyRegistrationStatus takes kubelet's verdict. Registered, the plugin
// counts as registered from now on. Refused, the reason is logged and
// Refused delivers it: node-driver-registrar v2.17.0 logs it and exits
// with status 1 right in the handler (main.go:100-106) so that kubelet
// restarts its container; the plugin stops through its usual shutdown
// instead (pkg/plugin.Serve), and exits with status 1 too.
func (s *Service) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !st.GetPluginRegistered() {
		reason := st.GetError()
		if reason == "" {
			reason = "kubelet gave no reason"
		}
		s.mu.Lock()
		s.registered = false
		s.mu.Unlock()
		s.logger.Error(errors.New(reason), "Kubelet refused the plugin's registration; stopping so that kubelet restarts it")
		s.refuseOnce.Do(func() { s.refused <- reason })
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	s.mu.Lock()
	first := !s.registered
	s.registered = true
	s.mu.Unlock()
	if first {
		s.logger.Info("Kubelet registered the plugin", "socket", s.c.Socket, "kubeletRegistrationPath", s.c.Endpoint)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Refused delivers kubelet's reason the first time it refuses the
// registration.
func (s *Service) Refused() <-chan string { return s.refused }

// Status returns nil while kubelet has confirmed the registration and the
// registration socket is still there, and otherwise an error saying what
// is missing. A socket removed after the registration means kubelet's
// plugin watcher has dropped the driver (it deregisters a plugin whose
// socket goes); only a new socket, so a restart, registers it again.
// node-driver-registrar's /healthz fails in that case too
// (node_register.go:103-125: the socket must exist and answer GetInfo).
func (s *Service) Status() error {
	s.mu.Lock()
	registered, asked := s.registered, s.asked
	s.mu.Unlock()
	switch {
	case !registered && asked.IsZero():
		return fmt.Errorf("not registered with kubelet yet: kubelet has not called GetInfo on %s (its plugin watcher watches the %s directory)", s.c.Socket, RegistryDir)
	case !registered:
		return fmt.Errorf("not registered with kubelet yet: kubelet called GetInfo on %s %s ago but has not confirmed the registration (NotifyRegistrationStatus)",
			s.c.Socket, time.Since(asked).Round(time.Second))
	}
	if _, err := os.Lstat(s.c.Socket); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the registration socket %s is gone, so kubelet has dropped the driver; a restart registers it again", s.c.Socket)
	} else if err != nil {
		return fmt.Errorf("registration socket: %w", err)
	}
	return nil
}

// Serve serves the service on l until Stop. It returns nil after Stop.
func (s *Service) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// Stop stops serving, after the calls in progress (each is immediate),
// and closes the listener, which removes the socket.
func (s *Service) Stop() { s.grpc.GracefulStop() }
