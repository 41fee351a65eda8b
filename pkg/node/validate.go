package node

import (
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// maxIDLength bounds volume IDs; CSI's general string limit is 128 bytes,
// but some COs pass longer handles, so only absurd sizes are refused.
const maxIDLength = 4096

func requireVolumeID(id string) error {
	switch {
	case id == "":
		return invalid("volume_id is required")
	case len(id) > maxIDLength:
		return invalid("volume_id is %d bytes long, more than %d", len(id), maxIDLength)
	}
	return nil
}

// resolvePath confines a path the CO sent to the kubelet directory and
// checks that no link among its existing ancestors leads out of it. It runs
// before any host call.
func (s *Server) resolvePath(field, p string) (string, error) {
	if p == "" {
		return "", invalid("%s is required", field)
	}
	r, err := s.cfg.Root.Resolve(p)
	if err != nil {
		return "", invalid("%s: %v", field, err)
	}
	if err := s.cfg.Root.CheckLinks(r, s.cfg.FS); err != nil {
		return "", invalid("%s: %v", field, err)
	}
	return r, nil
}

// resolveLookupPath is resolvePath for the RPCs that look a volume up by
// path (stats, expand, health): a well-formed path outside the kubelet
// directory, or a relative one, cannot be where the volume is published, so
// it answers NotFound as the spec asks ("volume is not mounted on the
// specified path"); malformed or hostile paths stay InvalidArgument.
func (s *Server) resolveLookupPath(field, p string) (string, error) {
	if p == "" {
		return "", invalid("%s is required", field)
	}
	r, err := s.cfg.Root.Resolve(p)
	if errors.Is(err, winpath.ErrNotAbsolute) || errors.Is(err, winpath.ErrOutsideRoot) {
		return "", status.Errorf(codes.NotFound, "%s %q is not a path where this node publishes volumes", field, p)
	}
	if err != nil {
		return "", invalid("%s: %v", field, err)
	}
	if err := s.cfg.Root.CheckLinks(r, s.cfg.FS); err != nil {
		return "", invalid("%s: %v", field, err)
	}
	return r, nil
}

// validateCapability checks a volume capability and returns its access mode.
func validateCapability(c *csi.VolumeCapability) (csi.VolumeCapability_AccessMode_Mode, error) {
	if c == nil {
		return 0, invalid("volume_capability is required")
	}
	if c.GetBlock() != nil {
		return 0, invalid("volume_capability: raw block volumes are not supported on Windows nodes")
	}
	if c.GetMount() == nil {
		return 0, invalid("volume_capability: access_type must be mount")
	}
	mode := c.GetAccessMode().GetMode()
	if _, known := csi.VolumeCapability_AccessMode_Mode_name[int32(mode)]; !known ||
		mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		return 0, invalid("volume_capability: access_mode %v is not supported", mode)
	}
	return mode, nil
}

// kindServes fails unless volumes of kind can be used with mode: disk and
// iSCSI volumes hold NTFS or ReFS, which several nodes cannot write. The
// plugin supports the mode (for SMB volumes), the volume does not: "Exceeds
// capabilities", FAILED_PRECONDITION (CSI spec v1.13.0, NodeStageVolume
// and NodePublishVolume Errors), where a field no volume of this plugin
// takes (a block access type) is InvalidArgument.
func kindServes(kind contract.Kind, mode csi.VolumeCapability_AccessMode_Mode) error {
	if kind != contract.KindSMB && multiNodeWriter(mode) {
		return status.Errorf(codes.FailedPrecondition,
			"volume_capability: access mode %s is not supported for %s volumes: NTFS and ReFS are not cluster file systems",
			modeName(mode), kind)
	}
	return nil
}

// publishedOnce reports whether the mode allows only one publication per
// node: a second target path is FAILED_PRECONDITION (CSI spec v1.13.0,
// NodePublishVolume, the table for plugins with SINGLE_NODE_MULTI_WRITER).
// SINGLE_NODE_WRITER is left out although that table puts it with them:
// a kubelet that does not map ReadWriteOnce to SINGLE_NODE_MULTI_WRITER
// (kubelet's asCSIAccessModeV1, used for drivers without that capability,
// and kubelets older than the mapping) sends it for every pod of a node
// sharing a ReadWriteOnce volume, and the spec says plugins "MUST accept
// and allow" it.
func publishedOnce(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER ||
		m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
}

// multiNodeWriter reports whether the mode lets several nodes write.
func multiNodeWriter(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER
}

// readerOnly reports whether the mode only reads.
func readerOnly(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}

func modeName(m csi.VolumeCapability_AccessMode_Mode) string {
	if n, ok := csi.VolumeCapability_AccessMode_Mode_name[int32(m)]; ok {
		return n
	}
	return fmt.Sprint(int32(m))
}
