package server

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"
)

// Config wires a server.
type Config struct {
	Identity csi.IdentityServer
	Node     csi.NodeServer
	// Metrics records csi_plugin_operations_seconds; nil disables it.
	Metrics metrics.CSIMetricsManager
	// Logger is what every RPC's log lines derive from (the plugin's,
	// carrying the driver name); zero means klog.Background(). gRPC hands
	// handlers a context of its own, without the caller's logger.
	Logger klog.Logger
}

// Server is the plugin's gRPC server.
type Server struct {
	grpc    *grpc.Server
	running *running
}

// New returns a server with the identity and node services registered.
func New(cfg Config) *Server {
	r := newRunning()
	ics := append([]grpc.UnaryServerInterceptor{r.track}, interceptors(cfg.Metrics)...)
	if cfg.Logger.GetSink() != nil {
		ics = append([]grpc.UnaryServerInterceptor{withLogger(cfg.Logger)}, ics...)
	}
	g := grpc.NewServer(grpc.ChainUnaryInterceptor(ics...))
	csi.RegisterIdentityServer(g, cfg.Identity)
	csi.RegisterNodeServer(g, cfg.Node)
	return &Server{grpc: g, running: r}
}

// Running returns the RPCs whose handlers run now, oldest first.
func (s *Server) Running() []RPC { return s.running.list() }

// interceptors returns the chain every RPC goes through, outermost first:
// a panic is recovered innermost, so the RPC still gets its log line and
// its metrics sample. mm may be nil.
func interceptors(mm metrics.CSIMetricsManager) []grpc.UnaryServerInterceptor {
	ics := []grpc.UnaryServerInterceptor{logRPC}
	if mm != nil {
		ics = append(ics, recordMetrics(mm))
	}
	return append(ics, recoverPanics)
}

// Serve serves l until Stop.
func (s *Server) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// Stop stops accepting RPCs and waits for in-flight ones to finish, at most
// grace; then it cancels whatever is still running and returns those RPCs
// (none when all finished in time). The handlers of cancelled RPCs still
// undo their work (a cancelled stage rolls back on a context of its own):
// Stop waits for them to return, at most drain more.
func (s *Server) Stop(grace, drain time.Duration) (cancelled []RPC) {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	}
	cancelled = s.Running()
	s.grpc.Stop()
	<-done
	d := time.NewTimer(drain)
	defer d.Stop()
	select {
	case <-s.running.drained():
	case <-d.C:
	}
	return cancelled
}

// mutating lists the RPCs that change host state; each gets one V(2) line.
var mutating = map[string]bool{
	"NodeStageVolume":     true,
	"NodeUnstageVolume":   true,
	"NodePublishVolume":   true,
	"NodeUnpublishVolume": true,
	"NodeExpandVolume":    true,
}

// quiet lists RPCs sidecars call often; their bodies log only at V(6).
var quiet = map[string]bool{
	"Probe":               true,
	"NodeGetCapabilities": true,
	"GetPluginInfo":       true,
}

type volumeRequest interface{ GetVolumeId() string }

func shortMethod(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// withLogger puts base into the context of every RPC, for logRPC to derive
// the RPC's logger from.
func withLogger(base klog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return handler(klog.NewContext(ctx, base), req)
	}
}

// logRPC puts a contextual logger carrying the method and volume ID into
// ctx and logs each RPC: bodies through sanitized and
// protosanitizer.StripSecrets only.
func logRPC(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := shortMethod(info.FullMethod)
	logger := klog.FromContext(ctx).WithValues("method", method)
	if v, ok := req.(volumeRequest); ok && v.GetVolumeId() != "" {
		logger = logger.WithValues("volumeID", v.GetVolumeId())
	}
	ctx = klog.NewContext(ctx, logger)
	bodyLevel := klog.Level(5)
	if quiet[method] {
		bodyLevel = 6
	}
	if l := logger.V(int(bodyLevel)); l.Enabled() {
		l.Info("Request", "request", sanitized(req))
	}
	start := time.Now()
	resp, err := handler(ctx, req)
	d := time.Since(start)
	code := status.Code(err)
	switch {
	case mutating[method]:
		if err != nil {
			logger.V(2).Info("Completed", "duration", d, "code", code.String(), "err", status.Convert(err).Message())
		} else {
			logger.V(2).Info("Completed", "duration", d, "code", code.String())
		}
	case err != nil:
		logger.V(4).Info("Completed", "duration", d, "code", code.String(), "err", status.Convert(err).Message())
	}
	if l := logger.V(int(bodyLevel)); l.Enabled() && err == nil {
		l.Info("Response", "response", protosanitizer.StripSecrets(resp))
	}
	return resp, err
}

// sanitized is what logRPC logs of a request: its secrets stripped
// (protosanitizer), and the mount flags of its volume capability too, which
// "MAY contain sensitive information" that "the CO and the Plugin MUST NOT
// leak" (CSI spec v1.13.0, VolumeCapability.MountVolume.mount_flags). The
// request itself is not changed.
func sanitized(req any) fmt.Stringer {
	type withCapability interface {
		proto.Message
		GetVolumeCapability() *csi.VolumeCapability
	}
	if r, ok := req.(withCapability); ok && len(r.GetVolumeCapability().GetMount().GetMountFlags()) > 0 {
		c := proto.Clone(r).(withCapability)
		flags := c.GetVolumeCapability().GetMount().MountFlags
		for i := range flags {
			flags[i] = "***stripped***"
		}
		req = c
	}
	return protosanitizer.StripSecrets(req)
}

// recoverPanics turns a panic in a handler into Internal instead of a crash.
func recoverPanics(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			klog.FromContext(ctx).Error(fmt.Errorf("panic: %v", r), "RPC handler panicked",
				"method", shortMethod(info.FullMethod), "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "internal error in %s", shortMethod(info.FullMethod))
		}
	}()
	return handler(ctx, req)
}

func recordMetrics(mm metrics.CSIMetricsManager) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		mm.RecordMetrics(info.FullMethod, err, time.Since(start))
		return resp, err
	}
}
