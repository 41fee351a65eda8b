// Package identity is the CSI Identity service: the plugin's name and
// version, its capabilities, and readiness (Probe). Probe never touches the
// host: it reports whether the host backend finished initialising, so it
// stays cheap under load (livenessprobe calls it every few seconds).
package identity

import (
	"context"
	"sync/atomic"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Server implements csi.IdentityServer.
type Server struct {
	csi.UnimplementedIdentityServer

	name     string
	version  string
	topology bool
	ready    atomic.Bool
	health   atomic.Pointer[func() error]
}

// SetHealthCheck installs a check Probe consults once the plugin is ready:
// a non-nil error (a wedged host executor) makes Probe fail with
// FailedPrecondition, so that livenessprobe restarts the plugin. The check must be cheap and
// must not call the host.
func (s *Server) SetHealthCheck(check func() error) { s.health.Store(&check) }

var _ csi.IdentityServer = (*Server)(nil)

// New returns an identity service that is not ready yet. topology says
// whether NodeGetInfo reports topology, in which case the plugin advertises
// VOLUME_ACCESSIBILITY_CONSTRAINTS.
func New(name, version string, topology bool) *Server {
	return &Server{name: name, version: version, topology: topology}
}

// SetReady marks the plugin ready (or not) for Probe.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Ready reports whether the plugin is initialised and healthy: what /healthz
// answers, and what Probe answers as ready or as an error.
func (s *Server) Ready() bool {
	return s.ready.Load() && s.unhealthy() == nil
}

// unhealthy runs the health check, if one is installed.
func (s *Server) unhealthy() error {
	if check := s.health.Load(); check != nil && *check != nil {
		return (*check)()
	}
	return nil
}

// GetPluginInfo returns the driver name the plugin registers under.
func (s *Server) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: s.name, VendorVersion: s.version}, nil
}

// GetPluginCapabilities advertises no controller service: this is a node
// plugin that pairs with a vendor's controller.
func (s *Server) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	resp := &csi.GetPluginCapabilitiesResponse{}
	if s.topology {
		resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
				Type: csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS,
			}},
		})
	}
	return resp, nil
}

// Probe reports readiness as the CSI spec (v1.13.0, Probe) tells the
// cases apart: still initialising (the host backend has not started) is a
// success with ready=false; initialised but unhealthy (the health check
// fails: a wedged host executor) is FAILED_PRECONDITION ("Plugin not
// healthy"), since the plugin may need restarting; otherwise ready=true.
func (s *Server) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if !s.ready.Load() {
		return &csi.ProbeResponse{Ready: wrapperspb.Bool(false)}, nil
	}
	if err := s.unhealthy(); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "plugin is not healthy: %v", err)
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
