package node

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inflight"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Config wires a node service.
type Config struct {
	NodeID     string
	MaxVolumes int64
	Topology   map[string]string

	// Root confines every path from the CO to the kubelet directory.
	Root *winpath.Root
	// FS is what Root.CheckLinks inspects ancestors with; nil means
	// winpath.DefaultFS.
	FS winpath.FS

	// Publisher does the host work every backend shares: publishing,
	// and looking at what is at a request's paths.
	Publisher *backend.Publisher
	Backends  map[contract.Kind]backend.Backend
	Journal   *journal.Journal
	Contract  contract.Options
}

// Server implements csi.NodeServer.
type Server struct {
	csi.UnimplementedNodeServer

	cfg     Config
	volumes *inflight.Set

	mu        sync.Mutex
	published map[string]map[string]publication // volume ID -> target path -> publication

	// ignored holds, by volume ID, the unknown parameter names already
	// logged for the volume (a string of the sorted names): a stage
	// retried by kubelet does not log them again, a volume staged with
	// other keys does. Unstage forgets the volume.
	ignored sync.Map
}

// publication is what the node remembers of a NodePublishVolume, to answer a
// repeated call and enforce SINGLE_NODE_SINGLE_WRITER. It lives in memory
// only: after a restart the links themselves are the record, and a repeat
// is recognised from the link.
type publication struct {
	readOnly bool
	mode     csi.VolumeCapability_AccessMode_Mode
	// The rest of the volume capability (access type mount, as
	// validateCapability requires).
	fsType     string
	mountFlags []string
	mountGroup string
}

func newPublication(c *csi.VolumeCapability, readOnly bool) publication {
	m := c.GetMount()
	return publication{readOnly: readOnly, mode: c.GetAccessMode().GetMode(),
		fsType: m.GetFsType(), mountFlags: m.GetMountFlags(), mountGroup: m.GetVolumeMountGroup()}
}

// sameUse reports whether two publications ask the same of the volume:
// the same access mode, fsType (as the contract reads it, in any case) and
// mount group. Mount flags do not count: the plugin ignores them (a
// Windows mount point takes none), and a PV's mountOptions may be edited
// while pods use it (kubernetes v1.37.2 pkg/apis/core/validation
// ValidatePersistentVolumeUpdate), so that kubelet sends other flags for
// a new pod, or for a pod whose volume it republishes after a restart.
func (p publication) sameUse(q publication) bool {
	return p.mode == q.mode && strings.EqualFold(p.fsType, q.fsType) && p.mountGroup == q.mountGroup
}

// describe names the capability in an error; mount flags may hold
// sensitive values (CSI spec, MountVolume.mount_flags), so only their
// number is given.
func (p publication) describe() string {
	return fmt.Sprintf("access mode %s, fsType %q, %d mount flags", modeName(p.mode), p.fsType, len(p.mountFlags))
}

var _ csi.NodeServer = (*Server)(nil)

// New returns a node service.
func New(cfg Config) *Server {
	if cfg.FS == nil {
		cfg.FS = winpath.DefaultFS
	}
	return &Server{
		cfg:       cfg,
		volumes:   inflight.NewSet(),
		published: make(map[string]map[string]publication),
	}
}

// lockVolume takes the per-volume guard. It is released when the RPC's
// host calls have all ended, which may be after the RPC returned if a call
// outlived its deadline: a retry never overlaps host work still running
// for the same volume (docs/reliability.md, "lock policy").
func (s *Server) lockVolume(ctx context.Context, volumeID string) (context.Context, func(), error) {
	ctx, unlock, ok := s.tryLockVolume(ctx, volumeID)
	if !ok {
		return ctx, nil, status.Errorf(codes.Aborted, "an operation on volume %q is already in progress", volumeID)
	}
	return ctx, unlock, nil
}

// tryLockVolume takes the per-volume guard as lockVolume does, and reports
// false when an operation on the volume is in flight.
func (s *Server) tryLockVolume(ctx context.Context, volumeID string) (context.Context, func(), bool) {
	release, ok := s.volumes.TryAcquire(volumeID)
	if !ok {
		return ctx, nil, false
	}
	ctx, tracker := host.Track(ctx)
	return ctx, func() { tracker.WhenIdle(release) }, true
}

func (s *Server) backendFor(kind contract.Kind) (backend.Backend, error) {
	b, ok := s.cfg.Backends[kind]
	if !ok || b == nil {
		return nil, status.Errorf(codes.Unimplemented, "backend %q is not available on this node", kind)
	}
	return b, nil
}

// NodeGetCapabilities lists what the node service supports.
func (s *Server) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return Capabilities(), nil
}

// Capabilities is NodeGetCapabilities' answer, which depends on nothing
// (the bench's bare floor server answers it too).
func Capabilities() *csi.NodeGetCapabilitiesResponse {
	types := []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
	}
	caps := make([]*csi.NodeServiceCapability, len(types))
	for i, t := range types {
		caps[i] = &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}
}

// NodeGetInfo returns the node's identity, volume limit and topology.
func (s *Server) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	resp := &csi.NodeGetInfoResponse{NodeId: s.cfg.NodeID, MaxVolumesPerNode: s.cfg.MaxVolumes}
	if len(s.cfg.Topology) > 0 {
		seg := make(map[string]string, len(s.cfg.Topology))
		for k, v := range s.cfg.Topology {
			seg[k] = v
		}
		resp.AccessibleTopology = &csi.Topology{Segments: seg}
	}
	return resp, nil
}

// NodeGetStorageHealth is not offered (GET_STORAGE_HEALTH is not advertised).
func (s *Server) NodeGetStorageHealth(context.Context, *csi.NodeGetStorageHealthRequest) (*csi.NodeGetStorageHealthResponse, error) {
	return nil, status.Error(codes.Unimplemented, "NodeGetStorageHealth is not supported")
}
