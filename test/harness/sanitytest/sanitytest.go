// Package sanitytest holds what the csi-sanity runs share: a minimal
// in-test controller that plays a vendor's controller plugin against the
// simulated host, an identity wrapper that advertises the controller service
// in library mode, and the serving of both on a unix socket.
package sanitytest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Attacher is what the controller does on ControllerPublishVolume: attach
// the volume's disk to the (simulated) node and say how the node finds it.
type Attacher interface {
	Attach(volumeID string) (publishContext map[string]string, err error)
	Detach(volumeID string) error
}

// Controller is a minimal controller plugin: it creates volumes by name
// (parameters become the volume context, plus Extra's keys) and, when an
// Attacher is set, attaches them on ControllerPublishVolume.
type Controller struct {
	csi.UnimplementedControllerServer

	// Extra adds volume-context keys per volume (e.g. an SMB subDir).
	Extra    func(volumeID string) (map[string]string, error)
	Attacher Attacher

	mu      sync.Mutex
	volumes map[string]*csi.Volume // by name
}

var _ csi.ControllerServer = (*Controller)(nil)

// VolumeID derives a stable volume ID from a name.
func VolumeID(name string) string {
	sum := sha1.Sum([]byte(name))
	return "vol-" + hex.EncodeToString(sum[:8])
}

// CreateVolume implements csi.ControllerServer.
func (c *Controller) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.volumes == nil {
		c.volumes = map[string]*csi.Volume{}
	}
	if v, ok := c.volumes[req.GetName()]; ok {
		return &csi.CreateVolumeResponse{Volume: v}, nil
	}
	id := VolumeID(req.GetName())
	vctx := map[string]string{}
	for k, v := range req.GetParameters() {
		vctx[k] = v
	}
	if c.Extra != nil {
		extra, err := c.Extra(id)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "prepare volume %s: %v", id, err)
		}
		for k, v := range extra {
			vctx[k] = v
		}
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = 1 << 30
	}
	v := &csi.Volume{VolumeId: id, CapacityBytes: size, VolumeContext: vctx}
	c.volumes[req.GetName()] = v
	return &csi.CreateVolumeResponse{Volume: v}, nil
}

// DeleteVolume implements csi.ControllerServer.
func (c *Controller) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, v := range c.volumes {
		if v.GetVolumeId() == req.GetVolumeId() {
			delete(c.volumes, name)
		}
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ControllerPublishVolume implements csi.ControllerServer.
func (c *Controller) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if c.Attacher == nil {
		return nil, status.Error(codes.Unimplemented, "no attacher")
	}
	pc, err := c.Attacher.Attach(req.GetVolumeId())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "attach %s: %v", req.GetVolumeId(), err)
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: pc}, nil
}

// ControllerUnpublishVolume implements csi.ControllerServer.
func (c *Controller) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if c.Attacher == nil {
		return nil, status.Error(codes.Unimplemented, "no attacher")
	}
	if err := c.Attacher.Detach(req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.Internal, "detach %s: %v", req.GetVolumeId(), err)
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// ControllerGetCapabilities implements csi.ControllerServer.
func (c *Controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	types := []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	if c.Attacher != nil {
		types = append(types, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	}
	var caps []*csi.ControllerServiceCapability
	for _, t := range types {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// ValidateVolumeCapabilities implements csi.ControllerServer.
func (c *Controller) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

// WithController wraps an identity service so that it also advertises the
// controller service: in library mode csi-sanity then runs its full
// lifecycle specs ("should work", "should be idempotent"). Test use only.
type WithController struct {
	csi.IdentityServer
}

// GetPluginCapabilities adds CONTROLLER_SERVICE.
func (w WithController) GetPluginCapabilities(ctx context.Context, req *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	resp, err := w.IdentityServer.GetPluginCapabilities(ctx, req)
	if err != nil {
		return nil, err
	}
	resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{Type: &csi.PluginCapability_Service_{
		Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}})
	return resp, nil
}

// Serve serves the given services on a unix socket in dir and returns its
// endpoint; the server stops at test cleanup.
func Serve(t testing.TB, sock string, ids csi.IdentityServer, ctl csi.ControllerServer, ns csi.NodeServer) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if ids != nil {
		csi.RegisterIdentityServer(s, ids)
	}
	if ctl != nil {
		csi.RegisterControllerServer(s, ctl)
	}
	if ns != nil {
		csi.RegisterNodeServer(s, ns)
	}
	go func() { _ = s.Serve(l) }() // ends with Stop at cleanup
	t.Cleanup(s.Stop)
	return "unix://" + sock
}

// LUNs hands out LUN numbers.
type LUNs struct {
	mu   sync.Mutex
	next uint32
	by   map[string]uint32
}

// For returns the volume's LUN, allocating one the first time.
func (l *LUNs) For(volumeID string) uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]uint32{}
		l.next = 1
	}
	if n, ok := l.by[volumeID]; ok {
		return n
	}
	n := l.next
	l.next++
	l.by[volumeID] = n
	return n
}

// Itoa formats a LUN.
func Itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// Errorf is fmt.Errorf, re-exported for brevity in attachers.
var Errorf = fmt.Errorf
