package host

import (
	"context"
	"fmt"
)

// Admin bundles what the operator's commands, preflight and selftest, ask
// of a machine beyond Host: the node's own configuration (System), and the
// scratch objects selftest makes and removes (a virtual disk, a local SMB
// share and user, a file's contents). The plugin never uses it while it
// serves volumes, except System's read-only methods for the checks it runs
// at start. Every field is required; a host that cannot do an area returns
// ErrNotImplemented from its methods.
type Admin struct {
	System       System
	VirtualDisks VirtualDisks
	LocalSMB     LocalSMB
	FileData     FileData
}

// System is the node's configuration as the preflight checks read it, and
// the one change preflight --fix makes (a service's start type and start).
type System interface {
	// OS describes the running Windows.
	OS(ctx context.Context) (OSInfo, error)

	// Token describes the process's own access token.
	Token(ctx context.Context) (Token, error)

	// PathVolume describes the volume that holds path (which must exist:
	// ErrNotFound otherwise).
	PathVolume(ctx context.Context, path string) (PathVolume, error)

	// DirectoryDACL returns the DACL of a directory (or file); ErrNotFound
	// when path is missing.
	DirectoryDACL(ctx context.Context, path string) (DACL, error)

	// Service returns a service's state and start type; ErrNotFound when
	// the service does not exist.
	Service(ctx context.Context, name string) (Service, error)

	// SetServiceAutoStart changes a service's start type to automatic and
	// nothing else.
	SetServiceAutoStart(ctx context.Context, name string) error

	// StartService starts a service and returns once it runs; one that
	// runs already is not an error.
	StartService(ctx context.Context, name string) error

	// OptionalFeature returns the install state of a Windows optional
	// feature by its name (FeatureUnknown and no error when Windows lists
	// no such feature).
	OptionalFeature(ctx context.Context, name string) (FeatureState, error)

	// DSMSupportedDevices returns the hardware IDs the Microsoft DSM
	// claims for multipath; ErrNotFound when no list is configured.
	DSMSupportedDevices(ctx context.Context) ([]string, error)

	// NativeNVMeRequested reports whether Windows Server 2025's native
	// NVMe stack is asked for (its feature override is set).
	NativeNVMeRequested(ctx context.Context) (bool, error)

	// NewDiskPolicy returns the SAN policy Windows applies to newly attached disks.
	NewDiskPolicy(ctx context.Context) (SANPolicy, error)
}

// OSInfo describes the running Windows.
type OSInfo struct {
	Caption string `json:"caption"` // "Microsoft Windows Server 2022 Datacenter"
	Version string `json:"version"` // "10.0.20348"
	Build   uint32 `json:"build"`   // 20348
	// UBR is the update build revision (the 2849 of 20348.2849); 0 when
	// unknown.
	UBR uint32 `json:"ubr"`
	// DisplayVersion is the release's marketing version ("21H2", "24H2";
	// "1809" on Server 2019); "" when unknown.
	DisplayVersion string      `json:"displayVersion,omitempty"`
	ProductType    ProductType `json:"productType"`
	// ComputerName is the machine's NetBIOS name, as SMB clients reach it.
	ComputerName string `json:"computerName"`
}

// ProductType is Win32_OperatingSystem.ProductType.
type ProductType uint32

// Product types.
const (
	ProductWorkstation      ProductType = 1
	ProductDomainController ProductType = 2
	ProductServer           ProductType = 3
)

// Token describes an access token.
type Token struct {
	// User is the token user's SID ("S-1-5-18").
	User string `json:"user"`
	// System: the user is LocalSystem (S-1-5-18).
	System bool `json:"system"`
	// Administrators: the token holds BUILTIN\Administrators enabled
	// (not as a deny-only group of a filtered token).
	Administrators bool `json:"administrators"`
	// Elevated is TokenElevation.
	Elevated bool `json:"elevated"`
}

// DriveType is GetDriveType's answer.
type DriveType uint32

// Drive types.
const (
	DriveUnknown   DriveType = 0
	DriveNoRootDir DriveType = 1
	DriveRemovable DriveType = 2
	DriveFixed     DriveType = 3
	DriveRemote    DriveType = 4
	DriveCDROM     DriveType = 5
	DriveRAMDisk   DriveType = 6
)

func (t DriveType) String() string {
	switch t {
	case DriveNoRootDir:
		return "no root directory"
	case DriveRemovable:
		return "removable"
	case DriveFixed:
		return "fixed"
	case DriveRemote:
		return "remote"
	case DriveCDROM:
		return "CD-ROM"
	case DriveRAMDisk:
		return "RAM disk"
	}
	return "unknown"
}

// PathVolume is the volume that holds a path.
type PathVolume struct {
	Root       string // the volume's mount point: C:\ or C:\mnt\data\
	DriveType  DriveType
	FileSystem string // NTFS, ReFS, FAT32, ...
}

// ServiceState is a service's current state (SERVICE_STATUS_PROCESS).
type ServiceState uint32

// Service states.
const (
	ServiceStopped         ServiceState = 1
	ServiceStartPending    ServiceState = 2
	ServiceStopPending     ServiceState = 3
	ServiceRunning         ServiceState = 4
	ServiceContinuePending ServiceState = 5
	ServicePausePending    ServiceState = 6
	ServicePaused          ServiceState = 7
)

func (s ServiceState) String() string {
	switch s {
	case ServiceStopped:
		return "stopped"
	case ServiceStartPending:
		return "starting"
	case ServiceStopPending:
		return "stopping"
	case ServiceRunning:
		return "running"
	case ServiceContinuePending:
		return "continuing"
	case ServicePausePending:
		return "pausing"
	case ServicePaused:
		return "paused"
	}
	return fmt.Sprintf("state %d", uint32(s))
}

// StartType is a service's start type (QUERY_SERVICE_CONFIG.dwStartType).
type StartType uint32

// Start types.
const (
	StartBoot     StartType = 0
	StartSystem   StartType = 1
	StartAuto     StartType = 2
	StartManual   StartType = 3 // SERVICE_DEMAND_START
	StartDisabled StartType = 4
)

func (t StartType) String() string {
	switch t {
	case StartBoot:
		return "boot"
	case StartSystem:
		return "system"
	case StartAuto:
		return "automatic"
	case StartManual:
		return "manual"
	case StartDisabled:
		return "disabled"
	}
	return fmt.Sprintf("start type %d", uint32(t))
}

// Service is a service's state and start type.
type Service struct {
	Name      string       `json:"name"`
	State     ServiceState `json:"state"`
	StartType StartType    `json:"startType"`
}

// FeatureState is Win32_OptionalFeature.InstallState.
type FeatureState uint32

// Feature install states; FeatureUnknown also stands for a feature Windows
// does not list at all.
const (
	FeatureEnabled  FeatureState = 1
	FeatureDisabled FeatureState = 2
	FeatureAbsent   FeatureState = 3
	FeatureUnknown  FeatureState = 4
)

func (s FeatureState) String() string {
	switch s {
	case FeatureEnabled:
		return "enabled"
	case FeatureDisabled:
		return "disabled"
	case FeatureAbsent:
		return "absent"
	}
	return "unknown"
}

// SANPolicy is MSFT_StorageSetting.NewDiskPolicy.
type SANPolicy uint16

// SAN policies.
const (
	SANPolicyUnknown         SANPolicy = 0
	SANPolicyOnlineAll       SANPolicy = 1
	SANPolicyOfflineShared   SANPolicy = 2
	SANPolicyOfflineAll      SANPolicy = 3
	SANPolicyOfflineInternal SANPolicy = 4
)

func (p SANPolicy) String() string {
	switch p {
	case SANPolicyOnlineAll:
		return "OnlineAll"
	case SANPolicyOfflineShared:
		return "OfflineShared"
	case SANPolicyOfflineAll:
		return "OfflineAll"
	case SANPolicyOfflineInternal:
		return "OfflineInternal"
	}
	return "Unknown"
}

// VirtualDisks makes, attaches, grows and detaches VHDX files: the
// scratch disks of selftest.
type VirtualDisks interface {
	// Create creates a dynamically expanding VHDX of size bytes at path;
	// ErrAlreadyExists when path exists.
	Create(ctx context.Context, path string, size uint64) error

	// Attach attaches the VHDX at path to this machine, without a drive
	// letter and for longer than the call, and returns its disk number.
	Attach(ctx context.Context, path string) (uint32, error)

	// Resize grows the VHDX at path to size bytes; it may be attached
	// (the host sees the new size after Disks.Rescan).
	Resize(ctx context.Context, path string, size uint64) error

	// Detach detaches the VHDX at path; one that is not attached is not
	// an error. ErrNotFound when path is missing.
	Detach(ctx context.Context, path string) error
}

// LocalSMB is this machine's own SMB server: local user accounts and
// shares, for a selftest that maps a share of the node itself.
type LocalSMB interface {
	// CreateUser creates a local user; ErrAlreadyExists when it exists.
	CreateUser(ctx context.Context, name string, password Secret) error
	// DeleteUser deletes a local user; ErrNotFound when there is none.
	DeleteUser(ctx context.Context, name string) error
	// Users lists the local user accounts.
	Users(ctx context.Context) ([]string, error)

	// CreateShare shares the existing directory dir as name, temporarily
	// (it does not survive a restart of the server service), with full
	// access for the local user (share and directory permissions).
	CreateShare(ctx context.Context, name, dir, user string) error
	// DeleteShare removes a share (never its directory); ErrNotFound when
	// there is none.
	DeleteShare(ctx context.Context, name string) error
	// Shares lists this machine's shares.
	Shares(ctx context.Context) ([]LocalShare, error)
}

// LocalShare is one share of this machine.
type LocalShare struct {
	Name string
	Path string
}

// FileData reads and writes the contents of plain files, for selftest's
// check that data written through a published volume reads back.
type FileData interface {
	// WriteFile creates or replaces the file at path with data.
	WriteFile(ctx context.Context, path string, data []byte) error
	// ReadFile returns the contents of the file at path; ErrNotFound when
	// it is missing.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// RemoveFile removes a plain file; ErrNotFound when it is missing.
	RemoveFile(ctx context.Context, path string) error
}
