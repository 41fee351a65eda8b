package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
)

// HTTP serves /metrics and /healthz.
type HTTP struct {
	srv *http.Server
	l   net.Listener
}

// HTTPConfig configures the HTTP endpoint.
type HTTPConfig struct {
	// Listener is the bound endpoint (BindHTTP).
	Listener net.Listener
	// Metrics is served on /metrics; nil serves no /metrics.
	Metrics metrics.CSIMetricsManager
	// Ready backs /healthz.
	Ready func() bool
	// Health, when set, is asked once Ready is true: while it fails,
	// /healthz answers 503 with its error as the body (the plugin's own
	// kubelet registration, pkg/registration).
	Health func() error
	// Pprof also serves the Go profiler under /debug/pprof/ (the CSI
	// sidecars' --enable-pprof). Anyone who can reach the endpoint can
	// then profile the process: keep the endpoint on localhost.
	Pprof bool
}

// ErrHTTPPortInUse means another process listens on the HTTP endpoint's
// port.
var ErrHTTPPortInUse = errors.New("another process already listens on this port")

// BindHTTP binds the HTTP endpoint addr (host:port). The plugin binds it
// before it listens on its CSI socket, so that a port that is taken stops
// the start-up before a sidecar can reach the plugin.
func BindHTTP(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if addrInUse(err) {
		return nil, fmt.Errorf("http endpoint %s: %w; give --http-endpoint a free port", addr, ErrHTTPPortInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on http endpoint %s: %w", addr, err)
	}
	return l, nil
}

// NewHTTP prepares the endpoint on c.Listener: /metrics (when c.Metrics is
// not nil), /healthz, which answers 200 "ok" while c.Ready() is true and
// c.Health (if set) passes, and 503 otherwise (the livenessprobe sidecar
// answers its /healthz from Probe the same way, with 500 for not ready:
// kubernetes-csi/livenessprobe v2.19.0 cmd/livenessprobe/main.go), and
// with c.Pprof /debug/pprof/.
func NewHTTP(c HTTPConfig) *HTTP {
	mux := http.NewServeMux()
	if c.Metrics != nil {
		c.Metrics.RegisterToServer(mux, "/metrics")
	}
	if c.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ready, health := c.Ready, c.Health
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if health != nil {
			if err := health(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok")) // a failed write means the client left
	})
	return &HTTP{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, l: c.Listener}
}

// Addr returns the bound address.
func (h *HTTP) Addr() string { return h.l.Addr().String() }

// Serve serves until Shutdown.
func (h *HTTP) Serve() error {
	if err := h.srv.Serve(h.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the HTTP server.
func (h *HTTP) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }
