package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Result is a check's verdict.
type Result string

// Results, from best to worst; Info is reported and never judged.
const (
	Pass Result = "pass"
	Info Result = "info"
	Warn Result = "warn"
	Fail Result = "fail"
)

// Results lists every result, for the gauge.
var Results = []Result{Pass, Info, Warn, Fail}

// Check names, in the order Run reports them.
const (
	CheckWindows         = "windows"
	CheckPrivileges      = "privileges"
	CheckKubeletDir      = "kubelet-dir"
	CheckStateDir        = "state-dir"
	CheckStorageProvider = "storage-provider"
	CheckSMBClient       = "smb-client"
	CheckISCSIInitiator  = "iscsi-initiator"
	CheckMultipath       = "multipath"
	CheckSANPolicy       = "san-policy"
	CheckNativeNVMe      = "native-nvme"
)

// Checks lists every check, in order.
var Checks = []string{CheckWindows, CheckPrivileges, CheckKubeletDir, CheckStateDir, CheckStorageProvider,
	CheckSMBClient, CheckISCSIInitiator, CheckMultipath, CheckSANPolicy, CheckNativeNVMe}

// Finding is one check's outcome.
type Finding struct {
	Check  string `json:"check"`
	Result Result `json:"result"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix is one line saying what to do; empty for a pass.
	Fix string `json:"fix,omitempty"`
}

// Config is what the checks need to know about the plugin.
type Config struct {
	// KubeletDir and StateDir are --kubelet-dir and --state-dir.
	KubeletDir string
	StateDir   string
	// SMB and ISCSI say whether the node is expected to serve volumes of
	// that backend: a service only that backend needs fails its check
	// when it is expected and warns otherwise.
	SMB, ISCSI bool
}

// Report is the outcome of every check.
type Report struct {
	// OS is the Windows the checks found (zero when it could not be read).
	OS       host.OSInfo `json:"os"`
	Findings []Finding   `json:"checks"`
}

// Worst returns the worst result of the report that counts (Info never
// does): Fail, Warn or Pass.
func (r Report) Worst() Result {
	worst := Pass
	for _, f := range r.Findings {
		switch f.Result {
		case Fail:
			return Fail
		case Warn:
			worst = Warn
		}
	}
	return worst
}

// Service names (learn.microsoft.com/windows-server/security/windows-services/
// security-guidelines-for-disabling-system-services-in-windows-server:
// Workstation is LanmanWorkstation, automatic; the Microsoft iSCSI
// Initiator Service is MSiSCSI, manual; "Microsoft Storage Spaces SMP" is
// smphost, manual, and "storage management APIs fail without this
// service").
const (
	ServiceSMBClient = "LanmanWorkstation"
	ServiceISCSI     = "MSiSCSI"
	// The driver of Windows Server 2025's native NVMe stack, named after
	// its nvmedisk.sys (an inference: no page names the service).
	serviceNativeNVMe = "nvmedisk"
	featureMultipath  = "MultiPathIO"
	// The hardware ID with which the Microsoft DSM claims iSCSI disks
	// (mpclaim -r -i -d "MSFT2005iSCSIBusType_0x9"): from Microsoft's
	// MPIO administration scripts, not a documented page.
	dsmISCSIHardwareID = "MSFT2005iSCSIBusType_0x9"
)

// Run runs every check, read-only, and returns the findings in Checks
// order. A check whose host call fails reports the failure (fail or warn,
// as its verdict would be): Run itself does not fail.
func Run(ctx context.Context, cfg Config, h host.Host, sys host.System) Report {
	var r Report
	info, osErr := sys.OS(ctx)
	if osErr == nil {
		r.OS = info
	}
	r.Findings = []Finding{
		checkWindows(info, osErr),
		checkPrivileges(ctx, sys),
		checkKubeletDir(ctx, cfg, h, sys),
		checkStateDir(ctx, cfg, sys),
		checkStorageProvider(ctx, h),
		checkSMBClient(ctx, cfg, sys),
		checkISCSIInitiator(ctx, cfg, sys),
		checkMultipath(ctx, sys),
		checkSANPolicy(ctx, sys),
		checkNativeNVMe(ctx, info, osErr, sys),
	}
	return r
}

// minBuild is the oldest supported build: Windows Server 2019.
const minBuild = 17763

// releases names the Windows Server builds (Windows Server release
// information, learn.microsoft.com/windows-server/get-started/windows-server-release-info;
// 25398, version 23H2, from Microsoft's update history for that release,
// not on that page).
var releases = map[uint32]string{
	17763: "Windows Server 2019 (1809)",
	20348: "Windows Server 2022",
	25398: "Windows Server, version 23H2",
	26100: "Windows Server 2025",
}

func checkWindows(info host.OSInfo, err error) Finding {
	f := Finding{Check: CheckWindows}
	if err != nil {
		return f.fail("could not read the Windows version: "+err.Error(), "check that the WMI service (winmgmt) runs")
	}
	build := fmt.Sprint(info.Build)
	if info.UBR != 0 {
		build += fmt.Sprintf(".%d", info.UBR)
	}
	if info.DisplayVersion != "" {
		build += ", " + info.DisplayVersion
	}
	release, known := releases[info.Build]
	if !known {
		release = "an unlisted release"
	}
	f.Detail = fmt.Sprintf("%s (build %s): %s", release, build, info.Caption)
	switch {
	case info.Build < minBuild:
		return f.fail(f.Detail+"; older than Windows Server 2019", "run the plugin on Windows Server 2019 (build 17763) or later")
	case info.ProductType == host.ProductWorkstation:
		return f.warn(f.Detail+"; a client edition", "the plugin is built and tested for Windows Server")
	case !known:
		return f.warn(f.Detail+"; newer than the releases this plugin was checked on", "report what selftest finds on it (docs/selftest.md)")
	}
	f.Result = Pass
	return f
}

func checkPrivileges(ctx context.Context, sys host.System) Finding {
	f := Finding{Check: CheckPrivileges}
	const fix = `run as a HostProcess container with runAsUserName "NT AUTHORITY\SYSTEM", or as an elevated administrator`
	t, err := sys.Token(ctx)
	switch {
	case err != nil:
		return f.fail("could not read the process token: "+err.Error(), fix)
	case t.System:
		f.Result, f.Detail = Pass, "runs as LocalSystem"
	case t.Administrators && t.Elevated:
		f.Result, f.Detail = Pass, "runs elevated as an administrator ("+t.User+")"
	case t.Elevated:
		return f.fail("elevated, but not a member of Administrators ("+t.User+")", fix)
	default:
		// A HostProcess container whose runAsUserName is a local group
		// runs as a temporary member logged on interactively, whose token
		// UAC filters: Administrators deny-only, not elevated.
		return f.fail("not elevated ("+t.User+"); a runAsUserName naming a local group gives a filtered token", fix)
	}
	return f
}

func checkKubeletDir(ctx context.Context, cfg Config, h host.Host, sys host.System) Finding {
	f := Finding{Check: CheckKubeletDir}
	info, err := h.Files.Stat(ctx, cfg.KubeletDir)
	switch {
	case err != nil:
		return f.fail(fmt.Sprintf("could not read %s: %v", cfg.KubeletDir, err), "check --kubelet-dir")
	case info.Kind == host.PathMissing:
		return f.fail(cfg.KubeletDir+" does not exist", "pass --kubelet-dir as kubelet's --root-dir, or create the directory")
	case info.Kind != host.PathDir && info.Kind != host.PathMountPoint:
		return f.fail(fmt.Sprintf("%s is a %s, not a directory", cfg.KubeletDir, info.Kind), "pass --kubelet-dir as kubelet's --root-dir")
	}
	v, err := sys.PathVolume(ctx, cfg.KubeletDir)
	if err != nil {
		return f.fail(fmt.Sprintf("could not read the volume of %s: %v", cfg.KubeletDir, err), "check --kubelet-dir")
	}
	f.Detail = fmt.Sprintf("%s is on %s, a %s %s volume", cfg.KubeletDir, v.Root, v.DriveType, v.FileSystem)
	switch {
	case v.DriveType != host.DriveFixed:
		return f.fail(f.Detail, "keep the kubelet directory on a local fixed disk: volume mount points and links are made there")
	case strings.EqualFold(v.FileSystem, "NTFS"):
		f.Result = Pass
	case strings.EqualFold(v.FileSystem, "ReFS"):
		return f.warn(f.Detail, "NTFS is what the plugin is tested on: volume mount points and directory links on ReFS are not verified")
	default:
		return f.fail(f.Detail, "keep the kubelet directory on an NTFS volume")
	}
	return f
}

func checkStateDir(ctx context.Context, cfg Config, sys host.System) Finding {
	f := Finding{Check: CheckStateDir}
	if cfg.StateDir == "" {
		f.Result, f.Detail = Info, "not checked: give --state-dir, or --driver-name for its default"
		return f
	}
	dacl, err := sys.DirectoryDACL(ctx, cfg.StateDir)
	switch {
	case errors.Is(err, host.ErrNotFound):
		f.Result, f.Detail = Info, cfg.StateDir+" does not exist yet: the plugin creates it at its first start, with a protected DACL"
		return f
	case err != nil:
		return f.warn(fmt.Sprintf("could not read the DACL of %s: %v", cfg.StateDir, err), "check --state-dir, and its permissions with icacls")
	}
	if writers := broadWriters(dacl); len(writers) > 0 {
		return f.warn(fmt.Sprintf("%s is writable by %s: anyone logged on could change the stage journal", cfg.StateDir, strings.Join(writers, ", ")),
			fmt.Sprintf(`the plugin protects it at its next start; now: icacls "%s" /inheritance:r /grant:r "SYSTEM:(OI)(CI)F" "Administrators:(OI)(CI)F"`, cfg.StateDir))
	}
	f.Result, f.Detail = Pass, cfg.StateDir+" is writable only by privileged accounts"
	return f
}

func checkStorageProvider(ctx context.Context, h host.Host) Finding {
	f := Finding{Check: CheckStorageProvider}
	const fix = `the Storage Management provider needs the "Microsoft Storage Spaces SMP" service (smphost): make sure it is not disabled`
	disks, err := h.Disks.List(ctx)
	switch {
	case err != nil:
		return f.fail("MSFT_Disk could not be listed: "+err.Error(), fix)
	case len(disks) == 0:
		return f.fail("MSFT_Disk lists no disk, not even the boot disk", fix)
	}
	f.Result, f.Detail = Pass, fmt.Sprintf("MSFT_Disk lists %d disk(s)", len(disks))
	return f
}

// serviceRuns reports a service that must run for a backend: fail when the
// backend is expected, warn otherwise.
func serviceRuns(ctx context.Context, sys host.System, check, name, what string, expected bool, fix string) (Finding, host.Service) {
	f := Finding{Check: check}
	judge := f.warn
	if expected {
		judge = f.fail
	}
	svc, err := sys.Service(ctx, name)
	switch {
	case errors.Is(err, host.ErrNotFound):
		return judge(fmt.Sprintf("the %s service %s is not installed", what, name), fix), svc
	case err != nil:
		return judge(fmt.Sprintf("could not query the %s service %s: %v", what, name, err), fix), svc
	case svc.State != host.ServiceRunning:
		return judge(fmt.Sprintf("%s (%s) is %s, start type %s", name, what, svc.State, svc.StartType), fix), svc
	}
	f.Result, f.Detail = Pass, fmt.Sprintf("%s (%s) is running, start type %s", name, what, svc.StartType)
	return f, svc
}

func checkSMBClient(ctx context.Context, cfg Config, sys host.System) Finding {
	f, _ := serviceRuns(ctx, sys, CheckSMBClient, ServiceSMBClient, "SMB client", cfg.SMB,
		"Set-Service LanmanWorkstation -StartupType Automatic; Start-Service LanmanWorkstation")
	return f
}

// checkISCSIInitiator: MSiSCSI is manual and stopped on a fresh Windows
// Server, and every iSCSI login fails until it runs; running but manual, it
// does not come back after a reboot by itself.
func checkISCSIInitiator(ctx context.Context, cfg Config, sys host.System) Finding {
	const fix = "csi-windows-node preflight --fix (sets MSiSCSI to start automatically and starts it)"
	f, svc := serviceRuns(ctx, sys, CheckISCSIInitiator, ServiceISCSI, "iSCSI initiator", cfg.ISCSI, fix)
	if f.Result == Pass && svc.StartType != host.StartAuto {
		return f.warn(f.Detail+": it will not run after a reboot until something starts it", fix)
	}
	if !cfg.ISCSI && f.Result == Warn {
		f.Detail += "; iSCSI volumes will fail to stage until it runs"
	}
	return f
}

func checkMultipath(ctx context.Context, sys host.System) Finding {
	f := Finding{Check: CheckMultipath}
	st, err := sys.OptionalFeature(ctx, featureMultipath)
	if err != nil {
		return f.warn("could not read the Multipath-IO feature: "+err.Error(), "")
	}
	if st != host.FeatureEnabled {
		f.Result = Info
		f.Detail = fmt.Sprintf("Multipath-IO is not installed (%s): needed only for multipath iSCSI volumes (multipath=true)", st)
		f.Fix = "Install-WindowsFeature Multipath-IO, then restart, before serving multipath volumes"
		return f
	}
	ids, err := sys.DSMSupportedDevices(ctx)
	const fix = "Enable-MSDSMAutomaticClaim -BusType iSCSI, then restart"
	switch {
	case errors.Is(err, host.ErrNotFound):
		return f.warn("Multipath-IO is installed but the Microsoft DSM claims no device: a multipath iSCSI volume shows one disk per path", fix)
	case err != nil:
		return f.warn("Multipath-IO is installed; the Microsoft DSM's device list could not be read: "+err.Error(), fix)
	case !slices.ContainsFunc(ids, func(id string) bool { return strings.EqualFold(strings.TrimSpace(id), dsmISCSIHardwareID) }):
		return f.warn("Multipath-IO is installed but the Microsoft DSM does not claim iSCSI disks: a multipath iSCSI volume shows one disk per path", fix)
	}
	f.Result, f.Detail = Pass, "Multipath-IO is installed and the Microsoft DSM claims iSCSI disks"
	return f
}

// sanPolicyMeaning says what each policy means for a disk attached to the
// node (MSFT_StorageSetting.NewDiskPolicy,
// learn.microsoft.com/windows-hardware/drivers/storage/msft-storagesetting;
// VDS_SAN_POLICY, learn.microsoft.com/windows/win32/api/vds/ne-vds-vds_san_policy).
var sanPolicyMeaning = map[host.SANPolicy]string{
	host.SANPolicyOnlineAll:       "new disks come online read-write: a shared disk may be mounted by Windows before the plugin sees it",
	host.SANPolicyOfflineShared:   "new disks on a shared bus (iSCSI, SAS, FC, SCSI) attach offline and read-only; the plugin brings them online on stage",
	host.SANPolicyOfflineAll:      "every new disk attaches offline and read-only; the plugin brings it online on stage",
	host.SANPolicyOfflineInternal: "new disks not on a shared bus attach offline and read-only; the plugin brings them online on stage",
}

func checkSANPolicy(ctx context.Context, sys host.System) Finding {
	f := Finding{Check: CheckSANPolicy}
	p, err := sys.NewDiskPolicy(ctx)
	if err != nil {
		return f.warn("could not read the SAN policy: "+err.Error(), "")
	}
	f.Result = Info
	f.Detail = "SAN policy " + p.String()
	if m, ok := sanPolicyMeaning[p]; ok {
		f.Detail += ": " + m
	}
	return f
}

// nativeNVMeBuild is Windows Server 2025, the first with the native NVMe
// stack (the Windows Server blog, "Announcing Native NVMe in Windows
// Server 2025", techcommunity.microsoft.com/blog/
// windowsservernewsandbestpractices/4477353).
const nativeNVMeBuild = 26100

func checkNativeNVMe(ctx context.Context, info host.OSInfo, osErr error, sys host.System) Finding {
	f := Finding{Check: CheckNativeNVMe, Result: Info}
	if osErr != nil || info.Build < nativeNVMeBuild {
		f.Detail = "not available before Windows Server 2025"
		return f
	}
	asked, err := sys.NativeNVMeRequested(ctx)
	if err != nil {
		return f.warn("could not read whether it is requested: "+err.Error(), "")
	}
	driver := "absent"
	if svc, err := sys.Service(ctx, serviceNativeNVMe); err == nil {
		driver = svc.State.String()
	} else if !errors.Is(err, host.ErrNotFound) {
		driver = "unknown (" + err.Error() + ")"
	}
	f.Detail = fmt.Sprintf("requested=%s driver=%s: NVMe disks may identify themselves differently under it", yesNo(asked), driver)
	return f
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (f Finding) fail(detail, fix string) Finding {
	f.Result, f.Detail, f.Fix = Fail, detail, fix
	return f
}

func (f Finding) warn(detail, fix string) Finding {
	f.Result, f.Detail, f.Fix = Warn, detail, fix
	return f
}
