package wmiexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	ole "github.com/go-ole/go-ole"
	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/comworker"
)

// These tests run on Windows (the unit-test job of
// .github/workflows/windows.yml). They touch only read-only WMI classes and
// a temporary directory, so they need neither administrator rights nor
// Hyper-V.

func TestVariantRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		cimType int32
		wantVT  ole.VT
		want    any
	}{
		{"string", `\\?\Volume{x}\`, 0, ole.VT_BSTR, `\\?\Volume{x}\`},
		{"true", true, 0, ole.VT_BOOL, true},
		{"false", false, 0, ole.VT_BOOL, false},
		{"uint8", uint8(200), 0, ole.VT_UI1, int64(200)},
		{"int8", int8(-5), 0, ole.VT_I2, int64(-5)},
		{"int16", int16(-300), 0, ole.VT_I2, int64(-300)},
		{"uint16", uint16(65535), 0, ole.VT_I4, int64(65535)},
		{"int32", int32(-7), 0, ole.VT_I4, int64(-7)},
		// HKEY_LOCAL_MACHINE: a uint32 above 2^31 travels as VT_I4 and
		// reads back unsigned when the CIM type says uint32.
		{"uint32 high bit", uint32(0x80000002), cimTypeUint32, ole.VT_I4, int64(0x80000002)},
		{"int64", int64(-9), 0, ole.VT_BSTR, "-9"},
		{"uint64", uint64(1 << 40), 0, ole.VT_BSTR, "1099511627776"},
		{"float32", float32(1.5), 0, ole.VT_R4, 1.5},
		{"float64", 2.25, 0, ole.VT_R8, 2.25},
		{"string array", []string{"a", "b"}, 0, ole.VT_ARRAY | ole.VT_VARIANT, []any{"a", "b"}},
		{"empty string array", []string{}, 0, ole.VT_ARRAY | ole.VT_VARIANT, []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := toVariant(tt.in)
			if err != nil {
				t.Fatalf("toVariant: %v", err)
			}
			defer clearVariant(&v)
			if v.VT != tt.wantVT {
				t.Errorf("VT = %#x, want %#x", uint16(v.VT), uint16(tt.wantVT))
			}
			got, err := fromVariant(&v, tt.cimType, 0)
			if err != nil {
				t.Fatalf("fromVariant: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round trip = %#v, want %#v", got, tt.want)
			}
		})
	}
	if _, err := toVariant(42); err == nil {
		t.Errorf("toVariant(int) succeeded; parameters must have a sized type")
	}
	null := ole.NewVariant(ole.VT_NULL, 0)
	if got, err := fromVariant(&null, 0, 0); got != nil || err != nil {
		t.Errorf("VT_NULL = %v, %v; want nil, nil", got, err)
	}
	date := ole.NewVariant(ole.VT_DATE, 0)
	if _, err := fromVariant(&date, 0, 0); err == nil {
		t.Errorf("VT_DATE converted; WMI never sends it, so it must be reported")
	}
}

func newTestExecutor(t *testing.T) *Executor {
	t.Helper()
	e, err := New(Options{WMIWorkers: 1, Win32Workers: 1})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func TestWMI(t *testing.T) {
	e := newTestExecutor(t)
	ctx := context.Background()

	os1, err := e.Query(ctx, winhost.NamespaceCIMV2, "SELECT Caption, Version FROM Win32_OperatingSystem")
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if len(os1) != 1 {
		t.Fatalf("Win32_OperatingSystem: %d instances, want 1", len(os1))
	}
	if os1[0].Class != "Win32_OperatingSystem" || os1[0].Path == "" {
		t.Errorf("instance class %q path %q, want Win32_OperatingSystem and a path", os1[0].Class, os1[0].Path)
	}
	if s, ok := os1[0].Props["Caption"].(string); !ok || s == "" {
		t.Errorf("Caption = %#v, want a string", os1[0].Props["Caption"])
	}
	if _, err := e.Query(ctx, winhost.NamespaceCIMV2, "SELECT Version FROM Win32_OperatingSystem"); err != nil {
		t.Fatalf("second Query: %v", err)
	}
	st := e.Stats().WMI
	if n := st.Calls["wmi ConnectServer "+winhost.NamespaceCIMV2]; n != 1 {
		t.Errorf("%d connections for two queries on one worker, want 1 (cached)", n)
	}

	t.Run("associators", func(t *testing.T) {
		cs, err := e.Query(ctx, winhost.NamespaceCIMV2, "SELECT Name FROM Win32_ComputerSystem")
		if err != nil || len(cs) != 1 {
			t.Fatalf("Win32_ComputerSystem: %v, %d instances", err, len(cs))
		}
		got, err := e.Associators(ctx, winhost.NamespaceCIMV2, cs[0].Path, "Win32_SystemOperatingSystem", "Win32_OperatingSystem")
		if err != nil {
			t.Fatalf("Associators: %v", err)
		}
		if len(got) != 1 || got[0].Class != "Win32_OperatingSystem" {
			t.Errorf("associators = %+v, want the one Win32_OperatingSystem", got)
		}
	})

	t.Run("static method with parameters", func(t *testing.T) {
		// StdRegProv.GetStringValue(hDefKey uint32, sSubKeyName,
		// sValueName) → ReturnValue, sValue. HKEY_LOCAL_MACHINE is
		// 0x80000002, which exercises uint32 above 2^31.
		res, err := e.Call(ctx, `Root\default`, winhost.Method{Class: "StdRegProv", Name: "GetStringValue", In: []winhost.Param{
			{Name: "hDefKey", Value: uint32(0x80000002)},
			{Name: "sSubKeyName", Value: `SOFTWARE\Microsoft\Windows NT\CurrentVersion`},
			{Name: "sValueName", Value: "ProductName"},
		}})
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		if res.ReturnValue != 0 {
			t.Fatalf("ReturnValue = %d, want 0", res.ReturnValue)
		}
		if s, ok := res.Out["sValue"].(string); !ok || s == "" {
			t.Errorf("sValue = %#v, want the product name", res.Out["sValue"])
		}
		if _, ok := res.Out["ReturnValue"]; ok {
			t.Errorf("ReturnValue left in Out")
		}
	})

	t.Run("instance method", func(t *testing.T) {
		pid := strconv.Itoa(os.Getpid())
		ps, err := e.Query(ctx, winhost.NamespaceCIMV2, "SELECT Handle FROM Win32_Process WHERE Handle = '"+pid+"'")
		if err != nil || len(ps) != 1 {
			t.Fatalf("Win32_Process %s: %v, %d instances", pid, err, len(ps))
		}
		res, err := e.Call(ctx, winhost.NamespaceCIMV2, winhost.Method{Class: "Win32_Process", Path: ps[0].Path, Name: "GetOwner"})
		if err != nil {
			t.Fatalf("GetOwner: %v", err)
		}
		if res.ReturnValue != 0 {
			t.Fatalf("GetOwner ReturnValue = %d, want 0", res.ReturnValue)
		}
		if s, ok := res.Out["User"].(string); !ok || s == "" {
			t.Errorf("User = %#v, want a user name", res.Out["User"])
		}
	})

	t.Run("COM errors", func(t *testing.T) {
		var ce *winhost.COMError
		_, err := e.Query(ctx, winhost.NamespaceCIMV2, "SELECT * FROM No_Such_Class_Here")
		if !errors.As(err, &ce) || ce.HResult == 0 {
			t.Errorf("query of a missing class = %v, want a *COMError", err)
		}
		_, err = e.Call(ctx, `Root\default`, winhost.Method{Class: "StdRegProv", Name: "GetStringValue", In: []winhost.Param{
			{Name: "NoSuchParameter", Value: "x"},
		}})
		if !errors.As(err, &ce) {
			t.Errorf("call with an unknown parameter = %v, want a *COMError", err)
		}
	})

	t.Run("ctx already ended", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Query(cctx, winhost.NamespaceCIMV2, "SELECT Version FROM Win32_OperatingSystem"); !errors.Is(err, context.Canceled) {
			t.Errorf("Query = %v, want context.Canceled", err)
		}
	})
}

func TestWin32(t *testing.T) {
	e := newTestExecutor(t)
	ctx := context.Background()
	dir := t.TempDir()
	sub := filepath.Join(dir, "d")

	if err := e.CreateDirectory(ctx, sub); err != nil {
		t.Fatalf("CreateDirectory: %v", err)
	}
	wantCode(t, "CreateDirectory again", e.CreateDirectory(ctx, sub), winhost.ErrorAlreadyExists)

	has, err := e.DirectoryHasEntries(ctx, sub)
	if err != nil || has {
		t.Errorf("DirectoryHasEntries(empty) = %v, %v; want false", has, err)
	}
	if err := os.WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	has, err = e.DirectoryHasEntries(ctx, sub)
	if err != nil || !has {
		t.Errorf("DirectoryHasEntries(one file) = %v, %v; want true", has, err)
	}
	_, err = e.DirectoryHasEntries(ctx, filepath.Join(dir, "missing"))
	var we *winhost.Win32Error
	if !errors.As(err, &we) {
		t.Errorf("DirectoryHasEntries(missing) = %v, want a *Win32Error", err)
	}
	if err := os.Mkdir(filepath.Join(sub, "g"), 0o700); err != nil {
		t.Fatal(err)
	}
	names, err := e.DirectoryEntries(ctx, sub)
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"f", "g"}) {
		t.Errorf("DirectoryEntries = %q, %v; want [f g]", names, err)
	}
	if _, err := e.DirectoryEntries(ctx, filepath.Join(dir, "missing")); !errors.As(err, &we) {
		t.Errorf("DirectoryEntries(missing) = %v, want a *Win32Error", err)
	}

	attrs, err := e.GetFileAttributes(ctx, sub)
	if err != nil || attrs&windows.FILE_ATTRIBUTE_DIRECTORY == 0 {
		t.Errorf("GetFileAttributes = %#x, %v; want a directory", attrs, err)
	}
	_, err = e.GetFileAttributes(ctx, filepath.Join(dir, "missing"))
	wantCode(t, "GetFileAttributes(missing)", err, winhost.ErrorFileNotFound)

	link := filepath.Join(dir, "link")
	err = e.CreateSymbolicLink(ctx, link, sub, windows.SYMBOLIC_LINK_FLAG_DIRECTORY|symbolicLinkFlagAllowUnprivilegedCreate)
	if errors.As(err, &we) && we.Code == uint32(windows.ERROR_PRIVILEGE_NOT_HELD) {
		t.Logf("no symbolic link privilege: link checks skipped")
	} else if err != nil {
		t.Errorf("CreateSymbolicLink: %v", err)
	} else {
		attrs, err := e.GetFileAttributes(ctx, link)
		if err != nil || attrs&windows.FILE_ATTRIBUTE_REPARSE_POINT == 0 {
			t.Errorf("link attributes = %#x, %v; want a reparse point", attrs, err)
		}
		buf, err := e.ReadReparsePoint(ctx, link)
		if err != nil || len(buf) < 8 {
			t.Fatalf("ReadReparsePoint = %d bytes, %v", len(buf), err)
		}
		if tag := uint32(buf[0]) | uint32(buf[1])<<8 | uint32(buf[2])<<16 | uint32(buf[3])<<24; tag != windows.IO_REPARSE_TAG_SYMLINK {
			t.Errorf("reparse tag = %#x, want IO_REPARSE_TAG_SYMLINK", tag)
		}
		if err := e.RemoveDirectory(ctx, link); err != nil {
			t.Errorf("RemoveDirectory(link): %v", err)
		}
		if _, err := os.Stat(filepath.Join(sub, "f")); err != nil {
			t.Errorf("removing the link touched its target: %v", err)
		}
	}
	_, err = e.ReadReparsePoint(ctx, sub)
	wantCode(t, "ReadReparsePoint(plain directory)", err, winhost.ErrorNotAReparsePoint)
	wantCode(t, "RemoveDirectory(not empty)", e.RemoveDirectory(ctx, sub), winhost.ErrorDirNotEmpty)

	avail, total, free, err := e.GetDiskFreeSpaceEx(ctx, dir)
	if err != nil || total == 0 || free > total || avail > total {
		t.Errorf("GetDiskFreeSpaceEx = %d, %d, %d, %v", avail, total, free, err)
	}

	root := filepath.VolumeName(dir) + `\`
	vol, err := e.GetVolumeNameForVolumeMountPoint(ctx, root)
	if err != nil || !strings.HasPrefix(vol, `\\?\Volume{`) || !strings.HasSuffix(vol, `}\`) {
		t.Fatalf("GetVolumeNameForVolumeMountPoint(%s) = %q, %v", root, vol, err)
	}
	ext, err := e.VolumeDiskExtents(ctx, strings.TrimSuffix(vol, `\`))
	if err != nil {
		t.Fatalf("VolumeDiskExtents: %v", err)
	}
	if diskExtentsCount(ext) < 1 || len(ext) < diskExtentsBufferSize(diskExtentsCount(ext)) {
		t.Errorf("VolumeDiskExtents returned %d bytes for %d extents", len(ext), diskExtentsCount(ext))
	}
	st := e.Stats().Win32
	if st.Calls["win32 GetVolumeNameForVolumeMountPoint"] != 1 || st.ByKind["win32"] == 0 {
		t.Errorf("win32 counters = %+v", st.Calls)
	}
}

func wantCode(t *testing.T, what string, err error, code uint32) {
	t.Helper()
	var we *winhost.Win32Error
	if !errors.As(err, &we) || we.Code != code {
		t.Errorf("%s = %v, want Win32 error %d", what, err, code)
	}
}

// SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE (winbase.h): lets a
// non-elevated user in developer mode create the link.
const symbolicLinkFlagAllowUnprivilegedCreate = 0x2

// TestPutVariantUnderGC sets method parameters (putVariant, through
// inParams) from deep in a growing goroutine stack while the garbage
// collector runs without pause, and reads every value back. It is a smoke
// test: no test can force a stack move at the exact instant of the call;
// the guarantee is dispParams's typed pointers and TestNoGoAddressKeptAsInteger.
func TestPutVariantUnderGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	stop := make(chan struct{})
	var gcs sync.WaitGroup
	gcs.Add(1)
	go func() {
		defer gcs.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); gcs.Wait() }()

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ct, err := newCOMThread(func(comworker.Op) {})
		if err != nil {
			errc <- err
			return
		}
		defer ct.close()
		const ns = `Root\default`
		svc, err := ct.service(ns)
		if err != nil {
			errc <- err
			return
		}
		var put func(depth, i int) error
		put = func(depth, i int) error {
			var pad [256]byte // each level grows the stack
			if depth > 0 {
				err := put(depth-1, i)
				runtime.KeepAlive(&pad)
				return err
			}
			key := fmt.Sprintf(`SOFTWARE\csi-windows-node-test\%d`, i)
			inst, err := ct.inParams(svc, ns, winhost.Method{Class: "StdRegProv", Name: "GetStringValue", In: []winhost.Param{
				{Name: "hDefKey", Value: uint32(0x80000002)},
				{Name: "sSubKeyName", Value: key},
				{Name: "sValueName", Value: "v"},
			}})
			if err != nil {
				return err
			}
			defer clearVariant(inst)
			got, err := readObject(inst.ToIDispatch(), 0)
			if err != nil {
				return err
			}
			if got.Props["sSubKeyName"] != key {
				return fmt.Errorf("sSubKeyName = %#v after the put, want %q", got.Props["sSubKeyName"], key)
			}
			return nil
		}
		for i := range 200 {
			if err := put(i%64, i); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
