package winhost

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
)

// System implements host.System: WMI (Win32_OperatingSystem,
// Win32_OptionalFeature, MSFT_StorageSetting), the registry, the process
// token, the volume calls and the service control manager.
type System struct{ e AdminExecutor }

var _ host.System = (*System)(nil)

// Registry keys and values read (under HKEY_LOCAL_MACHINE).
const (
	// The current version's patch level and release name. Widely used but
	// not a documented API: a missing value reads as unknown.
	keyCurrentVersion = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`
	// The hardware IDs the Microsoft DSM claims: the value name is
	// DSM_SUPPORTED_DEVICELIST_VALUE_NAME of Microsoft's MSDSM sample
	// (microsoft/Windows-driver-samples storage/msdsm/src/msdsm.h at
	// 5d61a4a7), under the msdsm service's Parameters key (utils.c
	// DsmpGetDeviceList there).
	keyMSDSMParameters   = `SYSTEM\CurrentControlSet\Services\msdsm\Parameters`
	valueDSMSupportedIDs = "DsmSupportedDeviceList"
	// Windows Server 2025's native NVMe stack is turned on by this
	// feature override (the Windows Server blog, "Announcing Native NVMe
	// in Windows Server 2025", techcommunity.microsoft.com/blog/
	// windowsservernewsandbestpractices/4477353).
	keyFeatureOverrides  = `SYSTEM\CurrentControlSet\Policies\Microsoft\FeatureManagement\Overrides`
	valueNativeNVMeOptIn = "1176759950"
)

// OS implements host.System: Win32_OperatingSystem
// (learn.microsoft.com/windows/win32/cimwin32prov/win32-operatingsystem:
// BuildNumber and Version are strings, ProductType a uint32), then the
// registry for the update build revision (UBR) and the release name
// (DisplayVersion, or ReleaseId before 20H2), both optional.
func (s *System) OS(ctx context.Context) (host.OSInfo, error) {
	q, err := wql.Select("Win32_OperatingSystem", []string{"BuildNumber", "CSName", "Caption", "ProductType", "Version"})
	if err != nil {
		return host.OSInfo{}, err
	}
	insts, err := s.e.Query(ctx, NamespaceCIMV2, q)
	if err != nil {
		return host.OSInfo{}, fmt.Errorf("read the operating system: %w", mapHostErr(err))
	}
	if len(insts) != 1 {
		return host.OSInfo{}, fmt.Errorf("read the operating system: %d Win32_OperatingSystem instances, want 1", len(insts))
	}
	p := PropsOf(insts[0])
	info := host.OSInfo{
		Caption:      p.String("Caption"),
		Version:      p.String("Version"),
		ProductType:  host.ProductType(p.Uint32("ProductType")),
		ComputerName: p.String("CSName"),
	}
	build := p.RequiredString("BuildNumber")
	if err := p.Err(); err != nil {
		return host.OSInfo{}, fmt.Errorf("read the operating system: %w", err)
	}
	n, err := strconv.ParseUint(build, 10, 32)
	if err != nil {
		return host.OSInfo{}, fmt.Errorf("read the operating system: BuildNumber %q is not a number", build)
	}
	info.Build = uint32(n)
	if v, err := s.optionalValue(ctx, keyCurrentVersion, "UBR"); err != nil {
		return host.OSInfo{}, err
	} else if n, ok := v.(uint32); ok {
		info.UBR = n
	}
	for _, name := range []string{"DisplayVersion", "ReleaseId"} {
		v, err := s.optionalValue(ctx, keyCurrentVersion, name)
		if err != nil {
			return host.OSInfo{}, err
		}
		if str, ok := v.(string); ok && str != "" {
			info.DisplayVersion = str
			break
		}
	}
	return info, nil
}

// optionalValue reads a registry value that may be missing (nil then).
func (s *System) optionalValue(ctx context.Context, key, name string) (any, error) {
	v, err := s.e.RegistryValue(ctx, key, name)
	switch {
	case isCode(err, ErrorFileNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf(`read HKLM\%s\%s: %w`, key, name, mapHostErr(err))
	}
	return v, nil
}

// Token implements host.System.
func (s *System) Token(ctx context.Context) (host.Token, error) {
	t, err := s.e.ProcessToken(ctx)
	if err != nil {
		return host.Token{}, fmt.Errorf("read the process token: %w", mapHostErr(err))
	}
	return t, nil
}

// PathVolume implements host.System: GetVolumePathName finds the mount
// point holding path (learn.microsoft.com/windows/win32/api/fileapi/
// nf-fileapi-getvolumepathnamew), GetDriveType and GetVolumeInformation
// describe it.
func (s *System) PathVolume(ctx context.Context, path string) (host.PathVolume, error) {
	root, err := s.e.GetVolumePathName(ctx, path)
	if err != nil {
		return host.PathVolume{}, fmt.Errorf("find the volume of %s: %w", path, mapHostErr(err))
	}
	dt, err := s.e.GetDriveType(ctx, root)
	if err != nil {
		return host.PathVolume{}, fmt.Errorf("drive type of %s: %w", root, mapHostErr(err))
	}
	fs, err := s.e.GetVolumeFileSystem(ctx, root)
	if err != nil {
		return host.PathVolume{}, fmt.Errorf("file system of %s: %w", root, mapHostErr(err))
	}
	return host.PathVolume{Root: root, DriveType: host.DriveType(dt), FileSystem: fs}, nil
}

// DirectoryDACL implements host.System: the descriptor read as for volume
// roots (Executor.FileSecurity), parsed by pkg/winacl (security.go).
func (s *System) DirectoryDACL(ctx context.Context, path string) (host.DACL, error) {
	d, err := NewSecurity(s.e).readRoot(ctx, path)
	if err != nil {
		return host.DACL{}, err
	}
	return hostDACL(d), nil
}

// Service implements host.System.
func (s *System) Service(ctx context.Context, name string) (host.Service, error) {
	svc, err := s.e.QueryService(ctx, name)
	if err != nil {
		return host.Service{}, fmt.Errorf("query service %s: %w", name, mapHostErr(err))
	}
	svc.Name = name
	return svc, nil
}

// SetServiceAutoStart implements host.System.
func (s *System) SetServiceAutoStart(ctx context.Context, name string) error {
	if err := s.e.ChangeServiceStartType(ctx, name, host.StartAuto); err != nil {
		return fmt.Errorf("set service %s to start automatically: %w", name, mapHostErr(err))
	}
	return nil
}

// Service start polling: a service reports SERVICE_START_PENDING until its
// ServiceMain says it runs (learn.microsoft.com/windows/win32/services/
// service-status-transitions); the wait is bounded so that a service that
// never settles cannot hold the caller.
const (
	serviceStartTimeout = time.Minute
	servicePollFirst    = 100 * time.Millisecond
	servicePollMax      = time.Second
)

// StartService implements host.System: StartService (a service that runs
// already answers ERROR_SERVICE_ALREADY_RUNNING, which is success here),
// then the state is polled until it runs.
func (s *System) StartService(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, serviceStartTimeout)
	defer cancel()
	if err := s.e.StartService(ctx, name); err != nil && !isCode(err, ErrorServiceAlreadyRunning) {
		return fmt.Errorf("start service %s: %w", name, mapHostErr(err))
	}
	wait := servicePollFirst
	for {
		svc, err := s.Service(ctx, name)
		if err != nil {
			return err
		}
		switch svc.State {
		case host.ServiceRunning:
			return nil
		case host.ServiceStopped, host.ServiceStopPending:
			return fmt.Errorf("service %s %s after it was started: %w", name, svc.State, host.ErrNotReady)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("service %s still %s: %w", name, svc.State, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, servicePollMax)
	}
}

// OptionalFeature implements host.System: Win32_OptionalFeature by name
// (learn.microsoft.com/windows/win32/cimwin32prov/win32-optionalfeature;
// InstallState 1 enabled, 2 disabled, 3 absent, 4 unknown).
func (s *System) OptionalFeature(ctx context.Context, name string) (host.FeatureState, error) {
	q, err := wql.Select("Win32_OptionalFeature", []string{"InstallState", "Name"}, wql.Eq("Name", name))
	if err != nil {
		return 0, fmt.Errorf("build query for feature %s: %w: %w", name, err, host.ErrInvalid)
	}
	insts, err := s.e.Query(ctx, NamespaceCIMV2, q)
	if err != nil {
		return 0, fmt.Errorf("read optional feature %s: %w", name, mapHostErr(err))
	}
	if len(insts) == 0 {
		return host.FeatureUnknown, nil
	}
	p := PropsOf(insts[0])
	st := host.FeatureState(p.RequiredUint32("InstallState"))
	if err := p.Err(); err != nil {
		return 0, fmt.Errorf("read optional feature %s: %w", name, err)
	}
	return st, nil
}

// DSMSupportedDevices implements host.System: the msdsm service's
// DsmSupportedDeviceList (REG_MULTI_SZ).
func (s *System) DSMSupportedDevices(ctx context.Context) ([]string, error) {
	v, err := s.e.RegistryValue(ctx, keyMSDSMParameters, valueDSMSupportedIDs)
	if err != nil {
		return nil, fmt.Errorf("read the Microsoft DSM's device list: %w", mapHostErr(err))
	}
	ids, ok := v.([]string)
	if !ok {
		return nil, fmt.Errorf(`HKLM\%s\%s is a %T, want REG_MULTI_SZ`, keyMSDSMParameters, valueDSMSupportedIDs, v)
	}
	return ids, nil
}

// NativeNVMeRequested implements host.System: the feature override's
// DWORD, absent or 0 meaning off.
func (s *System) NativeNVMeRequested(ctx context.Context) (bool, error) {
	v, err := s.optionalValue(ctx, keyFeatureOverrides, valueNativeNVMeOptIn)
	if err != nil {
		return false, err
	}
	n, ok := v.(uint32)
	return ok && n != 0, nil
}

// NewDiskPolicy implements host.System: the static MSFT_StorageSetting.Get,
// whose output parameter is named StorageSetting in the MOF of both
// Windows Server 2019 and 23H2 (microsoft/wmi v0.43.0
// storage/MSFT_StorageSetting.go; the method's page calls it
// StorageSettings, learn.microsoft.com/windows-hardware/drivers/storage/
// msft-storagesetting-get, and the schema test follows the MOF).
// NewDiskPolicy is a uint16 (learn.microsoft.com/windows-hardware/drivers/
// storage/msft-storagesetting).
func (s *System) NewDiskPolicy(ctx context.Context) (host.SANPolicy, error) {
	r, err := storage{s.e}.call(ctx, Method{Class: classStorageSetting, Name: "Get"})
	if err != nil {
		return 0, fmt.Errorf("read the storage settings: %w", err)
	}
	out := OutOf(classStorageSetting, "Get", r)
	in, ok := out.TryInstance("StorageSetting")
	if err := out.Err(); err != nil {
		return 0, fmt.Errorf("read the storage settings: %w", err)
	}
	if !ok {
		return 0, errors.New("read the storage settings: MSFT_StorageSetting.Get returned no StorageSetting")
	}
	p := PropsOf(in)
	policy := p.RequiredUint16("NewDiskPolicy")
	if err := p.Err(); err != nil {
		return 0, fmt.Errorf("read the storage settings: %w", err)
	}
	return host.SANPolicy(policy), nil
}
