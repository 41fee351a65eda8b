package winhost

import (
	"context"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// AdminExecutor is an executor that also makes the calls of the
// operator's commands, preflight and selftest (AdminCalls).
type AdminExecutor interface {
	Executor
	AdminCalls
}

// AdminCalls are the executor calls only preflight and selftest make:
// the plugin serving volumes never does. (They also use the Win32 calls
// every host uses: FileSecurity, UpdateFileDACL and LookupAccountName
// among them.) Like the rest of the executor,
// each is one Windows call (or one open-call-close of a handle that cannot
// cross the executor), without logic; errors are *Win32Error or, for
// DeleteInstance, *COMError.
type AdminCalls interface {
	// DeleteInstance deletes the WMI object at path (SWbemServices.Delete).
	DeleteInstance(ctx context.Context, namespace, path string) error

	// RegistryValue reads a value under HKEY_LOCAL_MACHINE\key: a string
	// (REG_SZ; REG_EXPAND_SZ unexpanded), uint32 (REG_DWORD), uint64
	// (REG_QWORD) or []string (REG_MULTI_SZ). A missing key or value is
	// ERROR_FILE_NOT_FOUND.
	RegistryValue(ctx context.Context, key, name string) (any, error)

	// ProcessToken reads the process's own token: its user, whether that
	// is LocalSystem, membership of BUILTIN\Administrators
	// (CheckTokenMembership) and TokenElevation.
	ProcessToken(ctx context.Context) (host.Token, error)

	// GetVolumePathName, GetDriveType and GetVolumeFileSystem (the file
	// system name of GetVolumeInformation) are the Win32 calls of those
	// names; root ends with a backslash.
	GetVolumePathName(ctx context.Context, path string) (string, error)
	GetDriveType(ctx context.Context, root string) (uint32, error)
	GetVolumeFileSystem(ctx context.Context, root string) (string, error)

	// QueryService opens the service with query rights only
	// (SC_MANAGER_CONNECT, SERVICE_QUERY_STATUS|SERVICE_QUERY_CONFIG) and
	// returns its state and start type.
	QueryService(ctx context.Context, name string) (host.Service, error)
	// ChangeServiceStartType changes the start type and nothing else
	// (ChangeServiceConfig with SERVICE_NO_CHANGE everywhere else).
	ChangeServiceStartType(ctx context.Context, name string, start host.StartType) error
	// StartService asks the service control manager to start the service
	// and returns without waiting for it to run.
	StartService(ctx context.Context, name string) error

	// CreateVirtualDisk creates a dynamically expanding VHDX of size
	// bytes. AttachVirtualDisk attaches one for longer than the call
	// (ATTACH_VIRTUAL_DISK_FLAG_PERMANENT_LIFETIME, no drive letter) and
	// returns its physical path (\\.\PhysicalDriveN).
	// ResizeVirtualDisk and DetachVirtualDisk open the file and make the
	// call of that name.
	CreateVirtualDisk(ctx context.Context, path string, size uint64) error
	AttachVirtualDisk(ctx context.Context, path string) (string, error)
	ResizeVirtualDisk(ctx context.Context, path string, size uint64) error
	DetachVirtualDisk(ctx context.Context, path string) error

	// WriteFile creates or truncates a file and writes data; ReadFile
	// reads a whole file (bounded: MaxFileData); DeleteFile is DeleteFileW.
	WriteFile(ctx context.Context, path string, data []byte) error
	ReadFile(ctx context.Context, path string) ([]byte, error)
	DeleteFile(ctx context.Context, path string) error

	// NetUserAdd creates a local user (USER_INFO_1, a normal account
	// whose password does not expire); NetUserDel deletes one. The
	// NET_API_STATUS is the error code of a *Win32Error.
	NetUserAdd(ctx context.Context, name string, password host.Secret) error
	NetUserDel(ctx context.Context, name string) error
}

// MaxFileData bounds what ReadFile returns: selftest's files are small.
const MaxFileData = 1 << 20

// NewAdmin returns what the operator's commands ask of a Windows host,
// over an executor.
func NewAdmin(e AdminExecutor) host.Admin {
	return host.Admin{
		System:       &System{e: e},
		VirtualDisks: &VirtualDisks{e: e},
		LocalSMB:     &LocalSMB{e: e},
		FileData:     &FileData{e: e},
	}
}
