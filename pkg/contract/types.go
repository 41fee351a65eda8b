package contract

import (
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Kind names a backend.
type Kind string

// Backends.
const (
	KindDisk  Kind = "disk"
	KindSMB   Kind = "smb"
	KindISCSI Kind = "iscsi"
)

// Request is everything the contract is parsed from.
type Request struct {
	VolumeID       string
	VolumeContext  map[string]string
	PublishContext map[string]string
	Secrets        map[string]string
	// FsType is VolumeCapability.Mount.FsType ("" when unset).
	FsType string
}

// Volume is a parsed, validated contract.
type Volume struct {
	Kind Kind
	// FS applies to disk and iscsi volumes (the file system put on a blank
	// volume); zero for smb.
	FS    FileSystem
	Disk  *DiskSpec  // set when Kind == KindDisk
	SMB   *SMBSpec   // set when Kind == KindSMB
	ISCSI *ISCSISpec // set when Kind == KindISCSI
	// RootAccess is volumeRootAccess (or the node default) for disk and
	// iscsi volumes: allow entries for the root of the volume's file
	// system; no grants for smb volumes and when none is asked for.
	RootAccess RootAccess

	// Ignored lists the keys of volume_context and publish_context that
	// the contract does not know (sorted), so the caller can log them.
	Ignored []string
}

// FileSystem says how to format a blank volume.
type FileSystem struct {
	Type string // "NTFS" or "ReFS"
	// Explicit is true when the user asked for Type (fsType in the volume
	// capability or volume_context); false when Type is the NTFS default.
	// An existing file system is only checked against an explicit Type.
	Explicit           bool
	Label              string // fsLabel; empty for none
	AllocationUnitSize uint32 // allocationUnitSize in bytes; 0 for the default
}

// MatchMode says how a disk property is compared with the selector value.
type MatchMode int

// Match modes.
const (
	MatchExact     MatchMode = iota // equal after trimming spaces and a trailing '.'
	MatchContains                   // the property contains the value
	MatchLastField                  // the last space-separated field of the property equals the value
)

// DiskSelector says which attached disk backs the volume. Every set field
// must match; at least one is set.
type DiskSelector struct {
	Serial      string
	SerialMatch MatchMode
	Page83      string
	Page83Match MatchMode
	LUN         *uint32
	Target      *uint32
	Bus         *uint32
	Location    string  // full MSFT_Disk.Location, compared exactly
	Number      *uint32 // discouraged: disk numbers change across reboots and hot-plug

	// NVMeNSID is an NVMe namespace ID, 1 to 256 (diskNVMeNSID).
	NVMeNSID *uint32
	// EUI and NGUID are an NVMe namespace's EUI-64 (16 hex digits) and
	// NGUID (32 hex digits), lower case, without separators (diskEUI,
	// diskNGUID).
	EUI   string
	NGUID string
	// AdapterSerial is MSFT_Disk.AdapterSerialNumber, the controller's
	// serial (diskAdapterSerial).
	AdapterSerial string

	// Platform selectors: what one cloud's controller publishes, set by
	// the presets (Options.Presets); the disk backend finds the disk by
	// that cloud's rules (docs/parameters.md, "Presets").
	//
	// AzureLUN is the LUN azuredisk-csi-driver publishes (azure-disk).
	AzureLUN *uint32
	// EBSVolumeID is an EBS volume ID, vol-<hex> (aws-ebs).
	EBSVolumeID string
	// GCEDeviceName is the device name a persistent disk is attached
	// under (gce-pd).
	GCEDeviceName string
	// VSphereUUID is the diskUUID vsphere-csi-driver publishes, lower-case
	// hex without dashes (vsphere).
	VSphereUUID string
}

// IsZero reports whether no field is set.
func (s DiskSelector) IsZero() bool {
	return s.Serial == "" && s.Page83 == "" && s.LUN == nil && s.Target == nil &&
		s.Bus == nil && s.Location == "" && s.Number == nil && s.NVMeNSID == nil &&
		s.EUI == "" && s.NGUID == "" && s.AdapterSerial == "" && s.AzureLUN == nil &&
		s.EBSVolumeID == "" && s.GCEDeviceName == "" && s.VSphereUUID == ""
}

// DiskSpec is the disk backend's contract.
type DiskSpec struct {
	Selector DiskSelector
}

// SMBSpec is the SMB backend's contract.
type SMBSpec struct {
	Server string // as given, without leading backslashes
	Share  string
	// Dir is the path below the share (source's own directory part, then
	// subDir), backslash-separated, no leading or trailing separator;
	// empty for the share root.
	Dir            string
	RequirePrivacy bool
	// Credential is empty (User == "") for anonymous access. User is in
	// the form Windows expects: DOMAIN\user, user@domain or user.
	Credential host.Credential
}

// MappingPath is the lower-cased share root \\server\share that one global
// mapping covers; every volume on the share goes through it.
func (s SMBSpec) MappingPath() string {
	return strings.ToLower(`\\` + s.Server + `\` + s.Share)
}

// UNC is the volume's directory on the share: \\server\share[\dir].
func (s SMBSpec) UNC() string {
	p := `\\` + s.Server + `\` + s.Share
	if s.Dir != "" {
		p += `\` + s.Dir
	}
	return p
}

// ISCSISpec is the iSCSI backend's contract.
type ISCSISpec struct {
	// Portals holds targetPortal first, then the entries of portals,
	// de-duplicated, each with its port (3260 when not given).
	Portals []host.Portal
	IQN     string // lower case
	LUN     uint32
	// DiscoveryCHAP is set when discoveryCHAPAuth is true.
	DiscoveryCHAP *host.CHAP
	// SessionAuth is AuthNone unless sessionCHAPAuth is true: then
	// AuthOneWay, or AuthMutual when the *_in secrets are given.
	SessionAuth host.AuthType
	SessionCHAP host.CHAP
	// InitiatorSecret is the secret the target must present in mutual
	// CHAP (node.session.auth.password_in).
	InitiatorSecret host.Secret
	Multipath       bool
	Persistent      bool
	InitiatorPortal string // initiatorPortal: initiator IP to use; empty lets Windows choose
}

// Error is a contract violation. Key is the offending key as the user wrote
// it (or the canonical key when it was missing); the message never contains
// a secret value.
type Error struct {
	Key    string
	Reason string
}

func (e *Error) Error() string { return "parameter " + quote(e.Key) + ": " + e.Reason }

func quote(s string) string { return `"` + s + `"` }
