package plugin

import (
	"context"
	"fmt"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/registration"
	"github.com/wincsi/csi-windows-node/pkg/server"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// registrationFromConfig fills the kubelet registration options of
// --kubelet-registration: the registration socket below the kubelet
// directory, and the endpoint kubelet is told, by default the path of
// --endpoint (the plugin runs on the host, so kubelet dials the path it
// listens on; with the default --endpoint that is
// <kubelet-dir>\plugins\<driver>\csi.sock).
func (o *Options) registrationFromConfig(c *config.Options, root *winpath.Root) error {
	sock, err := registration.SocketPath(root, c.DriverName)
	if err != nil {
		return fmt.Errorf("--kubelet-registration: %w", err)
	}
	if err := server.CheckSocketPath(sock); err != nil {
		return fmt.Errorf("--kubelet-registration: the registration socket below --kubelet-dir, named after --driver-name: %w", err)
	}
	path := c.KubeletRegistrationPath
	if path == "" {
		if path, err = server.ParseEndpoint(c.Endpoint); err != nil {
			return fmt.Errorf("--kubelet-registration: the default of --kubelet-registration-path: --endpoint: %w", err)
		}
	}
	// An absolute path in the node's grammar (the rules of a confinement
	// root), short enough for a socket; kubelet dials it as it is.
	if _, err := winpath.NewRoot(path, o.PathStyle); err != nil {
		return fmt.Errorf("--kubelet-registration-path: %w", err)
	}
	if err := server.CheckSocketPath(path); err != nil {
		return fmt.Errorf("--kubelet-registration-path: kubelet dials it: %w", err)
	}
	o.KubeletRegistration, o.RegistrationSocket, o.KubeletRegistrationPath = true, sock, path
	return nil
}

// newRegistration returns the registration service of o, its metric in
// reg; nil without o.KubeletRegistration.
func newRegistration(o Options, reg metrics.KubeRegistry) (*registration.Service, error) {
	if !o.KubeletRegistration {
		return nil, nil
	}
	return registration.New(registration.Config{
		DriverName: o.DriverName,
		Endpoint:   o.KubeletRegistrationPath,
		Socket:     o.RegistrationSocket,
		Registry:   reg,
	})
}

// ClaimRegistration claims the registration socket of o as the CSI socket
// is claimed, with its lock in the plugin's directory
// (registration.LockPath, server.ClaimLocked): a second plugin of the driver on the node, or
// a node-driver-registrar serving the socket, makes it fail with
// server.ErrEndpointInUse; a stale socket is replaced once Serve listens.
// The socket's directory must not lead out of the kubelet directory
// through a link (winpath.Root.CheckLinks). It returns nil without
// o.KubeletRegistration. The caller releases the claim if it stops before
// Serve (server.Socket.Release).
func ClaimRegistration(ctx context.Context, o Options) (*server.Socket, error) {
	if !o.KubeletRegistration {
		return nil, nil
	}
	root, err := winpath.NewRoot(o.KubeletDir, o.PathStyle)
	if err != nil {
		return nil, fmt.Errorf("kubelet directory: %w", err)
	}
	fsys := o.FS
	if fsys == nil {
		fsys = winpath.DefaultFS
	}
	lock, err := registration.LockPath(root, o.DriverName)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-registration: %w", err)
	}
	for _, p := range []string{o.RegistrationSocket, lock} {
		if err := root.CheckLinks(p, fsys); err != nil {
			return nil, fmt.Errorf("--kubelet-registration: %w", err)
		}
	}
	s, err := server.ClaimLocked(ctx, o.RegistrationSocket, lock)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-registration: registration %w", err)
	}
	return s, nil
}

// registering is the registration service while Serve serves it.
type registering struct {
	svc    *registration.Service
	served chan error // the gRPC server stopped by itself
}

// serveRegistration listens on the claimed registration socket and serves
// the registration service there; nil when the plugin does not register
// itself.
func (p *Plugin) serveRegistration(ctx context.Context, claim *server.Socket) (*registering, error) {
	switch {
	case p.Registration == nil && claim == nil:
		return nil, nil
	case p.Registration == nil:
		claim.Release()
		return nil, fmt.Errorf("a registration socket was claimed but the plugin does not register itself (Options.KubeletRegistration)")
	case claim == nil:
		return nil, fmt.Errorf("--kubelet-registration: the registration socket %s was not claimed (ClaimRegistration)", p.opts.RegistrationSocket)
	}
	l, err := claim.Listen()
	if err != nil {
		claim.Release()
		return nil, fmt.Errorf("--kubelet-registration: %w", err)
	}
	r := &registering{svc: p.Registration, served: make(chan error, 1)}
	go func() {
		if err := r.svc.Serve(ctx, l, claim.Owned); err != nil {
			r.served <- err
		}
	}()
	klog.FromContext(ctx).Info("Serving kubelet's plugin registration", "socket", p.opts.RegistrationSocket,
		"kubeletRegistrationPath", p.opts.KubeletRegistrationPath)
	return r, nil
}

// refused and failed are the registration's ends; nil channels (which
// never deliver) when the plugin does not register itself.
func (r *registering) refused() <-chan string {
	if r == nil {
		return nil
	}
	return r.svc.Refused()
}

func (r *registering) failed() <-chan error {
	if r == nil {
		return nil
	}
	return r.served
}

// stop stops serving the registration and removes its socket, unless
// another process has put its own there (server.Socket.Owned).
func (r *registering) stop() {
	if r != nil {
		r.svc.Stop()
	}
}

// health is what /healthz asks besides readiness: whether kubelet
// confirmed the plugin's own registration; nil when there is none.
func (p *Plugin) health() func() error {
	if p.Registration == nil {
		return nil
	}
	return p.Registration.Status
}
