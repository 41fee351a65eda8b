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

// Listeners are what Serve serves on, bound by the caller: the HTTP
// endpoint before the CSI socket exists, so that a port that is taken stops
// the start-up before a sidecar can reach the plugin, and the socket last
// (server.Claim early, Socket.Listen once the plugin is wired).
type Listeners struct {
	// CSI is the plugin's socket.
	CSI net.Listener
	// HTTP serves /metrics, /healthz and, when enabled, pprof; nil for
	// none (Options.HTTPEndpoint "").
	HTTP net.Listener
}

// Serve serves the identity and node services on ls.CSI (and /metrics,
// /healthz and, when enabled, pprof on ls.HTTP) until ctx ends, then stops
// accepting RPCs and gives the in-flight ones Options.ShutdownGrace to
// finish. Probe answers ready from the moment both listeners serve until
// the shutdown starts. It returns an error when a server stops by itself.
func (p *Plugin) Serve(ctx context.Context, ls Listeners) error {
	logger := klog.FromContext(ctx)
	srv := server.New(server.Config{Identity: p.Identity, Node: p.Node, Metrics: p.Metrics, Logger: logger})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ls.CSI) }()

	var web *server.HTTP
	httpAddr := ""
	if ls.HTTP != nil {
		web = server.NewHTTP(server.HTTPConfig{Listener: ls.HTTP, Metrics: p.Metrics, Ready: p.Identity.Ready, Pprof: p.opts.EnablePprof})
		httpAddr = web.Addr()
		go func() {
			if err := web.Serve(); err != nil {
				logger.Error(err, "HTTP endpoint failed")
			}
		}()
	}
	p.Identity.SetReady(true)
	logger.Info("Ready", "socket", ls.CSI.Addr().String(), "httpEndpoint", httpAddr, "startup", time.Since(p.opts.Started))

	// The orphan sweep's first round runs now, the plugin serving, and so
	// do the preflight checks; both are stopped, and waited for, before the
	// RPCs are.
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	checked := make(chan struct{})
	go func() {
		defer close(swept)
		p.sweeper.Run(sweepCtx)
	}()
	go func() {
		defer close(checked)
		p.runPreflight(sweepCtx)
	}()
	defer func() {
		stopSweep()
		<-swept
		<-checked
	}()

	select {
	case <-ctx.Done():
		logger.Info("Shutting down; waiting for in-flight RPCs", "grace", p.opts.ShutdownGrace)
	case err := <-served:
		return fmt.Errorf("gRPC server stopped: %w", err)
	}
	p.Identity.SetReady(false)
	stopSweep()
	<-swept
	<-checked
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
