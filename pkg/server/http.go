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
	// Addr is host:port to bind.
	Addr string
	// Metrics is served on /metrics; nil serves no /metrics.
	Metrics metrics.CSIMetricsManager
	// Ready backs /healthz.
	Ready func() bool
	// Pprof also serves the Go profiler under /debug/pprof/ (the CSI
	// sidecars' --enable-pprof). Anyone who can reach the endpoint can
	// then profile the process: keep the endpoint on localhost.
	Pprof bool
}

// ListenHTTP binds c.Addr and prepares /metrics (when c.Metrics is not
// nil), /healthz, which answers 200 "ok" while c.Ready() is true and 503
// otherwise (the livenessprobe sidecar answers its /healthz from Probe the
// same way, with 500 for not ready: kubernetes-csi/livenessprobe v2.19.0
// cmd/livenessprobe/main.go), and with c.Pprof /debug/pprof/.
func ListenHTTP(c HTTPConfig) (*HTTP, error) {
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
	ready := c.Ready
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok")) // a failed write means the client left
	})
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on http endpoint %s: %w", c.Addr, err)
	}
	return &HTTP{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, l: l}, nil
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
