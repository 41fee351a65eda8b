package winhost_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

func TestDisksList(t *testing.T) {
	e := scripted.New(t)
	boot := diskSpec{Number: 0, Serial: "boot", Location: "PCI Slot 0 : Adapter 0 : Port 0 : Target 0 : LUN 0",
		Style: host.PartitionStyleGPT, Boot: true, System: true}
	// A 1 TiB data disk: Size beyond 32 bits, as a string (CIM uint64).
	data := diskSpec{Number: 2, Serial: "vol0a1b2c3d4e5f60718", Location: nil, Size: 1 << 40,
		ReadOnly: true, Offline: true, OfflineReason: host.OfflineReasonPolicy}
	badSize := diskInst(diskSpec{Number: 5})
	badSize.Props["Size"] = "12 GB"
	noBoot := diskInst(diskSpec{Number: 1})
	delete(noBoot.Props, "IsBoot") // a disk whose boot flag is unknown is never used
	noPath := diskInst(diskSpec{Number: 3})
	noPath.Path = ""
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{
		diskInst(data), badSize, diskInst(boot), noBoot, noPath,
	}})
	got, err := disksOf(e).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []host.Disk{diskOf(boot), diskOf(data)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List:\n got  %+v\n want %+v", got, want)
	}
	if got[1].Size != 1<<40 || got[1].Location != "" || got[1].OfflineReason != host.OfflineReasonPolicy {
		t.Fatalf("data disk parsed as %+v", got[1])
	}
}

func TestDisksListErrors(t *testing.T) {
	t.Run("COM access denied", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, scripted.Reply{Err: &winhost.COMError{Op: "ExecQuery", HResult: 0x80041003}})
		_, err := disksOf(e).List(context.Background())
		var ce *winhost.COMError
		if !errors.Is(err, host.ErrAccessDenied) || !errors.As(err, &ce) {
			t.Fatalf("err = %v, want ErrAccessDenied wrapping *COMError", err)
		}
	})
	t.Run("hung provider", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, scripted.Reply{Block: true})
		if _, err := disksOf(e).List(e.BlockedContext()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("executor queue full", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, scripted.Reply{Err: host.ErrBusy})
		if _, err := disksOf(e).List(context.Background()); !errors.Is(err, host.ErrBusy) {
			t.Fatalf("err = %v, want ErrBusy", err)
		}
	})
}

func TestDisksGet(t *testing.T) {
	spec := diskSpec{Number: 3, Serial: "s3", Style: host.PartitionStyleMBR}
	badType := diskInst(spec)
	badType.Props["IsOffline"] = "false"
	tests := []struct {
		name  string
		reply scripted.Reply
		want  error
		prop  bool // a *winhost.PropError is expected
	}{
		{"found", scripted.Reply{Instances: []winhost.Instance{diskInst(spec)}}, nil, false},
		{"none", scripted.Reply{}, host.ErrNotFound, false},
		{"two", scripted.Reply{Instances: []winhost.Instance{diskInst(spec), diskInst(spec)}}, host.ErrConflict, false},
		{"unreadable", scripted.Reply{Instances: []winhost.Instance{badType}}, nil, true},
		{"object vanished", scripted.Reply{Err: &winhost.COMError{Op: "ExecQuery", HResult: 0x80041002}}, host.ErrNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectQuery(ns, wqlDisk(3), tt.reply)
			d, err := disksOf(e).Get(context.Background(), 3)
			var pe *winhost.PropError
			switch {
			case tt.prop:
				if !errors.As(err, &pe) || pe.Prop != "IsOffline" {
					t.Fatalf("err = %v, want PropError on IsOffline", err)
				}
			case tt.want != nil:
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
			default:
				if err != nil || !reflect.DeepEqual(d, diskOf(spec)) {
					t.Fatalf("Get = %+v, %v", d, err)
				}
			}
		})
	}
}

func TestDisksDeviceIDs(t *testing.T) {
	d := diskOf(diskSpec{Number: 4})
	hyperV := append([]byte("MSFT    "), 0x5d, 0x06, 0xa3, 0x1b, 0x0c, 0x4e, 0x47, 0x49, 0x8e, 0x10, 0x9f, 0x2c, 0x73, 0x3a, 0x81, 0x02)
	naa := []byte{0x60, 0x02, 0x24, 0x80, 0xf4, 0x8d, 0x29, 0x4f, 0x40, 0xf1, 0x87, 0x27, 0xdf, 0x9a, 0x63, 0x49}
	tests := []struct {
		name  string
		reply scripted.Reply
		want  []host.Designator
		err   error
	}{
		// Identifier shapes as csi-proxy PR #155's test log shows them
		// (Hyper-V binary, GCE ASCII); the NAA is the UniqueId of the Azure
		// disk in kubernetes-sigs/azuredisk-csi-driver#2661.
		{"binary", scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(winhost.StorageID{CodeSet: 1, Type: 1, ID: hyperV},
			winhost.StorageID{CodeSet: 1, Type: 3, ID: naa})},
			[]host.Designator{{Type: host.DesignatorVendorID, CodeSet: host.CodeSetBinary, Value: hyperV},
				{Type: host.DesignatorFCPHName, CodeSet: host.CodeSetBinary, Value: naa}}, nil},
		{"ascii", scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(winhost.StorageID{CodeSet: 2, Type: 1, ID: []byte("Google  pd-1")})},
			[]host.Designator{{Type: host.DesignatorVendorID, CodeSet: host.CodeSetASCII, Value: []byte("Google  pd-1")}}, nil},
		{"none", scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor()}, nil, nil},
		// GitHub runners' disks answer "Incorrect function"
		// (kubernetes-csi/csi-proxy@eeba470 integrationtests/disk_v1_test.go).
		{"incorrect function", scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorInvalidFunction)}, nil, host.ErrNotFound},
		{"not supported", scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorNotSupported)}, nil, host.ErrNotFound},
		{"invalid parameter", scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorInvalidParameter)}, nil, host.ErrNotFound},
		{"access denied", scripted.Reply{Err: w32("CreateFile", winhost.ErrorAccessDenied)}, nil, host.ErrAccessDenied},
		{"damaged tail: the identifiers before it", scripted.Reply{Bytes: func() []byte {
			b := winhost.BuildDeviceIDDescriptor(winhost.StorageID{CodeSet: 1, Type: 3, ID: naa})
			b[8] = 2 // two identifiers announced, one present
			return b
		}()}, []host.Designator{{Type: host.DesignatorFCPHName, CodeSet: host.CodeSetBinary, Value: naa}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(4)}, tt.reply)
			ids, err := disksOf(e).DeviceIDs(context.Background(), d)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(ids, tt.want) {
				t.Fatalf("DeviceIDs = %v, %v; want %v", ids, err, tt.want)
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(4)}, scripted.Reply{Bytes: []byte{1, 0, 0}})
		_, err := disksOf(e).DeviceIDs(context.Background(), d)
		if err == nil || errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want a parse error that is not ErrNotFound", err)
		}
	})
	t.Run("no device path", func(t *testing.T) {
		e := scripted.New(t)
		if _, err := disksOf(e).DeviceIDs(context.Background(), host.Disk{Number: 4}); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound without a call", err)
		}
	})
	t.Run("hung device", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(4)}, scripted.Reply{Block: true})
		if _, err := disksOf(e).DeviceIDs(e.BlockedContext(), d); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func TestDisksSCSIAddress(t *testing.T) {
	d := diskOf(diskSpec{Number: 4})
	tests := []struct {
		name  string
		reply scripted.Reply
		want  host.SCSIAddress
		err   error
	}{
		{"address", scripted.Reply{Bytes: []byte{8, 0, 0, 0, 1, 0, 0, 3}}, host.SCSIAddress{Port: 1, LUN: 3}, nil},
		{"incorrect function", scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorInvalidFunction)}, host.SCSIAddress{}, host.ErrNotFound},
		{"not supported", scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorNotSupported)}, host.SCSIAddress{}, host.ErrNotFound},
		{"invalid parameter", scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorInvalidParameter)}, host.SCSIAddress{}, host.ErrNotFound},
		{"gone", scripted.Reply{Err: w32("CreateFile", winhost.ErrorFileNotFound)}, host.SCSIAddress{}, host.ErrNotFound},
		{"access denied", scripted.Reply{Err: w32("CreateFile", winhost.ErrorAccessDenied)}, host.SCSIAddress{}, host.ErrAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("SCSIAddress", []any{devicePath(4)}, tt.reply)
			a, err := disksOf(e).SCSIAddress(context.Background(), d)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || a != tt.want {
				t.Fatalf("SCSIAddress = %v, %v; want %v", a, err, tt.want)
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("SCSIAddress", []any{devicePath(4)}, scripted.Reply{Bytes: []byte{8, 0, 0}})
		if _, err := disksOf(e).SCSIAddress(context.Background(), d); err == nil || errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want a parse error that is not ErrNotFound", err)
		}
	})
	t.Run("no device path", func(t *testing.T) {
		e := scripted.New(t)
		if _, err := disksOf(e).SCSIAddress(context.Background(), host.Disk{Number: 4}); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound without a call", err)
		}
	})
}

func TestDisksRescan(t *testing.T) {
	m := winhost.Method{Class: "MSFT_StorageSetting", Name: "UpdateHostStorageCache"}
	t.Run("ok", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, rv(0))
		if err := disksOf(e).Rescan(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("access denied", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, rv(40001))
		err := disksOf(e).Rescan(context.Background())
		var me *winhost.MethodError
		if !errors.Is(err, host.ErrAccessDenied) || !errors.As(err, &me) || me.ReturnValue != 40001 {
			t.Fatalf("err = %v, want ErrAccessDenied and MethodError 40001", err)
		}
	})
	t.Run("hung provider", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, scripted.Reply{Block: true})
		if err := disksOf(e).Rescan(e.BlockedContext()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func setAttributes(n uint32, ro bool) winhost.Method {
	return winhost.Method{Class: "MSFT_Disk", Path: diskRef(n), Name: "SetAttributes",
		In: []winhost.Param{{Name: "IsReadOnly", Value: ro}}}
}

func TestDisksSetReadOnly(t *testing.T) {
	d := diskOf(diskSpec{Number: 2, ReadOnly: true})
	tests := []struct {
		name string
		ro   bool
		rv   uint32
		want error
	}{
		{"clear", false, 0, nil},
		{"set", true, 0, nil},
		// Codes from the MSFT_Disk.SetAttributes page; 41002 from the common page.
		{"read only", false, 41002, host.ErrReadOnly},
		{"offline", false, 41003, host.ErrNotReady},
		{"critical", false, 41009, host.ErrConflict},
		{"failed", false, 4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectCall(ns, setAttributes(2, tt.ro), rv(tt.rv))
			err := disksOf(e).SetReadOnly(context.Background(), d, tt.ro)
			switch {
			case tt.rv == 0 && err != nil:
				t.Fatal(err)
			case tt.rv != 0 && tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("err = %v, want %v", err, tt.want)
			case tt.rv != 0:
				var me *winhost.MethodError
				if !errors.As(err, &me) || me.ReturnValue != tt.rv {
					t.Fatalf("err = %v, want MethodError %d", err, tt.rv)
				}
			}
		})
	}
	// 41000 "the disk has not been initialized" from an offline blank
	// disk means "online first" as 41003 does; from an online disk it is
	// what the table says (a conflict).
	t.Run("offline blank disk", func(t *testing.T) {
		e := scripted.New(t)
		blank := diskOf(diskSpec{Number: 2, ReadOnly: true, Offline: true, OfflineReason: host.OfflineReasonPolicy})
		e.ExpectCall(ns, setAttributes(2, false), rv(41000))
		if err := disksOf(e).SetReadOnly(context.Background(), blank, false); !errors.Is(err, host.ErrNotReady) {
			t.Fatalf("err = %v, want ErrNotReady", err)
		}
		e.ExpectCall(ns, setAttributes(2, false), rv(41000))
		if err := disksOf(e).SetReadOnly(context.Background(), d, false); !errors.Is(err, host.ErrConflict) || errors.Is(err, host.ErrNotReady) {
			t.Fatalf("online disk: err = %v, want ErrConflict only", err)
		}
	})
	t.Run("boot disk refused without a call", func(t *testing.T) {
		e := scripted.New(t)
		boot := diskOf(diskSpec{Number: 0, Boot: true})
		if err := disksOf(e).SetReadOnly(context.Background(), boot, false); !errors.Is(err, host.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
	t.Run("no object path refused without a call", func(t *testing.T) {
		e := scripted.New(t)
		if err := disksOf(e).SetReadOnly(context.Background(), host.Disk{Number: 7}, false); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}

func TestDisksSetOnline(t *testing.T) {
	online := func(n uint32) winhost.Method {
		return winhost.Method{Class: "MSFT_Disk", Path: diskRef(n), Name: "Online"}
	}
	offline := func(n uint32) winhost.Method {
		return winhost.Method{Class: "MSFT_Disk", Path: diskRef(n), Name: "Offline"}
	}
	policy := diskOf(diskSpec{Number: 2, Offline: true, OfflineReason: host.OfflineReasonPolicy})
	clone := diskOf(diskSpec{Number: 3, Offline: true, OfflineReason: host.OfflineReasonCollision})
	tests := []struct {
		name   string
		disk   host.Disk
		online bool
		m      winhost.Method
		reply  scripted.Reply
		want   []error
		notIs  []error
	}{
		{"online", policy, true, online(2), rv(0), nil, nil},
		{"offline", diskOf(diskSpec{Number: 2}), false, offline(2), rv(0), nil, nil},
		{"in use", policy, true, online(2), rv(6), []error{host.ErrInUse}, nil},
		// No code for a collision is documented (MSFT_Disk.Online page):
		// whatever Windows answers for a clone, it is a conflict.
		{"collision failed", clone, true, online(3), rv(4), []error{host.ErrConflict}, nil},
		{"collision invalid parameter", clone, true, online(3), rv(5), []error{host.ErrConflict}, []error{host.ErrInvalid}},
		{"failure not a collision", policy, true, online(2), rv(4), nil, []error{host.ErrConflict}},
		{"disk gone", policy, true, online(2), scripted.Reply{Err: &winhost.COMError{Op: "ExecMethod", HResult: 0x80041002}},
			[]error{host.ErrNotFound}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectCall(ns, tt.m, tt.reply)
			err := disksOf(e).SetOnline(context.Background(), tt.disk, tt.online)
			if tt.want == nil && tt.notIs == nil && err != nil {
				t.Fatal(err)
			}
			if (tt.want != nil || tt.notIs != nil) && err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
			for _, w := range tt.notIs {
				if errors.Is(err, w) {
					t.Errorf("err = %v, must not be %v", err, w)
				}
			}
		})
	}
	t.Run("system disk never offlined", func(t *testing.T) {
		e := scripted.New(t)
		sys := diskOf(diskSpec{Number: 0, System: true})
		if err := disksOf(e).SetOnline(context.Background(), sys, false); !errors.Is(err, host.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
}

func TestDisksInitialize(t *testing.T) {
	d := diskOf(diskSpec{Number: 2})
	m := func(style uint16) winhost.Method {
		return winhost.Method{Class: "MSFT_Disk", Path: diskRef(2), Name: "Initialize",
			In: []winhost.Param{{Name: "PartitionStyle", Value: style}}}
	}
	t.Run("gpt", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m(2), rv(0))
		if err := disksOf(e).Initialize(context.Background(), d, host.PartitionStyleGPT); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("mbr", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m(1), rv(0))
		if err := disksOf(e).Initialize(context.Background(), d, host.PartitionStyleMBR); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("already initialised", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m(2), rv(41001))
		if err := disksOf(e).Initialize(context.Background(), d, host.PartitionStyleGPT); !errors.Is(err, host.ErrAlreadyExists) {
			t.Fatalf("err = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("raw is not a style", func(t *testing.T) {
		e := scripted.New(t)
		if err := disksOf(e).Initialize(context.Background(), d, host.PartitionStyleRAW); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}

func TestDisksPartitions(t *testing.T) {
	d := diskOf(diskSpec{Number: 3, Style: host.PartitionStyleGPT})
	msr := partSpec{Disk: 3, Number: 1, Offset: msrOffset, Size: msrSize,
		GptType: "{e3c9e316-0b5c-4db8-817d-f92df00215ae}", AccessPaths: nil}
	data := partSpec{Disk: 3, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20,
		GptType:     "{EBD0A0A2-B9E5-4433-87C0-68B6B72699C7}", // upper case is read as lower case
		AccessPaths: []any{`C:\var\lib\kubelet\plugins\kubernetes.io\csi\x\globalmount\`, guidA}}
	t.Run("gpt", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlPartsOf(3), scripted.Reply{Instances: []winhost.Instance{partInst(data), partInst(msr)}})
		got, err := disksOf(e).Partitions(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		want := []host.Partition{
			{Ref: partRef(3, 1), DiskNumber: 3, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR},
			{Ref: partRef(3, 2), DiskNumber: 3, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20, GptType: host.GptTypeBasicData,
				AccessPaths: []string{`C:\var\lib\kubelet\plugins\kubernetes.io\csi\x\globalmount\`, guidA}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Partitions:\n got  %+v\n want %+v", got, want)
		}
		if got[0].IsReserved() != true || got[1].IsReserved() {
			t.Fatal("MSR must be reserved, Basic Data not")
		}
	})
	t.Run("mbr", func(t *testing.T) {
		e := scripted.New(t)
		ifs := partSpec{Disk: 3, Number: 1, Offset: 1 << 20, Size: 1 << 30, GptType: nil, MbrType: int64(7)}
		e.ExpectQuery(ns, wqlPartsOf(3), scripted.Reply{Instances: []winhost.Instance{partInst(ifs)}})
		got, err := disksOf(e).Partitions(context.Background(), d)
		if err != nil || len(got) != 1 || got[0].MbrType != host.MbrTypeIFS || got[0].GptType != "" {
			t.Fatalf("Partitions = %+v, %v", got, err)
		}
	})
	t.Run("one unreadable partition fails the listing", func(t *testing.T) {
		e := scripted.New(t)
		bad := partInst(data)
		delete(bad.Props, "Size")
		e.ExpectQuery(ns, wqlPartsOf(3), scripted.Reply{Instances: []winhost.Instance{partInst(msr), bad}})
		_, err := disksOf(e).Partitions(context.Background(), d)
		var pe *winhost.PropError
		if !errors.As(err, &pe) || pe.Prop != "Size" || pe.Class != "MSFT_Partition" {
			t.Fatalf("err = %v, want PropError on MSFT_Partition.Size", err)
		}
	})
	t.Run("access paths of the wrong type", func(t *testing.T) {
		e := scripted.New(t)
		bad := partInst(data)
		bad.Props["AccessPaths"] = []any{int64(1)}
		e.ExpectQuery(ns, wqlPartsOf(3), scripted.Reply{Instances: []winhost.Instance{bad}})
		var pe *winhost.PropError
		if _, err := disksOf(e).Partitions(context.Background(), d); !errors.As(err, &pe) {
			t.Fatalf("err = %v, want PropError", err)
		}
	})
}

func createPartition(n uint32, typ winhost.Param) winhost.Method {
	return winhost.Method{Class: "MSFT_Disk", Path: diskRef(n), Name: "CreatePartition", In: []winhost.Param{
		{Name: "UseMaximumSize", Value: true},
		{Name: "AssignDriveLetter", Value: false},
		typ,
	}}
}

var gptBasic = winhost.Param{Name: "GptType", Value: "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}"}

func TestDisksCreatePartition(t *testing.T) {
	gpt := diskOf(diskSpec{Number: 3, Style: host.PartitionStyleGPT})
	mbr := diskOf(diskSpec{Number: 3, Style: host.PartitionStyleMBR})
	data := partSpec{Disk: 3, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20, GptType: host.GptTypeBasicData}
	wantData := host.Partition{Ref: partRef(3, 2), DiskNumber: 3, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20,
		GptType: host.GptTypeBasicData}
	created := func(in winhost.Instance, code uint32) scripted.Reply {
		// CreatedPartition: "a string that contains an embedded
		// MSFT_Partition object" (CreatePartition page); through
		// IDispatch an embedded instance, converted to Instance.
		return scripted.Reply{Result: winhost.Result{ReturnValue: code, Out: map[string]any{"CreatedPartition": in}}}
	}

	t.Run("gpt from the output parameter, no query", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, createPartition(3, gptBasic), created(partInst(data), 0))
		p, err := disksOf(e).CreatePartition(context.Background(), gpt)
		if err != nil || !reflect.DeepEqual(p, wantData) {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
		if e.WMIRoundTrips() != 1 {
			t.Fatalf("%d WMI round trips, want 1", e.WMIRoundTrips())
		}
	})
	t.Run("mbr ifs", func(t *testing.T) {
		e := scripted.New(t)
		ifs := partSpec{Disk: 3, Number: 1, Offset: 1 << 20, Size: 1 << 30, MbrType: int64(7)}
		e.ExpectCall(ns, createPartition(3, winhost.Param{Name: "MbrType", Value: uint16(7)}), created(partInst(ifs), 0))
		p, err := disksOf(e).CreatePartition(context.Background(), mbr)
		if err != nil || p.MbrType != host.MbrTypeIFS {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
	})
	t.Run("offline partition brought online", func(t *testing.T) {
		e := scripted.New(t)
		off := data
		off.Offline = true
		e.ExpectCall(ns, createPartition(3, gptBasic), created(partInst(off), 0))
		e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(3, 2), Name: "Online"}, rv(0))
		p, err := disksOf(e).CreatePartition(context.Background(), gpt)
		if err != nil || p.IsOffline {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
	})
	t.Run("no output object: the data partition is queried", func(t *testing.T) {
		e := scripted.New(t)
		msr := partSpec{Disk: 3, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
		e.ExpectCall(ns, createPartition(3, gptBasic), rv(0))
		e.ExpectQuery(ns, wqlPartsOf(3), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(data)}})
		p, err := disksOf(e).CreatePartition(context.Background(), gpt)
		if err != nil || !reflect.DeepEqual(p, wantData) {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
	})
	t.Run("output object without a path: queried by number", func(t *testing.T) {
		e := scripted.New(t)
		noPath := partInst(data)
		noPath.Path = ""
		e.ExpectCall(ns, createPartition(3, gptBasic), created(noPath, 0))
		e.ExpectQuery(ns, wqlPartsOf(3)+" AND PartitionNumber = 2", scripted.Reply{Instances: []winhost.Instance{partInst(data)}})
		p, err := disksOf(e).CreatePartition(context.Background(), gpt)
		if err != nil || !reflect.DeepEqual(p, wantData) {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
	})
	t.Run("42002 with the created partition is success", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, createPartition(3, gptBasic), created(partInst(data), 42002))
		p, err := disksOf(e).CreatePartition(context.Background(), gpt)
		if err != nil || !reflect.DeepEqual(p, wantData) {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
	})
	t.Run("42002 without a partition is an error", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, createPartition(3, gptBasic), rv(42002))
		if _, err := disksOf(e).CreatePartition(context.Background(), gpt); !errors.Is(err, host.ErrAlreadyExists) {
			t.Fatalf("err = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("read-only disk", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, createPartition(3, gptBasic), rv(41002))
		if _, err := disksOf(e).CreatePartition(context.Background(), gpt); !errors.Is(err, host.ErrReadOnly) {
			t.Fatalf("err = %v, want ErrReadOnly", err)
		}
	})
	t.Run("listing older than Initialize: provider's default type", func(t *testing.T) {
		e := scripted.New(t)
		raw := diskOf(diskSpec{Number: 3}) // PartitionStyle RAW as listed before Initialize
		e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(3), Name: "CreatePartition", In: []winhost.Param{
			{Name: "UseMaximumSize", Value: true}, {Name: "AssignDriveLetter", Value: false}}}, created(partInst(data), 0))
		if p, err := disksOf(e).CreatePartition(context.Background(), raw); err != nil || p.GptType != host.GptTypeBasicData {
			t.Fatalf("CreatePartition = %+v, %v", p, err)
		}
	})
	t.Run("unknown style refused", func(t *testing.T) {
		e := scripted.New(t)
		odd := diskOf(diskSpec{Number: 3, Style: 7})
		if _, err := disksOf(e).CreatePartition(context.Background(), odd); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
	t.Run("hung provider", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, createPartition(3, gptBasic), scripted.Reply{Block: true})
		if _, err := disksOf(e).CreatePartition(e.BlockedContext(), gpt); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func TestDisksMaxPartitionSize(t *testing.T) {
	p := host.Partition{Ref: partRef(3, 2), DiskNumber: 3, Number: 2, Size: 1 << 30}
	m := winhost.Method{Class: "MSFT_Partition", Path: partRef(3, 2), Name: "GetSupportedSize"}
	t.Run("size max as a string", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, scripted.Reply{Result: winhost.Result{Out: map[string]any{
			"SizeMin": "1073741824", "SizeMax": "2199006478336"}}})
		got, err := disksOf(e).MaxPartitionSize(context.Background(), p)
		if err != nil || got != 2199006478336 {
			t.Fatalf("MaxPartitionSize = %d, %v", got, err)
		}
	})
	t.Run("missing output", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, rv(0))
		var pe *winhost.PropError
		if _, err := disksOf(e).MaxPartitionSize(context.Background(), p); !errors.As(err, &pe) || pe.Prop != "SizeMax" {
			t.Fatalf("err = %v, want PropError on SizeMax", err)
		}
	})
	t.Run("not a number", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, scripted.Reply{Result: winhost.Result{Out: map[string]any{"SizeMax": "-1"}}})
		var pe *winhost.PropError
		if _, err := disksOf(e).MaxPartitionSize(context.Background(), p); !errors.As(err, &pe) {
			t.Fatalf("err = %v, want PropError", err)
		}
	})
	// GetSupportedSize depends on the defrag service and intermittently
	// returns 4 (aws-ebs-csi-driver#2877).
	t.Run("failed", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, m, rv(4))
		var me *winhost.MethodError
		if _, err := disksOf(e).MaxPartitionSize(context.Background(), p); !errors.As(err, &me) || me.Message != "failed" {
			t.Fatalf("err = %v, want MethodError 4", err)
		}
	})
}

func TestDisksResizePartition(t *testing.T) {
	p := host.Partition{Ref: partRef(3, 2), DiskNumber: 3, Number: 2, Size: 1 << 30}
	resize := func(size string) winhost.Method {
		return winhost.Method{Class: "MSFT_Partition", Path: partRef(3, 2), Name: "Resize",
			In: []winhost.Param{{Name: "Size", Value: size}}}
	}
	t.Run("grow, size as a decimal string", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, resize("2199006478336"), rv(0))
		if err := disksOf(e).ResizePartition(context.Background(), p, 2199006478336); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("size not supported", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, resize("2147483648"), rv(4097))
		if err := disksOf(e).ResizePartition(context.Background(), p, 2<<30); !errors.Is(err, host.ErrOutOfRange) {
			t.Fatalf("err = %v, want ErrOutOfRange", err)
		}
	})
	t.Run("below the 1 MiB extent, no call", func(t *testing.T) {
		e := scripted.New(t)
		if err := disksOf(e).ResizePartition(context.Background(), p, 1<<30+4096); !errors.Is(err, host.ErrOutOfRange) {
			t.Fatalf("err = %v, want ErrOutOfRange", err)
		}
	})
	t.Run("same size, no call", func(t *testing.T) {
		e := scripted.New(t)
		if err := disksOf(e).ResizePartition(context.Background(), p, 1<<30); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("zero", func(t *testing.T) {
		e := scripted.New(t)
		if err := disksOf(e).ResizePartition(context.Background(), p, 0); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
	t.Run("unknown file system", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, resize("2147483648"), rv(42009))
		if err := disksOf(e).ResizePartition(context.Background(), p, 2<<30); !errors.Is(err, host.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
}
