package inventory

import "github.com/wincsi/csi-windows-node/pkg/preflight"

// Report is what Take found. Its JSON form is what csi-windows-node
// diagnose -o json prints; the field names are kept across versions.
type Report struct {
	// Volumes are the volumes the stage journal records, by volume ID.
	Volumes []Volume `json:"volumes"`
	// Resources are the shared host resources: every SMB global mapping,
	// iSCSI session and target portal of the node, whoever made them.
	Resources []Resource `json:"resources"`
	// Unexplained is what nothing explains (see Kind).
	Unexplained []Item `json:"unexplained"`
	// Incomplete names what could not be read (a host call that failed);
	// the rest of the report stands, without it.
	Incomplete []string `json:"incomplete"`
	// Preflight is what the preflight checks find on the node
	// (pkg/preflight); diagnose adds it, Take does not.
	Preflight *preflight.Report `json:"preflight,omitempty"`
	// StateDir is the stage journal's directory, its ACL and the files
	// refused; nil when it does not exist (or in the
	// orphan sweep's own stock-take).
	StateDir *StateDir `json:"stateDir,omitempty"`
}

// StateDir is the stage journal's directory.
type StateDir struct {
	Path string `json:"path"`
	// ACL is its owner and DACL in SDDL form with full SIDs and hex masks
	// (O:S-1-5-32-544D:P(A;OICI;0x1f01ff;;;S-1-5-18)(A;OICI;0x1f01ff;;;S-1-5-32-544)
	// once the plugin protected it); "" where the system keeps no ACL (the
	// simulated host on Linux, where the directory's mode protects it).
	ACL string `json:"acl,omitempty"`
	// TokenOwner is the SID the plugin's own files are owned by ("" off
	// Windows).
	TokenOwner string `json:"tokenOwner,omitempty"`
	// Refused are the files in it the plugin did not write (owned by
	// neither SYSTEM, Administrators nor the plugin, without an owner,
	// hard-linked, or denying the plugin their owner): never loaded, never
	// acted on.
	Refused []RefusedFile `json:"refused"`
}

// RefusedFile is a journal file refused (journal.Refused).
type RefusedFile struct {
	Path string `json:"path"`
	// Owner is its owner's SID, "" when it has none or could not be read.
	Owner  string `json:"owner"`
	Reason string `json:"reason"`
}

// State is the state of a recorded volume.
type State string

// Volume states.
const (
	// StateHealthy: staged, and nothing is wrong.
	StateHealthy State = "healthy"
	// StateDegraded: usable but not as it should be (a multipath path
	// down, a read-only disk).
	StateDegraded State = "degraded"
	// StateUnhealthy: staged, but not usable from this node (mount point
	// or link missing, mapping not OK, session gone, disk offline).
	StateUnhealthy State = "unhealthy"
	// StateStaging: the journal holds an intent: NodeStageVolume is in
	// progress, or failed or crashed and kubelet has not retried yet.
	StateStaging State = "staging"
	// StateGone: the staging path no longer exists; kubelet removes it
	// only after a successful unstage, so the volume is not staged and the
	// journal entry is stale.
	StateGone State = "gone"
	// StateUnknown: the staging path or the volume's health could not be
	// read.
	StateUnknown State = "unknown"
)

// Volume is one recorded volume.
type Volume struct {
	VolumeID    string `json:"volumeID"`
	Backend     string `json:"backend"`
	StagingPath string `json:"stagingPath"`
	State       State  `json:"state"`
	// Problems say what is wrong; empty when healthy. Reasons are those
	// NodeGetVolumeHealth reports (MountPointMissing, MappingUnavailable,
	// SessionLost, DiskOffline, ...) plus StagingPathGone,
	// StageIncomplete, NoRecord and Unreadable.
	Problems []Problem `json:"problems"`
	// What backs the volume, by backend.
	Disk  *DiskBacking  `json:"disk,omitempty"`
	SMB   *SMBBacking   `json:"smb,omitempty"`
	ISCSI *ISCSIBacking `json:"iscsi,omitempty"`
	// Publications are the target paths under the kubelet pods directory
	// that link to the staging path.
	Publications []Publication `json:"publications"`
}

// Problem is one thing wrong with a volume.
type Problem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// DiskBacking is the disk and volume behind a disk or iSCSI volume.
type DiskBacking struct {
	// Selector is the disk selector the stage recorded (disk volumes).
	Selector string `json:"selector,omitempty"`
	// VolumeGUID is the \\?\Volume{...}\ path of the volume mounted at the
	// staging path, and MountPoint that path; both empty when nothing is
	// mounted there.
	VolumeGUID string `json:"volumeGUID,omitempty"`
	MountPoint string `json:"mountPoint,omitempty"`
	// DiskNumber is nil when no disk could be placed.
	DiskNumber *uint32 `json:"diskNumber,omitempty"`
	Serial     string  `json:"serial,omitempty"`
	Offline    bool    `json:"offline,omitempty"`
	ReadOnly   bool    `json:"readOnly,omitempty"`
	// RootACL is the DACL of the root of the volume's file system, in
	// SDDL form with hex masks and full SIDs; empty when nothing is
	// mounted or it could not be read.
	RootACL string `json:"rootACL,omitempty"`
	// RootAccess are the grants of the volumeRootAccess the stage
	// recorded, each with whether the root has it.
	RootAccess []RootGrant `json:"rootAccess,omitempty"`
}

// SMBBacking is the share and global mapping behind an SMB volume.
type SMBBacking struct {
	// Share is the mapped share root; Directory the volume's directory on
	// it, as the stage recorded them.
	Share     string `json:"share"`
	Directory string `json:"directory,omitempty"`
	// User is the user name of the volume's node-stage secret ("" for
	// anonymous), never a password.
	User string `json:"user,omitempty"`
	// LinkTarget is where the staging link points, "" when it is no link.
	LinkTarget string `json:"linkTarget,omitempty"`
	// Mapping is the share's global mapping: "" when there is none, else
	// its status (OK, Disconnected, Unavailable, ...).
	Mapping string `json:"mapping"`
	// MappingUser is the user the plugin made the mapping as, from its
	// note; empty when the plugin did not make it (MappedByPlugin false)
	// or made it anonymously.
	MappingUser    string `json:"mappingUser,omitempty"`
	MappedByPlugin bool   `json:"mappedByPlugin"`
	RequirePrivacy bool   `json:"requirePrivacy,omitempty"`
	// MappingSecret says whether the volume's password is the one the
	// mapping was made with: "same" or "different" (problem
	// CredentialDrift); empty when either is not recorded. The records are
	// MACs the report never shows.
	MappingSecret string `json:"mappingSecret,omitempty"`
}

// ISCSIBacking is the target, LUN and sessions behind an iSCSI volume,
// and the disk of the LUN.
type ISCSIBacking struct {
	Target    string       `json:"target"`
	LUN       uint32       `json:"lun"`
	Portals   []string     `json:"portals"`
	Multipath bool         `json:"multipath,omitempty"`
	Sessions  []Session    `json:"sessions"`
	Disk      *DiskBacking `json:"disk,omitempty"`
	// CHAPUser is the session CHAP user of the volume's node-stage secret
	// ("" without session CHAP), never a secret.
	CHAPUser string `json:"chapUser,omitempty"`
	// SessionUser is the CHAP user the plugin logged in to the target
	// with ("" without CHAP); absent when the plugin did not record it
	// (sessions of an earlier version, or of someone else).
	SessionUser *string `json:"sessionUser,omitempty"`
	// SessionSecret says whether the volume's CHAP secret is the one the
	// sessions were logged in with: "same" or "different" (problem
	// CredentialDrift); empty when either is not recorded.
	SessionSecret string `json:"sessionSecret,omitempty"`
}

// Session is one iSCSI session of a target.
type Session struct {
	ID         string `json:"id"`
	Portal     string `json:"portal"`
	Connected  bool   `json:"connected"`
	Persistent bool   `json:"persistent"`
}

// Publication is one target path linking to a volume's staging path.
type Publication struct {
	TargetPath string `json:"targetPath"`
	// PointsTo is the link's target as the host reports it.
	PointsTo string `json:"pointsTo"`
}

// Kind names what a Resource or an Item is.
type Kind string

// Kinds.
const (
	// KindSMBMapping is an SMB global mapping; its ID the share root.
	KindSMBMapping Kind = "smb-mapping"
	// KindISCSISession is an iSCSI session; its ID the session identifier.
	KindISCSISession Kind = "iscsi-session"
	// KindISCSIPersistentLogin is a persistent login (Windows logs in
	// again at boot), whether or not a session of it is up; its ID
	// "<target>@<portal>".
	KindISCSIPersistentLogin Kind = "iscsi-persistent-login"
	// KindISCSIPortal is a registered target portal; its ID
	// "address:port".
	KindISCSIPortal Kind = "iscsi-portal"
	// KindMountPoint is a volume mount point under the kubelet directory;
	// its ID the path.
	KindMountPoint Kind = "mount-point"
	// KindLink is a directory link under the kubelet directory; its ID
	// the path.
	KindLink Kind = "link"
	// KindJournalEntry is a stage journal entry; its ID the volume ID.
	KindJournalEntry Kind = "journal-entry"
	// KindRefusedFile is a file in the state directory the journal
	// refused (the plugin did not write it); its ID the path.
	KindRefusedFile Kind = "refused-journal-file"
)

// Owner says who made a resource, as far as the plugin's records tell
// (doc.go).
type Owner string

// Owners.
const (
	OwnerPlugin  Owner = "plugin"
	OwnerForeign Owner = "foreign"
)

// Resource is one shared host resource and what uses it.
type Resource struct {
	Kind  Kind   `json:"kind"`
	ID    string `json:"id"`
	Owner Owner  `json:"owner"`
	// Status is the mapping's status, a session's "connected" or
	// "disconnected" (with ", persistent"), or a persistent login's
	// "target logged in" or "no session".
	Status string `json:"status,omitempty"`
	// Target is a session's or persistent login's target; Portal a
	// session's portal, or the portal a persistent login goes through.
	Target string `json:"target,omitempty"`
	Portal string `json:"portal,omitempty"`
	// User is the user a mapping of the plugin was made as, or the CHAP
	// user the plugin logged in to a session's target with ("(none)"
	// without credentials); empty when no record of the plugin says.
	User string `json:"user,omitempty"`
	// UsedBy are the recorded volumes that use it now.
	UsedBy []string `json:"usedBy"`
	// Kept is set on a resource of the plugin that no volume uses and
	// that the configuration keeps on purpose (--smb-keep-mappings,
	// --keep-iscsi-portals).
	Kept bool `json:"kept,omitempty"`
	// Note explains Owner (and Kept).
	Note string `json:"note"`
}

// Item is one thing nothing explains.
type Item struct {
	Kind   Kind   `json:"kind"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}
