package winhost

import (
	"context"
	"fmt"
	"strings"
)

// WMI namespaces the plugin uses.
const (
	NamespaceStorage = `Root\Microsoft\Windows\Storage`
	NamespaceSMB     = `Root\Microsoft\Windows\Smb`
	NamespaceCIMV2   = `Root\CIMV2`
	// NamespaceWMI holds the iSCSI initiator's own classes
	// (MSiSCSIInitiator_*), below the Storage Management API's.
	NamespaceWMI = `Root\WMI`
)

// Executor runs WMI and Win32 calls on a Windows host, one call per method,
// honouring ctx: when ctx ends first the method returns an error wrapping
// ctx.Err() (the underlying call may still be running; the executor tracks
// it with host.BeginCall). It contains no logic: no retries, no parsing
// beyond converting COM values to Go values, no decisions.
type Executor interface {
	WMI
	Win32
}

// WMI is the WMI half of the executor.
type WMI interface {
	// Query runs a WQL SELECT query in the
	// namespace and returns every instance.
	Query(ctx context.Context, namespace, wql string) ([]Instance, error)

	// Associators returns the objects associated with the object at path
	// through assocClass, restricted to resultClass
	// (SWbemServices.AssociatorsOf; either class may be empty).
	Associators(ctx context.Context, namespace, path, assocClass, resultClass string) ([]Instance, error)

	// Call invokes a method. With m.Path set it is an instance method on
	// that object; with m.Path empty it is a static method of m.Class. A
	// non-zero ReturnValue is not an error at this level: the caller
	// interprets it. Errors are COM or transport failures (*COMError).
	Call(ctx context.Context, namespace string, m Method) (Result, error)
}

// Instance is one WMI object as properties.
//
// Property values are converted from VARIANTs as follows: VT_BSTR → string
// (CIM uint64 and sint64 properties arrive as strings through IDispatch),
// VT_BOOL → bool, every integer type → int64, VT_NULL/VT_EMPTY → nil,
// arrays → []any, embedded objects → Instance.
type Instance struct {
	// Path is the object's __PATH, used to invoke instance methods.
	Path  string
	Class string
	Props map[string]any
}

// Method is a method invocation. In lists the input parameters by name, in
// the values WMI expects through IDispatch: string, bool, int32/uint32,
// uint16, uint8 as Go integers of that width, CIM uint64 as a decimal
// string, string arrays as []string. Parameters not listed are not supplied
// (VT_NULL), which makes the provider use its default.
type Method struct {
	Class string // e.g. "MSFT_Disk"
	Path  string // instance __PATH; empty for a static method
	Name  string
	In    []Param
}

// Param is one named input parameter.
type Param struct {
	Name  string
	Value any
	// Sensitive marks a parameter carrying a secret: executors and every
	// logger must never print its value.
	Sensitive bool
}

// FormatParams renders input parameters for logs and reports, as
// Name=<Go syntax of the value>, comma-separated. A sensitive parameter
// shows only its name: Name=[sensitive].
func FormatParams(in []Param) string {
	var b strings.Builder
	for i, p := range in {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		b.WriteByte('=')
		if p.Sensitive {
			b.WriteString("[sensitive]")
			continue
		}
		fmt.Fprintf(&b, "%#v", p.Value)
	}
	return b.String()
}

// Result is a method's outcome.
type Result struct {
	ReturnValue uint32
	// Out holds the output parameters by name, converted like Instance
	// properties (an embedded object, such as CreatedPartition, is an
	// Instance).
	Out map[string]any
}

// Win32 is the Win32 half of the executor. Paths are passed as given; the
// caller adds the \\?\ long-path prefix where it is needed. Errors are
// *Win32Error carrying the call's name and error code.
type Win32 interface {
	// StorageDeviceIDDescriptor opens the device (access 0) and returns the
	// raw output of IOCTL_STORAGE_QUERY_PROPERTY for
	// StorageDeviceIdProperty/PropertyStandardQuery: a
	// STORAGE_DEVICE_ID_DESCRIPTOR, parsed by the caller.
	StorageDeviceIDDescriptor(ctx context.Context, devicePath string) ([]byte, error)

	// SCSIAddress opens the device (access 0) and returns the raw output
	// of IOCTL_SCSI_GET_ADDRESS: a SCSI_ADDRESS, parsed by the caller.
	SCSIAddress(ctx context.Context, devicePath string) ([]byte, error)

	// VolumeDiskExtents opens the volume (\\?\Volume{GUID} without the
	// trailing backslash) and returns the raw output of
	// IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, parsed by the caller.
	VolumeDiskExtents(ctx context.Context, volumeName string) ([]byte, error)

	// FlushVolume opens the volume for writing and calls FlushFileBuffers.
	FlushVolume(ctx context.Context, volumeName string) error

	// SetVolumeMountPoint, DeleteVolumeMountPoint and
	// GetVolumeNameForVolumeMountPoint are the Win32 calls of those
	// names; mountPoint ends with a backslash.
	SetVolumeMountPoint(ctx context.Context, mountPoint, volumeName string) error
	DeleteVolumeMountPoint(ctx context.Context, mountPoint string) error
	GetVolumeNameForVolumeMountPoint(ctx context.Context, mountPoint string) (string, error)

	// GetDiskFreeSpaceEx returns FreeBytesAvailableToCaller,
	// TotalNumberOfBytes and TotalNumberOfFreeBytes for path.
	GetDiskFreeSpaceEx(ctx context.Context, path string) (available, total, free uint64, err error)

	// GetFileAttributes returns the path's attributes (it follows nothing:
	// the attributes of a reparse point are its own).
	GetFileAttributes(ctx context.Context, path string) (uint32, error)

	// ReadReparsePoint opens path with FILE_FLAG_OPEN_REPARSE_POINT and
	// returns the raw REPARSE_DATA_BUFFER of FSCTL_GET_REPARSE_POINT,
	// parsed by the caller.
	ReadReparsePoint(ctx context.Context, path string) ([]byte, error)

	// CreateDirectory creates one directory (its parent must exist).
	CreateDirectory(ctx context.Context, path string) error

	// RemoveDirectory removes an empty directory or a directory link or
	// mount point's directory entry (RemoveDirectoryW).
	RemoveDirectory(ctx context.Context, path string) error

	// CreateSymbolicLink creates a symbolic link (flags as for
	// CreateSymbolicLinkW).
	CreateSymbolicLink(ctx context.Context, link, target string, flags uint32) error

	// DirectoryHasEntries reports whether a directory holds any entry
	// besides "." and "..".
	DirectoryHasEntries(ctx context.Context, path string) (bool, error)

	// DirectoryEntries returns the names of a directory's entries
	// besides "." and "..".
	DirectoryEntries(ctx context.Context, path string) ([]string, error)

	// LookupHost returns the IP addresses name resolves to, as the system
	// resolver gives them (net.Resolver.LookupNetIP, GetAddrInfoW on
	// Windows). A name that does not resolve fails with a *net.DNSError.
	LookupHost(ctx context.Context, name string) ([]string, error)

	// ReportIScsiPersistentLogins calls ReportIScsiPersistentLoginsW
	// (iscsidsc.h) and returns the number of persistent logins and the
	// fixed part of its buffer: count PERSISTENT_ISCSI_LOGIN_INFOW
	// records, parsed by the caller. The variable part, which holds the
	// logins' CHAP user names and secrets, is never returned, and the
	// whole buffer is zeroed before the call returns.
	ReportIScsiPersistentLogins(ctx context.Context) (count uint32, fixed []byte, err error)

	// RemoveIScsiPersistentTarget calls RemoveIScsiPersistentTargetW
	// (iscsidsc.h) with the portal's symbolic name, address and socket.
	// A failure is a *Win32Error whose Code is the ISDSC status.
	RemoveIScsiPersistentTarget(ctx context.Context, initiatorInstance string, initiatorPort uint32, targetName string, portal PortalW) error

	// FileSecurity opens the file or directory for READ_CONTROL (with
	// FILE_FLAG_BACKUP_SEMANTICS, which a directory needs) and returns the
	// parts of its security descriptor that info names
	// (SECURITY_INFORMATION), read with GetSecurityInfo(SE_FILE_OBJECT),
	// self-relative, parsed by the caller.
	FileSecurity(ctx context.Context, path string, info uint32) ([]byte, error)

	// UpdateFileDACL opens the file or directory once, for READ_CONTROL
	// and WRITE_DAC (with FILE_FLAG_BACKUP_SEMANTICS), reads its DACL
	// through that handle (GetSecurityInfo, SE_FILE_OBJECT,
	// DACL_SECURITY_INFORMATION: a self-relative descriptor) and passes it
	// to update. When update returns an ACL, it is set through the same
	// handle: SetSecurityInfo(SE_FILE_OBJECT, DACL_SECURITY_INFORMATION |
	// the flags update returns, the ACL), which also propagates the ACL's
	// inheritable entries to the existing files and directories below. An
	// error of update is returned as it is, and nothing is set. update
	// decides everything; the executor only makes the calls.
	UpdateFileDACL(ctx context.Context, path string, update func(sd []byte) (acl []byte, info uint32, err error)) error

	// LookupAccountName returns the SID (in binary form, parsed by the
	// caller) and the SID_NAME_USE of an account name, as
	// LookupAccountNameW resolves it on this computer.
	LookupAccountName(ctx context.Context, name string) (sid []byte, use uint32, err error)
}

// PortalW is ISCSI_TARGET_PORTALW (iscsidsc.h): a target portal as the
// iSCSI discovery API names it.
type PortalW struct {
	SymbolicName string
	Address      string
	Socket       uint16
}
