package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
)

// HTTP serves /metrics and /healthz.
type HTTP struct {
	srv *http.Server
	l   net.Listener
}

// ListenHTTP binds addr (host:port) and prepares /metrics (when mm is not
// nil) and /healthz, which answers 200 "ok" while ready() is true and 503
// otherwise, like the livenessprobe sidecar does from Probe.
func ListenHTTP(addr string, mm metrics.CSIMetricsManager, ready func() bool) (*HTTP, error) {
	mux := http.NewServeMux()
	if mm != nil {
		mm.RegisterToServer(mux, "/metrics")
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok")) // a failed write means the client left
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on http endpoint %s: %w", addr, err)
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
