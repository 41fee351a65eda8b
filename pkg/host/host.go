package host

// Host bundles the capabilities of one machine. Every field is required; a
// host that cannot do an area returns ErrNotImplemented from its methods.
type Host struct {
	Disks   Disks
	Volumes Volumes
	Files   Files
	SMB     SMB
	ISCSI   ISCSI
	// Security is the access control of volume roots (volumeRootAccess).
	Security Security
}
