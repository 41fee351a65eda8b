package server

import (
	"context"
	"errors"
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

// TestHealthzReason: with a Health check, /healthz of a ready plugin
// answers 503 with the check's error as the body until it passes; a plugin
// that is not ready says so first.
func TestHealthzReason(t *testing.T) {
	var ready atomic.Bool
	var reason atomic.Pointer[string]
	health := func() error {
		if r := reason.Load(); r != nil {
			return errors.New(*r)
		}
		return nil
	}
	base := startHTTP(t, HTTPConfig{Ready: ready.Load, Health: health})
	waiting := "not registered with kubelet yet"
	reason.Store(&waiting)
	for _, tt := range []struct {
		ready    bool
		reason   *string
		wantCode int
		wantBody string
	}{
		{false, &waiting, http.StatusServiceUnavailable, "not ready\n"},
		{true, &waiting, http.StatusServiceUnavailable, waiting + "\n"},
		{true, nil, http.StatusOK, "ok"},
	} {
		ready.Store(tt.ready)
		reason.Store(tt.reason)
		if code, body := get(t, base+"/healthz"); code != tt.wantCode || body != tt.wantBody {
			t.Errorf("ready=%t reason=%v: /healthz = %d %q, want %d %q", tt.ready, tt.reason != nil, code, body, tt.wantCode, tt.wantBody)
		}
	}
}
