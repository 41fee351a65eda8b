package preflight_test

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// Every check in each of its states, over the Windows host and the
// scripted executor: each case scripts the whole run as Windows answers it
// (the replies of pkg/winhost's own tests, and the pages cited in
// preflight.go) with one thing changed, and asserts that check's verdict.

const (
	kubeletDir = `C:\var\lib\kubelet`
	stateDir   = `C:\var\lib\csi-windows-node\state`
	nsStorage  = winhost.NamespaceStorage
	nsCIMV2    = winhost.NamespaceCIMV2
	keyCurVer  = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`
	attrDir    = 0x10
	wqlDisks   = "SELECT ObjectId, Number, Path, SerialNumber, UniqueId, UniqueIdFormat, Location, FriendlyName, Manufacturer, Model, AdapterSerialNumber, " +
		"Guid, Size, BusType, PartitionStyle, IsBoot, IsSystem, IsReadOnly, IsOffline, OfflineReason, HealthStatus FROM MSFT_Disk"
)

// node is what the scripted Windows answers; the zero value of a field
// means the healthy answer.
type node struct {
	build       string
	productType int64
	token       *host.Token
	kubelet     *scripted.Reply // GetFileAttributes of the kubelet directory
	driveType   uint32
	fileSystem  string
	stateSD     *scripted.Reply
	disks       *scripted.Reply
	lanman      *scripted.Reply
	msiscsi     *scripted.Reply
	mpio        int64 // InstallState; -1: Windows lists no such feature
	dsm         *scripted.Reply
	policy      int64
	nvme        *scripted.Reply // the feature override (build 26100)
	nvmedisk    *scripted.Reply
}

func svc(st host.ServiceState, start host.StartType) *scripted.Reply {
	return &scripted.Reply{Service: host.Service{State: st, StartType: start}}
}

func w32(call string, code uint32) *scripted.Reply {
	return &scripted.Reply{Err: &winhost.Win32Error{Call: call, Code: code}}
}

const allow = winacl.AccessAllowedType

// dacl is the reply of FileSecurity (GetSecurityInfo): a self-relative descriptor
// holding the entries.
func dacl(t *testing.T, control uint16, entries ...winacl.ACE) *scripted.Reply {
	t.Helper()
	b, err := winacl.Descriptor{Control: control, DACL: &winacl.ACL{Revision: 2, ACEs: entries}}.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return &scripted.Reply{Bytes: b}
}

func entry(t *testing.T, typ, flags uint8, mask uint32, sid string) winacl.ACE {
	t.Helper()
	a, err := winacl.AllowACE(sid, mask, flags)
	if err != nil {
		t.Fatal(err)
	}
	a.Type, a.Raw[0] = typ, typ
	return a
}

func or(r *scripted.Reply, def scripted.Reply) scripted.Reply {
	if r != nil {
		return *r
	}
	return def
}

var bootDisk = winhost.Instance{Path: `\\NODE1\ROOT\Microsoft\Windows\Storage:MSFT_Disk.ObjectId="{1}"`, Class: "MSFT_Disk", Props: map[string]any{
	"ObjectId": "{1}", "Number": int64(0), "Path": `\\?\scsi#disk&ven_msft&prod_virtual_disk#1`, "SerialNumber": "os",
	"UniqueId": "6002248001", "Location": "PCI Slot 0 : Adapter 0 : Port 0 : Target 0 : LUN 0", "UniqueIdFormat": int64(3), "FriendlyName": "Msft Virtual Disk", "Manufacturer": "Msft", "Model": "Virtual Disk", "AdapterSerialNumber": "",
	"Guid": "{5A8B0D2E-1C3F-4E6A-9B7D-2F4E6A8C0B1D}",
	"Size": "137438953472", "BusType": int64(10), "PartitionStyle": int64(2), "IsBoot": true, "IsSystem": true,
	"IsReadOnly": false, "IsOffline": false, "OfflineReason": nil, "HealthStatus": int64(0)}}

// script lays out the calls of one Run.
func (n node) script(t *testing.T, e *scripted.Executor) {
	build := n.build
	if build == "" {
		build = "20348"
	}
	pt := n.productType
	if pt == 0 {
		pt = 3
	}
	e.ExpectQuery(nsCIMV2, "SELECT BuildNumber, CSName, Caption, ProductType, Version FROM Win32_OperatingSystem",
		scripted.Reply{Instances: []winhost.Instance{{Path: `\\NODE1\root\cimv2:Win32_OperatingSystem=@`, Class: "Win32_OperatingSystem",
			Props: map[string]any{"BuildNumber": build, "CSName": "NODE1", "Caption": "Microsoft Windows Server Datacenter",
				"ProductType": pt, "Version": "10.0." + build}}}})
	e.ExpectWin32("RegistryValue", []any{keyCurVer, "UBR"}, scripted.Reply{Value: uint32(2849)})
	e.ExpectWin32("RegistryValue", []any{keyCurVer, "DisplayVersion"}, scripted.Reply{Value: "21H2"})

	tok := host.Token{User: "S-1-5-18", System: true, Administrators: true, Elevated: true}
	if n.token != nil {
		tok = *n.token
	}
	e.ExpectWin32("ProcessToken", nil, scripted.Reply{Token: tok})

	kubelet := or(n.kubelet, scripted.Reply{Uint32: attrDir})
	e.ExpectWin32("GetFileAttributes", []any{`\\?\` + kubeletDir}, kubelet)
	if kubelet.Err == nil && kubelet.Uint32&attrDir != 0 {
		dt := n.driveType
		if dt == 0 {
			dt = 3
		}
		fs := n.fileSystem
		if fs == "" {
			fs = "NTFS"
		}
		e.ExpectWin32("GetVolumePathName", []any{kubeletDir}, scripted.Reply{String: `C:\`})
		e.ExpectWin32("GetDriveType", []any{`C:\`}, scripted.Reply{Uint32: dt})
		e.ExpectWin32("GetVolumeFileSystem", []any{`C:\`}, scripted.Reply{String: fs})
	}
	e.ExpectWin32("FileSecurity", []any{stateDir, winacl.DACLSecurityInformation},
		or(n.stateSD, *dacl(t, winacl.ControlDACLProtected, entry(t, allow, 3, winacl.FullControl, winacl.SIDLocalSystem),
			entry(t, allow, 3, winacl.FullControl, winacl.SIDAdministrators))))
	e.ExpectQuery(nsStorage, wqlDisks, or(n.disks, scripted.Reply{Instances: []winhost.Instance{bootDisk}}))
	e.ExpectWin32("QueryService", []any{"LanmanWorkstation"}, or(n.lanman, *svc(host.ServiceRunning, host.StartAuto)))
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, or(n.msiscsi, *svc(host.ServiceRunning, host.StartAuto)))

	mpio := scripted.Reply{}
	if n.mpio != -1 {
		st := n.mpio
		if st == 0 {
			st = 1
		}
		mpio.Instances = []winhost.Instance{{Path: `\\NODE1\root\cimv2:Win32_OptionalFeature.Name="MultiPathIO"`, Class: "Win32_OptionalFeature",
			Props: map[string]any{"InstallState": st, "Name": "MultiPathIO"}}}
	}
	e.ExpectQuery(nsCIMV2, "SELECT InstallState, Name FROM Win32_OptionalFeature WHERE Name = 'MultiPathIO'", mpio)
	if n.mpio == 0 || n.mpio == 1 {
		e.ExpectWin32("RegistryValue", []any{`SYSTEM\CurrentControlSet\Services\msdsm\Parameters`, "DsmSupportedDeviceList"},
			or(n.dsm, scripted.Reply{Value: []string{"MSFT2005iSCSIBusType_0x9"}}))
	}
	policy := n.policy
	if policy == 0 {
		policy = 2
	}
	e.ExpectCall(nsStorage, winhost.Method{Class: "MSFT_StorageSetting", Name: "Get"}, scripted.Reply{Result: winhost.Result{Out: map[string]any{
		"StorageSetting": winhost.Instance{Class: "MSFT_StorageSetting", Props: map[string]any{"NewDiskPolicy": policy, "ScrubPolicy": int64(0)}}}}})
	if b, _ := strconv.Atoi(build); b >= 26100 {
		e.ExpectWin32("RegistryValue", []any{`SYSTEM\CurrentControlSet\Policies\Microsoft\FeatureManagement\Overrides`, "1176759950"},
			or(n.nvme, *w32("RegOpenKeyEx", winhost.ErrorFileNotFound)))
		e.ExpectWin32("QueryService", []any{"nvmedisk"}, or(n.nvmedisk, *w32("OpenService", winhost.ErrorServiceDoesNotExist)))
	}
}

var cfg = preflight.Config{KubeletDir: kubeletDir, StateDir: stateDir, SMB: true, ISCSI: true}

func run(t *testing.T, n node, c preflight.Config) preflight.Report {
	t.Helper()
	e := scripted.New(t)
	n.script(t, e)
	return preflight.Run(context.Background(), c, winhost.New(e), winhost.NewAdmin(e).System)
}

func finding(t *testing.T, r preflight.Report, check string) preflight.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no finding for %s in %+v", check, r.Findings)
	return preflight.Finding{}
}

// A healthy Windows Server 2022 node passes every check; the two that are
// reported, not judged, say what they found.
func TestHealthyNode(t *testing.T) {
	r := run(t, node{}, cfg)
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Check+"="+string(f.Result))
		if f.Detail == "" {
			t.Errorf("%s: no detail", f.Check)
		}
		if f.Result == preflight.Pass && f.Fix != "" {
			t.Errorf("%s passes with a fix %q", f.Check, f.Fix)
		}
	}
	want := []string{"windows=pass", "privileges=pass", "kubelet-dir=pass", "state-dir=pass", "storage-provider=pass",
		"smb-client=pass", "iscsi-initiator=pass", "multipath=pass", "san-policy=info", "native-nvme=info"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	if r.Worst() != preflight.Pass {
		t.Errorf("Worst() = %s", r.Worst())
	}
	if r.OS.Build != 20348 || r.OS.ComputerName != "NODE1" {
		t.Errorf("OS = %+v", r.OS)
	}
	if f := finding(t, r, preflight.CheckWindows); !strings.Contains(f.Detail, "Windows Server 2022 (build 20348.2849, 21H2)") {
		t.Errorf("windows detail %q does not name the release and build", f.Detail)
	}
}

func TestEveryCheckInEachState(t *testing.T) {
	stopped := svc(host.ServiceStopped, host.StartManual)
	noISCSI := preflight.Config{KubeletDir: kubeletDir, StateDir: stateDir, SMB: true}
	noSMB := preflight.Config{KubeletDir: kubeletDir, StateDir: stateDir, ISCSI: true}
	tests := []struct {
		name   string
		n      node
		cfg    preflight.Config
		check  string
		want   preflight.Result
		detail string // a fragment of the detail
	}{
		{"Server 2019", node{build: "17763"}, cfg, preflight.CheckWindows, preflight.Pass, "Windows Server 2019"},
		{"Server 2025", node{build: "26100"}, cfg, preflight.CheckWindows, preflight.Pass, "Windows Server 2025"},
		{"Server 2016", node{build: "14393"}, cfg, preflight.CheckWindows, preflight.Fail, "older than Windows Server 2019"},
		{"client edition", node{productType: 1}, cfg, preflight.CheckWindows, preflight.Warn, "client edition"},
		{"unlisted release", node{build: "26200"}, cfg, preflight.CheckWindows, preflight.Warn, "unlisted"},

		{"administrator, elevated", node{token: &host.Token{User: "S-1-5-21-1-500", Administrators: true, Elevated: true}}, cfg, preflight.CheckPrivileges, preflight.Pass, "administrator"},
		{"filtered administrator token", node{token: &host.Token{User: "S-1-5-21-1-1001"}}, cfg, preflight.CheckPrivileges, preflight.Fail, "not elevated"},
		{"elevated, not an administrator", node{token: &host.Token{User: "S-1-5-21-1-1001", Elevated: true}}, cfg, preflight.CheckPrivileges, preflight.Fail, "not a member"},

		{"kubelet dir missing", node{kubelet: w32("GetFileAttributes", winhost.ErrorFileNotFound)}, cfg, preflight.CheckKubeletDir, preflight.Fail, "does not exist"},
		{"kubelet dir a file", node{kubelet: &scripted.Reply{Uint32: 0x20}}, cfg, preflight.CheckKubeletDir, preflight.Fail, "not a directory"},
		{"kubelet dir unreadable", node{kubelet: w32("GetFileAttributes", winhost.ErrorAccessDenied)}, cfg, preflight.CheckKubeletDir, preflight.Fail, "could not read"},
		{"kubelet dir on ReFS", node{fileSystem: "ReFS"}, cfg, preflight.CheckKubeletDir, preflight.Warn, "ReFS"},
		{"kubelet dir on FAT32", node{fileSystem: "FAT32"}, cfg, preflight.CheckKubeletDir, preflight.Fail, "FAT32"},
		{"kubelet dir remote", node{driveType: 4}, cfg, preflight.CheckKubeletDir, preflight.Fail, "remote"},

		// C:\'s entries inherited, as on Windows Server before the plugin
		// protects the directory: Authenticated Users may create folders.
		{"state dir writable by Authenticated Users", node{stateSD: dacl(t, winacl.ControlDACLAutoInherited,
			entry(t, allow, 0x13, winacl.FullControl, winacl.SIDLocalSystem), entry(t, allow, 0x13, winacl.FullControl, winacl.SIDAdministrators),
			entry(t, allow, 0x1b, 0xe0010000, winacl.SIDAuthenticatedUsers), entry(t, allow, 0x12, 0x4, winacl.SIDAuthenticatedUsers))},
			cfg, preflight.CheckStateDir, preflight.Warn, "Authenticated Users"},
		{"state dir readable by Users", node{stateSD: dacl(t, winacl.ControlDACLProtected,
			entry(t, allow, 3, winacl.FullControl, winacl.SIDLocalSystem), entry(t, allow, 3, winacl.ReadExecute, winacl.SIDUsers),
			entry(t, winacl.AccessDeniedType, 0, winacl.FullControl, winacl.SIDEveryone))},
			cfg, preflight.CheckStateDir, preflight.Pass, "only by privileged"},
		{"state dir not made yet", node{stateSD: w32("GetSecurityInfo", winhost.ErrorFileNotFound)}, cfg, preflight.CheckStateDir, preflight.Info, "does not exist yet"},
		{"state dir DACL unreadable", node{stateSD: &scripted.Reply{Bytes: []byte{1, 0, 4}}}, cfg, preflight.CheckStateDir, preflight.Warn, "could not read the DACL"},

		{"storage provider fails", node{disks: &scripted.Reply{Err: &winhost.COMError{Op: "ExecQuery", HResult: 0x80041013}}}, cfg, preflight.CheckStorageProvider, preflight.Fail, "could not be listed"},
		{"storage provider lists nothing", node{disks: &scripted.Reply{}}, cfg, preflight.CheckStorageProvider, preflight.Fail, "no disk"},

		{"SMB client stopped, SMB expected", node{lanman: stopped}, cfg, preflight.CheckSMBClient, preflight.Fail, "stopped"},
		{"SMB client stopped, SMB not expected", node{lanman: stopped}, noSMB, preflight.CheckSMBClient, preflight.Warn, "stopped"},

		{"MSiSCSI stopped (a fresh node), iSCSI expected", node{msiscsi: stopped}, cfg, preflight.CheckISCSIInitiator, preflight.Fail, "stopped, start type manual"},
		{"MSiSCSI stopped, iSCSI not expected", node{msiscsi: stopped}, noISCSI, preflight.CheckISCSIInitiator, preflight.Warn, "fail to stage until it runs"},
		{"MSiSCSI running, manual", node{msiscsi: svc(host.ServiceRunning, host.StartManual)}, cfg, preflight.CheckISCSIInitiator, preflight.Warn, "after a reboot"},
		{"MSiSCSI disabled", node{msiscsi: svc(host.ServiceStopped, host.StartDisabled)}, cfg, preflight.CheckISCSIInitiator, preflight.Fail, "disabled"},
		{"MSiSCSI not installed", node{msiscsi: w32("OpenService", winhost.ErrorServiceDoesNotExist)}, cfg, preflight.CheckISCSIInitiator, preflight.Fail, "not installed"},

		{"Multipath-IO not installed", node{mpio: 2}, cfg, preflight.CheckMultipath, preflight.Info, "not installed"},
		{"Multipath-IO not listed", node{mpio: -1}, cfg, preflight.CheckMultipath, preflight.Info, "not installed"},
		{"DSM claims no device", node{dsm: w32("RegOpenKeyEx", winhost.ErrorFileNotFound)}, cfg, preflight.CheckMultipath, preflight.Warn, "claims no device"},
		{"DSM does not claim iSCSI", node{dsm: &scripted.Reply{Value: []string{"MSFT2011SASBusType_0xA"}}}, cfg, preflight.CheckMultipath, preflight.Warn, "does not claim iSCSI"},

		{"SAN policy OnlineAll", node{policy: 1}, cfg, preflight.CheckSANPolicy, preflight.Info, "OnlineAll"},
		{"SAN policy OfflineAll", node{policy: 3}, cfg, preflight.CheckSANPolicy, preflight.Info, "OfflineAll"},

		{"native NVMe requested and running", node{build: "26100", nvme: &scripted.Reply{Value: uint32(1)}, nvmedisk: svc(host.ServiceRunning, host.StartBoot)},
			cfg, preflight.CheckNativeNVMe, preflight.Info, "requested=yes driver=running"},
		{"native NVMe not requested", node{build: "26100"}, cfg, preflight.CheckNativeNVMe, preflight.Info, "requested=no driver=absent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.n, tt.cfg)
			f := finding(t, r, tt.check)
			if f.Result != tt.want || !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("%s = %s %q, want %s with %q", tt.check, f.Result, f.Detail, tt.want, tt.detail)
			}
			if (f.Result == preflight.Fail || f.Result == preflight.Warn) && f.Fix == "" && tt.check != preflight.CheckNativeNVMe {
				t.Errorf("%s %s without a fix", tt.check, f.Result)
			}
			wantWorst := preflight.Pass
			for _, g := range r.Findings {
				if g.Result == preflight.Fail {
					wantWorst = preflight.Fail
					break
				}
				if g.Result == preflight.Warn {
					wantWorst = preflight.Warn
				}
			}
			if r.Worst() != wantWorst {
				t.Errorf("Worst() = %s, want %s", r.Worst(), wantWorst)
			}
		})
	}
}

// On a fresh node MSiSCSI is manual and stopped: preflight fails; --fix
// sets it to start automatically and starts it, changing nothing else;
// preflight then passes. One scripted node throughout: the checks, the
// fix's calls (and no other change), the checks again. A second --fix has
// nothing to do.
func TestFixStartsMSiSCSI(t *testing.T) {
	ctx := context.Background()
	e := scripted.New(t)
	node{msiscsi: svc(host.ServiceStopped, host.StartManual)}.script(t, e)
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, *svc(host.ServiceStopped, host.StartManual))
	e.ExpectWin32("ChangeServiceStartType", []any{"MSiSCSI", host.StartAuto}, scripted.Reply{})
	e.ExpectWin32("StartService", []any{"MSiSCSI"}, scripted.Reply{})
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, *svc(host.ServiceRunning, host.StartAuto))
	node{}.script(t, e) // MSiSCSI now running, automatic
	sys := winhost.NewAdmin(e).System

	before := preflight.Run(ctx, cfg, winhost.New(e), sys)
	if f := finding(t, before, preflight.CheckISCSIInitiator); f.Result != preflight.Fail || before.Worst() != preflight.Fail {
		t.Fatalf("before the fix: %s %q (worst %s), want fail", f.Result, f.Detail, before.Worst())
	}
	changes, err := preflight.Fix(ctx, sys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"MSiSCSI: start type manual -> automatic", "MSiSCSI: stopped -> running"}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("Fix() = %q, want %q", changes, want)
	}
	after := preflight.Run(ctx, cfg, winhost.New(e), sys)
	if f := finding(t, after, preflight.CheckISCSIInitiator); f.Result != preflight.Pass || after.Worst() == preflight.Fail {
		t.Fatalf("after the fix: %s %q (worst %s), want pass", f.Result, f.Detail, after.Worst())
	}
	for _, f := range before.Findings {
		if f.Check != preflight.CheckISCSIInitiator && finding(t, after, f.Check).Result != f.Result {
			t.Errorf("--fix changed %s: %s before, %s after", f.Check, f.Result, finding(t, after, f.Check).Result)
		}
	}

	e = scripted.New(t)
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, *svc(host.ServiceRunning, host.StartAuto))
	if changes, err := preflight.Fix(ctx, winhost.NewAdmin(e).System); err != nil || len(changes) != 0 {
		t.Errorf("Fix() on a fixed node = %q, %v; want no change", changes, err)
	}

	// Running but manual: only the start type changes.
	e = scripted.New(t)
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, *svc(host.ServiceRunning, host.StartManual))
	e.ExpectWin32("ChangeServiceStartType", []any{"MSiSCSI", host.StartAuto}, scripted.Reply{})
	if changes, err := preflight.Fix(ctx, winhost.NewAdmin(e).System); err != nil || len(changes) != 1 {
		t.Errorf("Fix() on a running manual MSiSCSI = %q, %v; want one change", changes, err)
	}

	// A refused change is an error naming it.
	e = scripted.New(t)
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, *svc(host.ServiceStopped, host.StartManual))
	e.ExpectWin32("ChangeServiceStartType", []any{"MSiSCSI", host.StartAuto}, *w32("OpenService", winhost.ErrorAccessDenied))
	if _, err := preflight.Fix(ctx, winhost.NewAdmin(e).System); err == nil || !strings.Contains(err.Error(), "MSiSCSI") {
		t.Errorf("Fix() refused = %v, want an error naming MSiSCSI", err)
	}
}
