package wmiexec

import (
	"syscall"
	"unsafe"

	"github.com/Microsoft/go-winio/vhd"
	"golang.org/x/sys/windows"
)

// The virtual disk API (virtdisk.dll,
// learn.microsoft.com/windows/win32/api/virtdisk/): create, open, attach,
// detach and the physical path through github.com/Microsoft/go-winio/vhd,
// and ResizeVirtualDisk, which it lacks, bound here. Each call opens the
// file, makes its call and closes the handle: a handle cannot cross the
// executor.

func createVirtualDisk(path string, size uint64) error {
	params := vhd.CreateVirtualDiskParameters{Version: 2, Version2: vhd.CreateVersion2{MaximumSize: size}}
	h, err := vhd.CreateVirtualDisk(path, vhd.VirtualDiskAccessNone, vhd.CreateVirtualDiskFlagNone, &params)
	if err != nil {
		return win32Error("CreateVirtualDisk", err)
	}
	_ = syscall.CloseHandle(h) // the disk is created; nothing is lost by a failed close
	return nil
}

// openVirtualDisk opens a VHDX with version 2 parameters, whose access
// mask must be VIRTUAL_DISK_ACCESS_NONE
// (learn.microsoft.com/windows/win32/api/virtdisk/nf-virtdisk-openvirtualdisk).
func openVirtualDisk(path string) (syscall.Handle, error) {
	h, err := vhd.OpenVirtualDisk(path, vhd.VirtualDiskAccessNone, vhd.OpenVirtualDiskFlagNone)
	if err != nil {
		return 0, win32Error("OpenVirtualDisk", err)
	}
	return h, nil
}

// attachVirtualDisk attaches for longer than the handle
// (ATTACH_VIRTUAL_DISK_FLAG_PERMANENT_LIFETIME: without it the disk
// detaches when the handle closes,
// learn.microsoft.com/windows/win32/api/virtdisk/ne-virtdisk-attach_virtual_disk_flag)
// and without drive letters, and returns the physical path. Version 1
// parameters: version 2 is not known to Windows Server 2019 (go-winio's
// AttachVirtualDisk says so of RS5, build 17763).
func attachVirtualDisk(path string) (string, error) {
	h, err := openVirtualDisk(path)
	if err != nil {
		return "", err
	}
	defer syscall.CloseHandle(h) //nolint:errcheck // a permanent attach outlives the handle
	params := vhd.AttachVirtualDiskParameters{Version: 1}
	if err := vhd.AttachVirtualDisk(h, vhd.AttachVirtualDiskFlagPermanentLifetime|vhd.AttachVirtualDiskFlagNoDriveLetter, &params); err != nil {
		return "", win32Error("AttachVirtualDisk", err)
	}
	p, err := vhd.GetVirtualDiskPhysicalPath(h)
	if err != nil {
		return "", win32Error("GetVirtualDiskPhysicalPath", err)
	}
	return p, nil
}

func detachVirtualDisk(path string) error {
	h, err := openVirtualDisk(path)
	if err != nil {
		return err
	}
	defer syscall.CloseHandle(h) //nolint:errcheck // nothing is lost by a failed close
	if err := vhd.DetachVirtualDisk(h); err != nil {
		return win32Error("DetachVirtualDisk", err)
	}
	return nil
}

var procResizeVirtualDisk = windows.NewLazySystemDLL("virtdisk.dll").NewProc("ResizeVirtualDisk")

// resizeVirtualDiskParameters is RESIZE_VIRTUAL_DISK_PARAMETERS version 1
// (learn.microsoft.com/windows/win32/api/virtdisk/ns-virtdisk-resize_virtual_disk_parameters):
// the ULONGLONG of the union aligns it at 8 bytes.
type resizeVirtualDiskParameters struct {
	version uint32
	_       uint32
	newSize uint64
}

// resizeVirtualDisk grows the disk (RESIZE_VIRTUAL_DISK_FLAG_NONE,
// synchronous). Its return value is the error code
// (learn.microsoft.com/windows/win32/api/virtdisk/nf-virtdisk-resizevirtualdisk).
func resizeVirtualDisk(path string, size uint64) error {
	h, err := openVirtualDisk(path)
	if err != nil {
		return err
	}
	defer syscall.CloseHandle(h) //nolint:errcheck // nothing is lost by a failed close
	if err := procResizeVirtualDisk.Find(); err != nil {
		return win32Error("ResizeVirtualDisk", err)
	}
	params := resizeVirtualDiskParameters{version: 1, newSize: size}
	r, _, _ := procResizeVirtualDisk.Call(uintptr(h), 0, uintptr(unsafe.Pointer(&params)), 0)
	if r != 0 {
		return win32Error("ResizeVirtualDisk", syscall.Errno(r))
	}
	return nil
}
