package winhost_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

func TestVolumesOfPartition(t *testing.T) {
	p := host.Partition{Ref: partRef(3, 2), DiskNumber: 3, Number: 2}
	expect := func(e *scripted.Executor, r scripted.Reply) {
		e.ExpectAssociators(ns, partRef(3, 2), "MSFT_PartitionToVolume", "MSFT_Volume", r)
	}
	withProps := func(in winhost.Instance, kv ...any) winhost.Instance {
		props := map[string]any{}
		for k, v := range in.Props {
			props[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			props[kv[i].(string)] = kv[i+1]
		}
		in.Props = props
		return in
	}
	// MSFT_Volume.FileSystemType: 0 Unknown, 14 NTFS, 15 ReFS (MSFT_Volume page).
	raw := volInst(guidA, "", 0, 10<<30)
	tests := []struct {
		name   string
		reply  scripted.Reply
		wantFS string
		want   error
		prop   bool
	}{
		{"raw volume", scripted.Reply{Instances: []winhost.Instance{raw}}, "", nil, false},
		{"raw spelled out", scripted.Reply{Instances: []winhost.Instance{withProps(raw, "FileSystem", "RAW")}}, "", nil, false},
		{"ntfs", scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, 10<<30)}}, "NTFS", nil, false},
		// Any known type counts as formatted, even without the string
		// (never reformat another file system: parseVolume).
		{"refs type only", scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "", 15, 10<<30)}}, "ReFS", nil, false},
		{"unknown type number", scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "", 99, 10<<30)}}, "FileSystemType(99)", nil, false},
		{"fat32 string, type missing", scripted.Reply{Instances: []winhost.Instance{withProps(volInst(guidA, "FAT32", 0, 1<<30), "FileSystemType", nil)}}, "FAT32", nil, false},
		{"no volume yet", scripted.Reply{}, "", host.ErrNotFound, false},
		{"two volumes", scripted.Reply{Instances: []winhost.Instance{raw, raw}}, "", host.ErrConflict, false},
		{"path missing", scripted.Reply{Instances: []winhost.Instance{withProps(raw, "Path", nil)}}, "", nil, true},
		{"path not a volume GUID path", scripted.Reply{Instances: []winhost.Instance{withProps(raw, "Path", `E:\`)}}, "", nil, true},
		{"size of the wrong type", scripted.Reply{Instances: []winhost.Instance{withProps(raw, "Size", true)}}, "", nil, true},
		{"partition deleted", scripted.Reply{Err: &winhost.COMError{Op: "AssociatorsOf", HResult: 0x80041002}}, "", host.ErrNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			expect(e, tt.reply)
			v, err := volumesOf(e).OfPartition(context.Background(), p)
			var pe *winhost.PropError
			switch {
			case tt.prop:
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want PropError", err)
				}
			case tt.want != nil:
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
			default:
				if err != nil || v.FileSystem != tt.wantFS || v.GUIDPath != guidA || v.Ref != volRef(guidA) {
					t.Fatalf("OfPartition = %+v, %v; want file system %q", v, err, tt.wantFS)
				}
			}
		})
	}
	t.Run("full parse", func(t *testing.T) {
		e := scripted.New(t)
		in := withProps(volInst(`\\?\Volume{1B7E5F0C-2B4D-4C6F-9A51-0E8D3A7C2F11}\`, "NTFS", 14, 1<<40),
			"FileSystemLabel", "data", "AllocationUnitSize", int64(65536), "HealthStatus", int64(3))
		expect(e, scripted.Reply{Instances: []winhost.Instance{in}})
		v, err := volumesOf(e).OfPartition(context.Background(), p)
		want := host.Volume{Ref: in.Path, GUIDPath: guidA, FileSystem: "NTFS", Label: "data", Size: 1 << 40,
			SizeRemaining: 1 << 39, AllocationUnitSize: 65536, HealthStatus: host.HealthUnhealthy}
		if err != nil || !reflect.DeepEqual(v, want) {
			t.Fatalf("OfPartition = %+v, %v\nwant %+v", v, err, want)
		}
	})
	t.Run("no object path", func(t *testing.T) {
		e := scripted.New(t)
		if _, err := volumesOf(e).OfPartition(context.Background(), host.Partition{Number: 2}); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}

func TestVolumesGet(t *testing.T) {
	t.Run("query escapes the GUID path", func(t *testing.T) {
		e := scripted.New(t)
		// WQL literal: every backslash doubled (WHERE Clause (WMI)).
		// AllocationUnitSize is selected: the review found it read but
		// never asked for, so it was always null on Windows.
		want := `SELECT ObjectId, Path, FileSystem, FileSystemType, FileSystemLabel, Size, SizeRemaining, AllocationUnitSize, HealthStatus ` +
			`FROM MSFT_Volume WHERE Path = '\\\\?\\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\\'`
		if wqlVolume(guidA) != want {
			t.Fatalf("helper builds %s", wqlVolume(guidA))
		}
		e.ExpectQuery(ns, want, scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, 20<<30)}})
		// Upper case and no trailing backslash are canonicalised.
		v, err := volumesOf(e).Get(context.Background(), `\\?\Volume{1B7E5F0C-2B4D-4C6F-9A51-0E8D3A7C2F11}`)
		if err != nil || v.Size != 20<<30 || v.SizeRemaining != 10<<30 || v.AllocationUnitSize != 4096 {
			t.Fatalf("Get = %+v, %v", v, err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlVolume(guidB), scripted.Reply{})
		if _, err := volumesOf(e).Get(context.Background(), guidB); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("not a GUID path, no query", func(t *testing.T) {
		e := scripted.New(t)
		if _, err := volumesOf(e).Get(context.Background(), `C:\`); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
	t.Run("hung provider", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlVolume(guidB), scripted.Reply{Block: true})
		if _, err := volumesOf(e).Get(e.BlockedContext(), guidB); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func format(guid string, params ...winhost.Param) winhost.Method {
	return winhost.Method{Class: "MSFT_Volume", Path: volRef(guid), Name: "Format", In: params}
}

func formatParams(fs, label string, aus uint32) []winhost.Param {
	ps := []winhost.Param{{Name: "FileSystem", Value: fs}, {Name: "FileSystemLabel", Value: label}}
	if aus != 0 {
		ps = append(ps, winhost.Param{Name: "AllocationUnitSize", Value: aus})
	}
	return append(ps, winhost.Param{Name: "Full", Value: false}, winhost.Param{Name: "Force", Value: false})
}

func TestVolumesFormat(t *testing.T) {
	blank := host.Volume{Ref: volRef(guidA), GUIDPath: guidA, Size: 10 << 30}
	formatted := func(fs string, typ int64) scripted.Reply {
		// FormattedVolume: "receives a MSFT_Volume object" (Format page).
		return scripted.Reply{Result: winhost.Result{Out: map[string]any{"FormattedVolume": volInst(guidA, fs, typ, 10<<30)}}}
	}
	t.Run("ntfs default cluster", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, format(guidA, formatParams("NTFS", "", 0)...), formatted("NTFS", 14))
		v, err := volumesOf(e).Format(context.Background(), blank, host.FormatOptions{FileSystem: "ntfs"})
		if err != nil || v.FileSystem != "NTFS" || v.GUIDPath != guidA {
			t.Fatalf("Format = %+v, %v", v, err)
		}
	})
	t.Run("refs with label and allocation unit", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, format(guidA, formatParams("ReFS", "data", 65536)...), formatted("ReFS", 15))
		v, err := volumesOf(e).Format(context.Background(), blank,
			host.FormatOptions{FileSystem: "ReFS", Label: "data", AllocationUnitSize: 65536})
		if err != nil || v.FileSystem != "ReFS" {
			t.Fatalf("Format = %+v, %v", v, err)
		}
	})
	t.Run("no output object: volume read again", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, format(guidA, formatParams("NTFS", "", 0)...), rv(0))
		e.ExpectQuery(ns, wqlVolume(guidA), scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, 10<<30)}})
		v, err := volumesOf(e).Format(context.Background(), blank, host.FormatOptions{FileSystem: "NTFS"})
		if err != nil || v.FileSystem != "NTFS" {
			t.Fatalf("Format = %+v, %v", v, err)
		}
	})
	t.Run("never reformats", func(t *testing.T) {
		e := scripted.New(t)
		v := blank
		v.FileSystem = "FAT32"
		if _, err := volumesOf(e).Format(context.Background(), v, host.FormatOptions{FileSystem: "NTFS"}); !errors.Is(err, host.ErrAlreadyExists) {
			t.Fatalf("err = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("unsupported file system", func(t *testing.T) {
		e := scripted.New(t)
		if _, err := volumesOf(e).Format(context.Background(), blank, host.FormatOptions{FileSystem: "exFAT"}); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
	for _, c := range []struct {
		rv   uint32
		want error
	}{{43000, host.ErrInvalid}, {43006, host.ErrReadOnly}, {42010, host.ErrConflict}, {40001, host.ErrAccessDenied}} {
		t.Run("return value "+itoa(c.rv), func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectCall(ns, format(guidA, formatParams("NTFS", "", 512)...), rv(c.rv))
			_, err := volumesOf(e).Format(context.Background(), blank, host.FormatOptions{FileSystem: "NTFS", AllocationUnitSize: 512})
			var me *winhost.MethodError
			if !errors.Is(err, c.want) || !errors.As(err, &me) || me.ReturnValue != c.rv {
				t.Fatalf("err = %v, want %v and MethodError %d", err, c.want, c.rv)
			}
		})
	}
	t.Run("hung format", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectCall(ns, format(guidA, formatParams("NTFS", "", 0)...), scripted.Reply{Block: true})
		if _, err := volumesOf(e).Format(e.BlockedContext(), blank, host.FormatOptions{FileSystem: "NTFS"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

const staging = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.wincsi.io\0f3c8a1e9b7d4c2a8e6f1b3d5a7c9e2f4b6d8a0c1e3f5a7b9d1c3e5f7a9b1c3d\globalmount`

func TestVolumesMount(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		e := scripted.New(t)
		// Both strings end with a backslash (SetVolumeMountPoint docs).
		e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidA}, ok())
		if err := volumesOf(e).Mount(context.Background(), `\\?\Volume{1B7E5F0C-2B4D-4C6F-9A51-0E8D3A7C2F11}`, staging); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("directory not empty", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidA}, scripted.Reply{Err: w32("SetVolumeMountPointW", winhost.ErrorDirNotEmpty)})
		err := volumesOf(e).Mount(context.Background(), guidA, staging+`\`)
		var we *winhost.Win32Error
		if !errors.Is(err, host.ErrDirNotEmpty) || !errors.As(err, &we) {
			t.Fatalf("err = %v, want ErrDirNotEmpty wrapping the Win32 error", err)
		}
	})
	t.Run("directory missing", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidA}, scripted.Reply{Err: w32("SetVolumeMountPointW", winhost.ErrorPathNotFound)})
		if err := volumesOf(e).Mount(context.Background(), guidA, staging); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("bad volume name", func(t *testing.T) {
		e := scripted.New(t)
		if err := volumesOf(e).Mount(context.Background(), `E:\`, staging); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}

func TestVolumesUnmountFlushDiskNumberFreeSpace(t *testing.T) {
	noSlash := guidA[:len(guidA)-1]
	t.Run("unmount", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
		if err := volumesOf(e).Unmount(context.Background(), staging); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unmount of a plain directory", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, scripted.Reply{Err: w32("DeleteVolumeMountPointW", winhost.ErrorNotAReparsePoint)})
		if err := volumesOf(e).Unmount(context.Background(), staging); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("flush opens the volume, not its root", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("FlushVolume", []any{noSlash}, ok())
		if err := volumesOf(e).Flush(context.Background(), guidA); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("flush of a gone volume", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("FlushVolume", []any{noSlash}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorFileNotFound)})
		if err := volumesOf(e).Flush(context.Background(), guidA); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("disk number", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("VolumeDiskExtents", []any{noSlash}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 4)})
		n, err := volumesOf(e).DiskNumber(context.Background(), guidA)
		if err != nil || n != 4 {
			t.Fatalf("DiskNumber = %d, %v", n, err)
		}
	})
	t.Run("disk number, spanned volume", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("VolumeDiskExtents", []any{noSlash}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(2, 6, 4)})
		if n, err := volumesOf(e).DiskNumber(context.Background(), guidA); err != nil || n != 6 {
			t.Fatalf("DiskNumber = %d, %v", n, err)
		}
	})
	t.Run("disk number, malformed", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("VolumeDiskExtents", []any{noSlash}, scripted.Reply{Bytes: make([]byte, 8)})
		if _, err := volumesOf(e).DiskNumber(context.Background(), guidA); err == nil || errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want a parse error", err)
		}
	})
	t.Run("disk number, volume gone", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("VolumeDiskExtents", []any{noSlash}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorFileNotFound)})
		if _, err := volumesOf(e).DiskNumber(context.Background(), guidA); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("free space", func(t *testing.T) {
		e := scripted.New(t)
		target := `C:\var\lib\kubelet\pods\7c1e\volumes\kubernetes.io~csi\pv-1\mount`
		e.ExpectWin32("GetDiskFreeSpaceEx", []any{target + `\`}, scripted.Reply{Space: [3]uint64{3 << 30, 10 << 30, 4 << 30}})
		sp, err := volumesOf(e).FreeSpace(context.Background(), target)
		if err != nil || sp != (host.Space{Total: 10 << 30, Free: 4 << 30, AvailableToUse: 3 << 30}) {
			t.Fatalf("FreeSpace = %+v, %v", sp, err)
		}
	})
	t.Run("free space of a missing path", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetDiskFreeSpaceEx", []any{`C:\gone\`}, scripted.Reply{Err: w32("GetDiskFreeSpaceExW", winhost.ErrorPathNotFound)})
		if _, err := volumesOf(e).FreeSpace(context.Background(), `C:\gone`); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("free space, hung", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetDiskFreeSpaceEx", []any{`C:\x\`}, scripted.Reply{Block: true})
		if _, err := volumesOf(e).FreeSpace(e.BlockedContext(), `C:\x`); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
