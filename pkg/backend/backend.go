package backend

import (
	"context"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Backend is a volume backend (pkg/backend/disk, smb, iscsi) as the node
// service uses it.
type Backend interface {
	// Record returns the backend's record of a volume, which the node
	// keeps in the volume's journal entry from the start of its stage.
	Record(vol contract.Volume) (Record, error)
	// DecodeRecord reads back the record of an entry of this backend.
	DecodeRecord(e journal.Entry) (Record, error)
	Stage(ctx context.Context, r StageRequest) error
	Unstage(ctx context.Context, r UnstageRequest) error
	Expand(ctx context.Context, r ExpandRequest) (int64, error)
	Health(ctx context.Context, r HealthRequest) ([]Condition, error)
}

// StageRequest asks a backend to make the volume available at StagingPath.
type StageRequest struct {
	VolumeID    string
	StagingPath string // resolved, confined to the kubelet directory
	Volume      contract.Volume
	// ReadOnly is set for the *_READER_ONLY access modes: the volume must
	// be staged without writing to it (no initialise, partition, format or
	// grow; the disk stays read-only).
	ReadOnly bool
	// Recorded are the attributes the volume's journal entry held before
	// this stage (an earlier stage's, nil when the journal had none):
	// what an earlier stage learnt, such as the SIDs it resolved account
	// names to (RootAccessSIDs).
	Recorded map[string]string
	// Learned, when not nil, receives attributes the stage learns that
	// the volume's journal entry keeps (PutRootAccessSIDs); the node adds
	// them to the entry once the stage has succeeded.
	Learned map[string]string
}

// StagedReadOnly reports whether the entry's volume was staged for one of
// the *_READER_ONLY access modes (Entry.AccessMode holds the CSI name of
// the mode), as StageRequest.ReadOnly was then.
func StagedReadOnly(e journal.Entry) bool {
	return strings.HasSuffix(e.AccessMode, "_READER_ONLY")
}

// UnstageRequest asks a backend to undo a stage. Entry is the journal's
// entry of the stage, holding the backend's Record (read back with the
// backend's DecodeRecord) when the journal knew the volume at this staging
// path, and zero otherwise.
type UnstageRequest struct {
	VolumeID    string
	StagingPath string
	Entry       journal.Entry
}

// ExpandRequest asks a backend to grow the staged volume.
type ExpandRequest struct {
	VolumeID      string
	StagingPath   string
	RequiredBytes int64 // 0: as large as the device allows
	LimitBytes    int64 // 0: no limit
}

// HealthRequest asks a backend about the staged volume; Entry is its
// journal entry.
type HealthRequest struct {
	VolumeID    string
	StagingPath string
	Entry       journal.Entry
}

// Severity classifies a health condition, mirroring CSI's VolumeHealthErrorType.
type Severity int

// Severities.
const (
	Degraded     Severity = iota + 1 // usable, not operating optimally
	Inaccessible                     // not accessible from this node
	DataLoss                         // permanent data loss known or strongly suspected
)

// Condition is one abnormal condition of a volume.
type Condition struct {
	Severity Severity
	Reason   string // CamelCase, machine-readable
	Message  string
}

// Stats returns the usage of the file system holding path.
func Stats(ctx context.Context, v host.Volumes, path string) (host.Space, error) {
	sp, err := v.FreeSpace(ctx, path)
	if err != nil {
		return host.Space{}, err
	}
	return sp, nil
}
