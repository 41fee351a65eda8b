package server

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
)

func startHTTP(t *testing.T, c HTTPConfig) string {
	t.Helper()
	l, err := BindHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.Listener = l
	h := NewHTTP(c)
	done := make(chan error, 1)
	go func() { done <- h.Serve() }()
	t.Cleanup(func() {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + h.Addr()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHTTPEndpoints(t *testing.T) {
	var ready atomic.Bool
	tests := []struct {
		name     string
		pprof    bool
		metrics  bool
		path     string
		ready    bool
		wantCode int
	}{
		{"healthz ready", false, true, "/healthz", true, http.StatusOK},
		{"healthz not ready", false, true, "/healthz", false, http.StatusServiceUnavailable},
		{"metrics", false, true, "/metrics", true, http.StatusOK},
		{"no metrics manager", false, false, "/metrics", true, http.StatusNotFound},
		{"pprof off", false, true, "/debug/pprof/", true, http.StatusNotFound},
		{"pprof on", true, true, "/debug/pprof/", true, http.StatusOK},
		{"pprof cmdline", true, true, "/debug/pprof/cmdline", true, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := HTTPConfig{Ready: ready.Load, Pprof: tt.pprof}
			if tt.metrics {
				c.Metrics = metrics.NewCSIMetricsManagerForPlugin("test.csi.example.com")
			}
			base := startHTTP(t, c)
			ready.Store(tt.ready)
			if code, body := get(t, base+tt.path); code != tt.wantCode {
				t.Errorf("GET %s = %d (%q), want %d", tt.path, code, body, tt.wantCode)
			}
		})
	}
}
