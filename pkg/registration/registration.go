package registration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
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
	// Socket is the registration socket the service is served on, as
	// its messages name it.
	Socket string
	// Registry receives csi_windows_node_kubelet_registered; nil for none.
	Registry metrics.KubeRegistry
}

// Service is kubelet's Registration service for the plugin, and what
// kubelet said of it.
type Service struct {
	registerapi.UnimplementedRegistrationServer

	c    Config
	grpc *grpc.Server

	mu         sync.Mutex
	logger     klog.Logger  // Serve's, which the calls log with
	asked      time.Time    // the last GetInfo
	registered bool         // kubelet confirmed the registration, and has not refused it since
	refusal    string       // kubelet's reason when it refused the registration
	owned      func() error // whether the socket is still the one served (Serve)

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
	s := &Service{c: c, logger: klog.Background(), refused: make(chan string, 1)}
	if c.Registry != nil {
		g := metrics.NewGaugeFunc(&metrics.GaugeOpts{
			Namespace:      namespace,
			Name:           registeredName,
			Help:           "1 once kubelet has confirmed the plugin's own registration (--kubelet-registration) while its registration socket is still the plugin's own, else 0.",
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
	logger := s.logger
	s.mu.Unlock()
	logger.V(4).Info("Kubelet asked for the registration info (GetInfo)")
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
		s.registered, s.refusal = false, reason
		logger := s.logger
		s.mu.Unlock()
		logger.Error(errors.New(reason), "Kubelet refused the plugin's registration; stopping so that kubelet restarts it")
		s.refuseOnce.Do(func() { s.refused <- reason })
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	s.mu.Lock()
	first := !s.registered
	s.registered = true
	logger := s.logger
	s.mu.Unlock()
	if first {
		logger.Info("Kubelet registered the plugin", "socket", s.c.Socket, "kubeletRegistrationPath", s.c.Endpoint)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Refused delivers kubelet's reason the first time it refuses the
// registration.
func (s *Service) Refused() <-chan string { return s.refused }

// Status returns nil once kubelet has confirmed the registration, while
// the registration socket is still the one the service is served on, and
// otherwise an error saying what is missing. kubelet's plugin watcher
// knows the plugin by that socket: once it is gone, kubelet drops the
// driver (it deregisters a plugin whose socket goes), and once another
// process has put its own socket there, kubelet reaches that process, not
// this plugin; in both cases only a new socket, so a restart, registers
// the plugin again. node-driver-registrar's /healthz fails when its socket
// is gone, but not when another process answers GetInfo with the same
// driver name there (node_register.go:103-125, checkLiveRegistrationSocket
// 142-169).
func (s *Service) Status() error {
	s.mu.Lock()
	registered, refusal, asked, owned := s.registered, s.refusal, s.asked, s.owned
	s.mu.Unlock()
	if owned != nil {
		if err := owned(); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the registration socket %s is gone, so kubelet's plugin watcher no longer reaches the plugin; a restart creates it again", s.c.Socket)
		} else if err != nil {
			return fmt.Errorf("the registration socket is no longer the plugin's, so kubelet's plugin watcher reaches another process there, not the plugin (is a node-driver-registrar of the driver running too?): %w", err)
		}
	}
	switch {
	case registered:
		return nil
	case refusal != "":
		return fmt.Errorf("kubelet refused the registration: %s", refusal)
	case asked.IsZero():
		return fmt.Errorf("not registered with kubelet yet: kubelet has not called GetInfo on %s (its plugin watcher watches the %s directory)", s.c.Socket, RegistryDir)
	default:
		return fmt.Errorf("not registered with kubelet yet: kubelet called GetInfo on %s %s ago but has not confirmed the registration (NotifyRegistrationStatus)",
			s.c.Socket, time.Since(asked).Round(time.Second))
	}
}

// Serve serves the service on l until Stop. owned says whether the file
// at the socket's path is still the socket l listens on
// (pkg/server.Socket.Owned): nil while it is, an error wrapping
// fs.ErrNotExist once it is gone, another error once another process put
// its own there. The service logs kubelet's calls with ctx's logger (the
// plugin's, which carries the driver name), as node-driver-registrar
// hands its logger to its handlers (node_register.go:67-71). It returns
// nil after Stop.
func (s *Service) Serve(ctx context.Context, l net.Listener, owned func() error) error {
	s.mu.Lock()
	s.owned, s.logger = owned, klog.FromContext(ctx)
	s.mu.Unlock()
	return s.grpc.Serve(l)
}

// Stop stops serving, after the calls in progress (each is immediate),
// and closes the listener (which removes the socket while it is the
// plugin's, pkg/server.Socket.Listen).
func (s *Service) Stop() { s.grpc.GracefulStop() }
