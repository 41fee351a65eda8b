package winhost

// Test-only exports for the external test package (winhost_test), which
// drives the host through the scripted executor.

type StorageID = storageID

var (
	BuildDeviceIDDescriptor = buildDeviceIDDescriptor
	BuildVolumeDiskExtents  = buildVolumeDiskExtents
	BuildReparse            = buildReparse
)

const (
	IOReparseTagSymlink    = ioReparseTagSymlink
	IOReparseTagMountPoint = ioReparseTagMountPoint
	SymlinkFlagRelative    = symlinkFlagRelative
)

// DecodeReportLUNs exports the REPORT LUNS parser.
var DecodeReportLUNs = decodeReportLUNs
