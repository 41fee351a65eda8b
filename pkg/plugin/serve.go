package plugin

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/server"
)

// httpShutdownTimeout bounds the shutdown of the HTTP endpoint.
const httpShutdownTimeout = 5 * time.Second

// Serve serves the identity and node services on l (and /metrics,
// /healthz and, when enabled, pprof on Options.HTTPEndpoint) until ctx
// ends, then stops accepting RPCs and gives the in-flight ones
// Options.ShutdownGrace to finish. Probe answers ready from the moment
// both listeners serve until the shutdown starts. It returns an error when
// a server cannot start or stops by itself.
func (p *Plugin) Serve(ctx context.Context, l net.Listener) error {
	logger := klog.FromContext(ctx)
	srv := server.New(server.Config{Identity: p.Identity, Node: p.Node, Metrics: p.Metrics, Logger: logger})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	var web *server.HTTP
	if p.opts.HTTPEndpoint != "" {
		var err error
		web, err = server.ListenHTTP(server.HTTPConfig{Addr: p.opts.HTTPEndpoint, Metrics: p.Metrics, Ready: p.Identity.Ready, Pprof: p.opts.EnablePprof})
		if err != nil {
			srv.Stop(0)
			return err
		}
		go func() {
			if err := web.Serve(); err != nil {
				logger.Error(err, "HTTP endpoint failed")
			}
		}()
	}
	p.Identity.SetReady(true)
	logger.Info("Ready", "socket", l.Addr().String(), "httpEndpoint", p.opts.HTTPEndpoint, "startup", time.Since(p.opts.Started))

	select {
	case <-ctx.Done():
		logger.Info("Shutting down; waiting for in-flight RPCs", "grace", p.opts.ShutdownGrace)
	case err := <-served:
		return fmt.Errorf("gRPC server stopped: %w", err)
	}
	p.Identity.SetReady(false)
	srv.Stop(p.opts.ShutdownGrace)
	if web != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownTimeout)
		defer cancel()
		if err := web.Shutdown(sctx); err != nil {
			logger.Error(err, "HTTP endpoint did not stop cleanly")
		}
	}
	return nil
}
