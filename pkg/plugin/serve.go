package plugin

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
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
	// Registration is the claimed registration socket
	// (ClaimRegistration), listened on once the CSI socket is served; nil
	// unless Options.KubeletRegistration.
	Registration *server.Socket
}

// Serve serves the identity and node services on ls.CSI (and /metrics,
// /healthz and, when enabled, pprof on ls.HTTP) until ctx ends, then stops
// accepting RPCs and gives the in-flight ones Options.ShutdownGrace to
// finish. Probe answers ready from the moment both listeners serve until
// the shutdown starts. With Options.KubeletRegistration it then serves
// kubelet's plugin registration on ls.Registration, and /healthz also
// waits for kubelet's confirmation; at shutdown the registration socket
// goes first, as node-driver-registrar removes its socket on SIGTERM
// (node_register.go:179-190), but only while it is still the plugin's:
// the registrar removes whatever file is at the path, even another
// process's live socket, and the plugin leaves one another process has
// put there (server.Socket.Owned). It returns an error when a server stops by
// itself, and when kubelet refuses the registration (after the same
// graceful shutdown), so that the process exits non-zero and kubelet
// restarts it.
func (p *Plugin) Serve(ctx context.Context, ls Listeners) error {
	logger := klog.FromContext(ctx)
	logStateDir(ctx, p.journal)
	srv := server.New(server.Config{Identity: p.Identity, Node: p.served, Metrics: p.Metrics, Logger: logger})
	p.serving.Store(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ls.CSI) }()

	var web *server.HTTP
	httpAddr := ""
	if ls.HTTP != nil {
		web = server.NewHTTP(server.HTTPConfig{Listener: ls.HTTP, Metrics: p.Metrics, Ready: p.Identity.Ready, Health: p.health(), Pprof: p.opts.EnablePprof})
		httpAddr = web.Addr()
		go func() {
			if err := web.Serve(); err != nil {
				logger.Error(err, "HTTP endpoint failed")
			}
		}()
	}
	// Kubelet calls NodeGetInfo on the CSI socket right after GetInfo, so
	// the registration socket appears only once that is served.
	reg, err := p.serveRegistration(ctx, ls.Registration)
	if err != nil {
		p.stop(ctx, srv, web)
		return err
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

	var failure error
	select {
	case <-ctx.Done():
		logger.Info("Shutting down; waiting for in-flight RPCs (a second SIGINT or SIGTERM ends the plugin at once)",
			"grace", p.opts.ShutdownGrace, "rpcs", rpcNames(srv.Running()))
	case err := <-served:
		reg.stop()
		return fmt.Errorf("gRPC server stopped: %w", err)
	case err := <-reg.failed():
		failure = fmt.Errorf("kubelet registration server stopped: %w", err)
		logger.Error(failure, "Shutting down; waiting for in-flight RPCs", "grace", p.opts.ShutdownGrace, "rpcs", rpcNames(srv.Running()))
	case reason := <-reg.refused():
		failure = fmt.Errorf("kubelet refused the plugin's registration: %s", reason)
		logger.Info("Shutting down; waiting for in-flight RPCs", "grace", p.opts.ShutdownGrace, "rpcs", rpcNames(srv.Running()))
	}
	p.Identity.SetReady(false)
	reg.stop()
	stopSweep()
	<-swept
	<-checked
	p.stop(ctx, srv, web)
	return failure
}

// stop ends the serving Serve started: the RPCs in flight get
// Options.ShutdownGrace, those still running are cancelled and given the
// time to undo what they started (backend.CleanupTimeout), then the HTTP
// endpoint stops.
func (p *Plugin) stop(ctx context.Context, srv *server.Server, web *server.HTTP) {
	logger := klog.FromContext(ctx)
	if cancelled := srv.Stop(p.opts.ShutdownGrace, backend.CleanupTimeout); len(cancelled) > 0 {
		logger.Info("Shutdown grace over; cancelled the RPCs still running, which undid what they had started",
			"grace", p.opts.ShutdownGrace, "rpcs", rpcNames(cancelled))
		if left := srv.Running(); len(left) > 0 {
			logger.Info("RPCs still undoing their work when the plugin stops; kubelet retries them", "rpcs", rpcNames(left))
		}
	}
	if web != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownTimeout)
		defer cancel()
		if err := web.Shutdown(sctx); err != nil {
			klog.FromContext(ctx).Error(err, "HTTP endpoint did not stop cleanly")
		}
	}
}

// rpcNames names RPCs for a log line: "NodeStageVolume vol-1 (12s)".
func rpcNames(rpcs []server.RPC) []string {
	out := make([]string, len(rpcs))
	for i, r := range rpcs {
		out[i] = r.String()
	}
	return out
}

// haltTimeout bounds Halt's wait for the journal writes in progress (each
// a small local file).
const haltTimeout = 5 * time.Second

// Halt readies the plugin for an exit that does not wait for the RPCs in
// flight (a second SIGINT or SIGTERM during the shutdown grace): it waits
// for the stage journal's writes in progress and lets no other begin
// (journal.Seal), so that every record is whole on disk. It returns the
// RPCs still running, which the exit abandons: kubelet retries them, and a
// stage cut short leaves its intent record, which the retry, the unstage
// or the orphan sweep finishes.
func (p *Plugin) Halt(ctx context.Context) ([]string, error) {
	var rpcs []string
	if srv := p.serving.Load(); srv != nil {
		rpcs = rpcNames(srv.Running())
	}
	ctx, cancel := context.WithTimeout(ctx, haltTimeout)
	defer cancel()
	return rpcs, p.journal.Seal(ctx)
}
