package winhost_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// The operator's calls (admin.go, system.go, scratch.go) over the scripted
// executor. Replies follow the pages cited in the code: Win32_OperatingSystem's
// BuildNumber and Version are strings and ProductType a uint32 (int64
// through the executor); MSFT_StorageSetting.Get hands back an embedded
// MSFT_StorageSetting.

const (
	nsCIMV2 = winhost.NamespaceCIMV2

	wqlOS       = "SELECT BuildNumber, CSName, Caption, ProductType, Version FROM Win32_OperatingSystem"
	wqlMPIO     = "SELECT InstallState, Name FROM Win32_OptionalFeature WHERE Name = 'MultiPathIO'"
	wqlUsers    = "SELECT Name FROM Win32_UserAccount WHERE LocalAccount = TRUE"
	wqlShares   = "SELECT Name, ScopeName, Path FROM MSFT_SmbShare"
	keyCurVer   = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`
	keyDSM      = `SYSTEM\CurrentControlSet\Services\msdsm\Parameters`
	keyOverride = `SYSTEM\CurrentControlSet\Policies\Microsoft\FeatureManagement\Overrides`
)

func osInst(build string) winhost.Instance {
	return winhost.Instance{Path: `\\NODE1\root\cimv2:Win32_OperatingSystem=@`, Class: "Win32_OperatingSystem", Props: map[string]any{
		"BuildNumber": build, "CSName": "NODE1", "Caption": "Microsoft Windows Server 2022 Datacenter",
		"ProductType": int64(3), "Version": "10.0." + build}}
}

func shareInst(name, path string) winhost.Instance {
	return winhost.Instance{Path: `\\NODE1\ROOT\Microsoft\Windows\SMB:MSFT_SmbShare.Name="` + name + `",ScopeName="*"`,
		Class: "MSFT_SmbShare", Props: map[string]any{"Name": name, "Path": path, "ScopeName": "*"}}
}

func adminOf(e *scripted.Executor) host.Admin { return winhost.NewAdmin(e) }

func TestSystemOS(t *testing.T) {
	notFound := scripted.Reply{Err: w32("RegQueryValueEx", winhost.ErrorFileNotFound)}
	tests := []struct {
		name   string
		script func(e *scripted.Executor)
		want   host.OSInfo
		err    bool
	}{
		{"2022 with patch level", func(e *scripted.Executor) {
			e.ExpectQuery(nsCIMV2, wqlOS, scripted.Reply{Instances: []winhost.Instance{osInst("20348")}})
			e.ExpectWin32("RegistryValue", []any{keyCurVer, "UBR"}, scripted.Reply{Value: uint32(2849)})
			e.ExpectWin32("RegistryValue", []any{keyCurVer, "DisplayVersion"}, scripted.Reply{Value: "21H2"})
		}, host.OSInfo{Caption: "Microsoft Windows Server 2022 Datacenter", Version: "10.0.20348", Build: 20348, UBR: 2849,
			DisplayVersion: "21H2", ProductType: host.ProductServer, ComputerName: "NODE1"}, false},
		{"2019: no DisplayVersion, ReleaseId instead; UBR missing", func(e *scripted.Executor) {
			e.ExpectQuery(nsCIMV2, wqlOS, scripted.Reply{Instances: []winhost.Instance{osInst("17763")}})
			e.ExpectWin32("RegistryValue", []any{keyCurVer, "UBR"}, notFound)
			e.ExpectWin32("RegistryValue", []any{keyCurVer, "DisplayVersion"}, notFound)
			e.ExpectWin32("RegistryValue", []any{keyCurVer, "ReleaseId"}, scripted.Reply{Value: "1809"})
		}, host.OSInfo{Caption: "Microsoft Windows Server 2022 Datacenter", Version: "10.0.17763", Build: 17763,
			DisplayVersion: "1809", ProductType: host.ProductServer, ComputerName: "NODE1"}, false},
		{"BuildNumber not a number", func(e *scripted.Executor) {
			e.ExpectQuery(nsCIMV2, wqlOS, scripted.Reply{Instances: []winhost.Instance{osInst("20348x")}})
		}, host.OSInfo{}, true},
		{"registry refused", func(e *scripted.Executor) {
			e.ExpectQuery(nsCIMV2, wqlOS, scripted.Reply{Instances: []winhost.Instance{osInst("20348")}})
			e.ExpectWin32("RegistryValue", []any{keyCurVer, "UBR"}, scripted.Reply{Err: w32("RegOpenKeyEx", winhost.ErrorAccessDenied)})
		}, host.OSInfo{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			tt.script(e)
			got, err := adminOf(e).System.OS(context.Background())
			if (err != nil) != tt.err {
				t.Fatalf("OS() error = %v, want error %v", err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("OS() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSystemTokenAndVolume(t *testing.T) {
	e := scripted.New(t)
	tok := host.Token{User: "S-1-5-18", System: true, Administrators: true, Elevated: true}
	e.ExpectWin32("ProcessToken", nil, scripted.Reply{Token: tok})
	e.ExpectWin32("GetVolumePathName", []any{`C:\var\lib\kubelet`}, scripted.Reply{String: `C:\`})
	e.ExpectWin32("GetDriveType", []any{`C:\`}, scripted.Reply{Uint32: 3})
	e.ExpectWin32("GetVolumeFileSystem", []any{`C:\`}, scripted.Reply{String: "NTFS"})
	e.ExpectWin32("FileSecurity", []any{`C:\state`, uint32(4)}, scripted.Reply{Bytes: descriptor(t, 0, 2,
		ace(t, host.ACEAccessAllowed, 0x13, 0x1f01ff, "S-1-5-18"), ace(t, host.ACEAccessAllowed, 0x1b, 0xe0010000, "S-1-5-11"))})
	e.ExpectWin32("FileSecurity", []any{`C:\missing`, uint32(4)}, scripted.Reply{Err: w32("GetSecurityInfo", winhost.ErrorFileNotFound)})
	s := adminOf(e).System
	ctx := context.Background()
	if got, err := s.Token(ctx); err != nil || got != tok {
		t.Errorf("Token() = %+v, %v", got, err)
	}
	if got, err := s.PathVolume(ctx, `C:\var\lib\kubelet`); err != nil || got != (host.PathVolume{Root: `C:\`, DriveType: host.DriveFixed, FileSystem: "NTFS"}) {
		t.Errorf("PathVolume() = %+v, %v", got, err)
	}
	d, err := s.DirectoryDACL(ctx, `C:\state`)
	if err != nil || d.Null || d.Protected || len(d.Entries) != 2 || d.Entries[1].SID != "S-1-5-11" || d.Entries[1].Mask != 0xe0010000 {
		t.Errorf("DirectoryDACL() = %+v, %v", d, err)
	}
	if _, err := s.DirectoryDACL(ctx, `C:\missing`); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("DirectoryDACL(missing) = %v, want ErrNotFound", err)
	}
}

func TestSystemServices(t *testing.T) {
	ctx := context.Background()
	svc := func(st host.ServiceState, start host.StartType) scripted.Reply {
		return scripted.Reply{Service: host.Service{State: st, StartType: start}}
	}
	t.Run("missing", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("QueryService", []any{"MSiSCSI"}, scripted.Reply{Err: w32("OpenService", winhost.ErrorServiceDoesNotExist)})
		if _, err := adminOf(e).System.Service(ctx, "MSiSCSI"); !errors.Is(err, host.ErrNotFound) {
			t.Errorf("Service(missing) = %v, want ErrNotFound", err)
		}
	})
	t.Run("fix: start type, then start and wait", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("ChangeServiceStartType", []any{"MSiSCSI", host.StartAuto}, ok())
		e.ExpectWin32("StartService", []any{"MSiSCSI"}, ok())
		e.ExpectWin32("QueryService", []any{"MSiSCSI"}, svc(host.ServiceStartPending, host.StartAuto))
		e.ExpectWin32("QueryService", []any{"MSiSCSI"}, svc(host.ServiceRunning, host.StartAuto))
		s := adminOf(e).System
		if err := s.SetServiceAutoStart(ctx, "MSiSCSI"); err != nil {
			t.Fatal(err)
		}
		if err := s.StartService(ctx, "MSiSCSI"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("already running", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("StartService", []any{"MSiSCSI"}, scripted.Reply{Err: w32("StartService", winhost.ErrorServiceAlreadyRunning)})
		e.ExpectWin32("QueryService", []any{"MSiSCSI"}, svc(host.ServiceRunning, host.StartAuto))
		if err := adminOf(e).System.StartService(ctx, "MSiSCSI"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("StartService", []any{"MSiSCSI"}, scripted.Reply{Err: w32("StartService", winhost.ErrorServiceDisabled)})
		if err := adminOf(e).System.StartService(ctx, "MSiSCSI"); !errors.Is(err, host.ErrConflict) {
			t.Fatalf("StartService(disabled) = %v, want ErrConflict", err)
		}
	})
	t.Run("stops again", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("StartService", []any{"MSiSCSI"}, ok())
		e.ExpectWin32("QueryService", []any{"MSiSCSI"}, svc(host.ServiceStopped, host.StartAuto))
		if err := adminOf(e).System.StartService(ctx, "MSiSCSI"); !errors.Is(err, host.ErrNotReady) {
			t.Fatalf("StartService(stops) = %v, want ErrNotReady", err)
		}
	})
	t.Run("never settles", func(t *testing.T) {
		// The caller's context ends while the service is still starting.
		e := scripted.New(t)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		e.ExpectWin32("StartService", []any{"MSiSCSI"}, ok())
		e.ExpectMatching("QueryService", func(scripted.Call) string { cancel(); return "" }, svc(host.ServiceStartPending, host.StartAuto))
		if err := adminOf(e).System.StartService(cctx, "MSiSCSI"); !errors.Is(err, context.Canceled) {
			t.Fatalf("StartService with an ended context = %v, want context.Canceled", err)
		}
	})
}

func TestSystemMultipathNVMeAndSANPolicy(t *testing.T) {
	ctx := context.Background()
	e := scripted.New(t)
	e.ExpectQuery(nsCIMV2, wqlMPIO, scripted.Reply{Instances: []winhost.Instance{{Path: `\\NODE1\root\cimv2:Win32_OptionalFeature.Name="MultiPathIO"`,
		Class: "Win32_OptionalFeature", Props: map[string]any{"InstallState": int64(1), "Name": "MultiPathIO"}}}})
	e.ExpectQuery(nsCIMV2, wqlMPIO, scripted.Reply{})
	e.ExpectWin32("RegistryValue", []any{keyDSM, "DsmSupportedDeviceList"}, scripted.Reply{Value: []string{"Vendor  8Product       16", "MSFT2005iSCSIBusType_0x9"}})
	e.ExpectWin32("RegistryValue", []any{keyDSM, "DsmSupportedDeviceList"}, scripted.Reply{Err: w32("RegOpenKeyEx", winhost.ErrorFileNotFound)})
	e.ExpectWin32("RegistryValue", []any{keyOverride, "1176759950"}, scripted.Reply{Value: uint32(1)})
	e.ExpectWin32("RegistryValue", []any{keyOverride, "1176759950"}, scripted.Reply{Err: w32("RegOpenKeyEx", winhost.ErrorFileNotFound)})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_StorageSetting", Name: "Get"}, scripted.Reply{Result: winhost.Result{Out: map[string]any{
		"StorageSetting": winhost.Instance{Class: "MSFT_StorageSetting", Props: map[string]any{"NewDiskPolicy": int64(2), "ScrubPolicy": int64(0)}}}}})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_StorageSetting", Name: "Get"}, scripted.Reply{Result: winhost.Result{Out: map[string]any{"StorageSetting": nil}}})

	s := adminOf(e).System
	if st, err := s.OptionalFeature(ctx, "MultiPathIO"); err != nil || st != host.FeatureEnabled {
		t.Errorf("OptionalFeature() = %v, %v; want enabled", st, err)
	}
	if st, err := s.OptionalFeature(ctx, "MultiPathIO"); err != nil || st != host.FeatureUnknown {
		t.Errorf("OptionalFeature(not listed) = %v, %v; want unknown", st, err)
	}
	if ids, err := s.DSMSupportedDevices(ctx); err != nil || len(ids) != 2 {
		t.Errorf("DSMSupportedDevices() = %q, %v", ids, err)
	}
	if _, err := s.DSMSupportedDevices(ctx); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("DSMSupportedDevices(no list) = %v, want ErrNotFound", err)
	}
	if on, err := s.NativeNVMeRequested(ctx); err != nil || !on {
		t.Errorf("NativeNVMeRequested() = %v, %v; want true", on, err)
	}
	if on, err := s.NativeNVMeRequested(ctx); err != nil || on {
		t.Errorf("NativeNVMeRequested(absent) = %v, %v; want false", on, err)
	}
	if p, err := s.NewDiskPolicy(ctx); err != nil || p != host.SANPolicyOfflineShared {
		t.Errorf("NewDiskPolicy() = %v, %v; want OfflineShared", p, err)
	}
	if _, err := s.NewDiskPolicy(ctx); err == nil {
		t.Error("NewDiskPolicy() without a StorageSetting succeeded")
	}
}

func TestVirtualDisks(t *testing.T) {
	ctx := context.Background()
	const vhdx = `C:\Windows\Temp\csiwn-st-1\disk.vhdx`
	e := scripted.New(t)
	e.ExpectWin32("CreateVirtualDisk", []any{vhdx, uint64(1 << 30)}, scripted.Reply{Err: w32("CreateVirtualDisk", winhost.ErrorFileExists)})
	e.ExpectWin32("AttachVirtualDisk", []any{vhdx}, scripted.Reply{String: `\\.\PhysicalDrive3`})
	e.ExpectWin32("AttachVirtualDisk", []any{vhdx}, scripted.Reply{String: `\\.\CdRom0`})
	e.ExpectWin32("ResizeVirtualDisk", []any{vhdx, uint64(2 << 30)}, ok())
	e.ExpectWin32("DetachVirtualDisk", []any{vhdx}, scripted.Reply{Err: w32("OpenVirtualDisk", winhost.ErrorFileNotFound)})
	v := adminOf(e).VirtualDisks
	if err := v.Create(ctx, vhdx, 1<<30); !errors.Is(err, host.ErrAlreadyExists) {
		t.Errorf("Create(existing) = %v, want ErrAlreadyExists", err)
	}
	if n, err := v.Attach(ctx, vhdx); err != nil || n != 3 {
		t.Errorf("Attach() = %d, %v; want 3", n, err)
	}
	if _, err := v.Attach(ctx, vhdx); err == nil {
		t.Error("Attach() with a physical path that is not a drive succeeded")
	}
	if err := v.Resize(ctx, vhdx, 2<<30); err != nil {
		t.Error(err)
	}
	if err := v.Detach(ctx, vhdx); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("Detach(missing) = %v, want ErrNotFound", err)
	}
}

func TestLocalSMB(t *testing.T) {
	ctx := context.Background()
	pw := host.NewSecret("Aa1!0123456789abcdef")
	e := scripted.New(t)
	e.ExpectWin32("NetUserAdd", []any{"csiwn-st-1", pw}, scripted.Reply{Err: w32("NetUserAdd", winhost.NerrUserExists)})
	e.ExpectWin32("NetUserDel", []any{"csiwn-st-1"}, scripted.Reply{Err: w32("NetUserDel", winhost.NerrUserNotFound)})
	e.ExpectQuery(nsCIMV2, wqlUsers, scripted.Reply{Instances: []winhost.Instance{
		{Path: `\\NODE1\root\cimv2:Win32_UserAccount.Domain="NODE1",Name="Administrator"`, Class: "Win32_UserAccount", Props: map[string]any{"Name": "Administrator"}},
		{Path: `\\NODE1\root\cimv2:Win32_UserAccount.Domain="NODE1",Name="csiwn-st-1"`, Class: "Win32_UserAccount", Props: map[string]any{"Name": "csiwn-st-1"}}}})
	userSID, err := winacl.ParseSID("S-1-5-21-1-2-3-1001")
	if err != nil {
		t.Fatal(err)
	}
	e.ExpectWin32("LookupAccountName", []any{"csiwn-st-1"}, scripted.Reply{Bytes: userSID, Uint32: 1})
	// The share directory's DACL: protected, SYSTEM and Administrators full
	// control, the user Modify, each inherited below.
	// The DACL it had is replaced, whatever it was.
	e.ExpectWin32("UpdateFileDACL", []any{`C:\st\share`}, scripted.Reply{Bytes: descriptor(t, 0, 2,
		ace(t, 0, 0, 0x1f01ff, "S-1-1-0"))})
	e.ExpectMatching("SetSecurityInfo", func(c scripted.Call) string {
		if c.Args[0] != `C:\st\share` || c.Args[1] != uint32(0x80000004) {
			return fmt.Sprintf("path or information %v", c.Args[:2])
		}
		acl, err := winacl.ParseACL(c.Args[2].([]byte))
		if err != nil {
			return err.Error()
		}
		var got []string
		for _, a := range acl.ACEs {
			got = append(got, fmt.Sprintf("%s %#x %d", a.SID, a.Mask, a.Flags))
		}
		want := []string{"S-1-5-18 0x1f01ff 3", "S-1-5-32-544 0x1f01ff 3", "S-1-5-21-1-2-3-1001 0x1301bf 3"}
		if !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("DACL %q, want %q", got, want)
		}
		return ""
	}, ok())
	e.ExpectCall(winhost.NamespaceSMB, winhost.Method{Class: "MSFT_SmbShare", Name: "CreateShare", In: []winhost.Param{
		{Name: "Name", Value: "csiwn-st-1"}, {Name: "Path", Value: `C:\st\share`},
		{Name: "Description", Value: "csi-windows-node selftest"}, {Name: "Temporary", Value: true},
		{Name: "FullAccess", Value: []string{"csiwn-st-1"}}}},
		scripted.Reply{Result: winhost.Result{Out: map[string]any{"CreatedShare": shareInst("csiwn-st-1", `C:\st\share`)}}})
	e.ExpectQuery(winhost.NamespaceSMB, wqlShares, scripted.Reply{Instances: []winhost.Instance{
		shareInst("ADMIN$", `C:\Windows`), shareInst("csiwn-st-1", `C:\st\share`)}})
	e.ExpectQuery(winhost.NamespaceSMB, wqlShares+" WHERE Name = 'csiwn-st-1'", scripted.Reply{Instances: []winhost.Instance{shareInst("csiwn-st-1", `C:\st\share`)}})
	e.ExpectDeleteInstance(winhost.NamespaceSMB, shareInst("csiwn-st-1", "").Path, ok())
	e.ExpectQuery(winhost.NamespaceSMB, wqlShares+" WHERE Name = 'csiwn-st-1'", scripted.Reply{})

	l := adminOf(e).LocalSMB
	if err := l.CreateUser(ctx, "csiwn-st-1", pw); !errors.Is(err, host.ErrAlreadyExists) {
		t.Errorf("CreateUser(existing) = %v, want ErrAlreadyExists", err)
	}
	if err := l.DeleteUser(ctx, "csiwn-st-1"); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("DeleteUser(missing) = %v, want ErrNotFound", err)
	}
	if users, err := l.Users(ctx); err != nil || !reflect.DeepEqual(users, []string{"Administrator", "csiwn-st-1"}) {
		t.Errorf("Users() = %q, %v", users, err)
	}
	if err := l.CreateShare(ctx, "csiwn-st-1", `C:\st\share`, "csiwn-st-1"); err != nil {
		t.Error(err)
	}
	want := []host.LocalShare{{Name: "ADMIN$", Path: `C:\Windows`}, {Name: "csiwn-st-1", Path: `C:\st\share`}}
	if shares, err := l.Shares(ctx); err != nil || !reflect.DeepEqual(shares, want) {
		t.Errorf("Shares() = %+v, %v", shares, err)
	}
	if err := l.DeleteShare(ctx, "csiwn-st-1"); err != nil {
		t.Error(err)
	}
	if err := l.DeleteShare(ctx, "csiwn-st-1"); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("DeleteShare(missing) = %v, want ErrNotFound", err)
	}
}

// TestDeleteShareWithoutPath: a share read without a usable __PATH (WMI
// leaves it empty for a partial instance that lacks a key) is not handed
// to SWbemServices.Delete, which would fail on Windows with an error that
// says nothing about why; the scripted executor fails on the call.
func TestDeleteShareWithoutPath(t *testing.T) {
	e := scripted.New(t)
	in := shareInst("csiwn-st-1", `C:\st\share`)
	in.Path = ""
	e.ExpectQuery(winhost.NamespaceSMB, wqlShares+" WHERE Name = 'csiwn-st-1'", scripted.Reply{Instances: []winhost.Instance{in}})
	err := adminOf(e).LocalSMB.DeleteShare(context.Background(), "csiwn-st-1")
	var pe *winhost.PropError
	if !errors.As(err, &pe) || pe.Prop != "__PATH" {
		t.Errorf("DeleteShare(no __PATH) = %v, want a PropError for __PATH", err)
	}
}

func TestFileData(t *testing.T) {
	ctx := context.Background()
	e := scripted.New(t)
	e.ExpectWin32("WriteFile", []any{`C:\t\f`, []byte("x")}, ok())
	e.ExpectWin32("ReadFile", []any{`C:\t\f`}, scripted.Reply{Bytes: []byte("x")})
	e.ExpectWin32("DeleteFile", []any{`C:\t\f`}, scripted.Reply{Err: w32("DeleteFile", winhost.ErrorFileNotFound)})
	f := adminOf(e).FileData
	if err := f.WriteFile(ctx, `C:\t\f`, []byte("x")); err != nil {
		t.Error(err)
	}
	if b, err := f.ReadFile(ctx, `C:\t\f`); err != nil || string(b) != "x" {
		t.Errorf("ReadFile() = %q, %v", b, err)
	}
	if err := f.RemoveFile(ctx, `C:\t\f`); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("RemoveFile(missing) = %v, want ErrNotFound", err)
	}
}
