package wmiexec

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// The Win32 calls, one function each. Every error is a *winhost.Win32Error
// built from the errno the failing call itself returned (x/sys/windows
// captures it at the call), never from a later GetLastError. Handles are
// closed only after they were opened successfully.

func win32Error(call string, err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return &winhost.Win32Error{Call: call, Code: uint32(en)}
	}
	return fmt.Errorf("%s: %w", call, err)
}

func isErrno(err error, code syscall.Errno) bool {
	var en syscall.Errno
	return errors.As(err, &en) && en == code
}

func utf16Ptr(call, s string) (*uint16, error) {
	p, err := windows.UTF16PtrFromString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q contains a NUL character: %w", call, s, host.ErrInvalid)
	}
	return p, nil
}

// openHandle opens a device, volume or file with OPEN_EXISTING. Access 0
// is enough for IOCTLs defined with FILE_ANY_ACCESS.
func openHandle(path string, access, flags uint32) (windows.Handle, error) {
	p, err := utf16Ptr("CreateFile", path)
	if err != nil {
		return windows.InvalidHandle, err
	}
	h, err := windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, flags, 0)
	if err != nil {
		return windows.InvalidHandle, win32Error("CreateFile", err)
	}
	return h, nil
}

// closeHandle closes h. CloseHandle fails only for an invalid handle, which
// cannot happen for one CreateFile returned; its error would tell the
// caller nothing about the call it asked for.
func closeHandle(h windows.Handle) {
	_ = windows.CloseHandle(h) // see above
}

func storageDeviceIDDescriptor(devicePath string) ([]byte, error) {
	h, err := openHandle(devicePath, 0, 0)
	if err != nil {
		return nil, err
	}
	defer closeHandle(h)
	q := storagePropertyQuery{PropertyID: storageDeviceIDProperty, QueryType: propertyStandardQuery}
	buf := make([]byte, deviceIDBufferSize)
	for {
		var n uint32
		err := windows.DeviceIoControl(h, ioctlStorageQueryProperty,
			(*byte)(unsafe.Pointer(&q)), uint32(unsafe.Sizeof(q)),
			&buf[0], uint32(len(buf)), &n, nil)
		if err != nil {
			return nil, win32Error("DeviceIoControl", err)
		}
		// A descriptor larger than the buffer comes back truncated with
		// its full Size in the header: read it again once, whole.
		need := descriptorSize(buf[:n])
		if need > len(buf) && need <= maxDescriptorSize {
			buf = make([]byte, need)
			continue
		}
		return buf[:n], nil
	}
}

// scsiAddress sends IOCTL_SCSI_GET_ADDRESS, which "must be directed to a
// class driver or to a PDO created by the port driver" (its page,
// learn.microsoft.com/windows-hardware/drivers/ddi/ntddscsi/ni-ntddscsi-ioctl_scsi_get_address):
// the disk's device path is the disk class driver's.
func scsiAddress(devicePath string) ([]byte, error) {
	h, err := openHandle(devicePath, 0, 0)
	if err != nil {
		return nil, err
	}
	defer closeHandle(h)
	buf := make([]byte, scsiAddressSize)
	var n uint32
	if err := windows.DeviceIoControl(h, ioctlSCSIGetAddress, nil, 0, &buf[0], uint32(len(buf)), &n, nil); err != nil {
		return nil, win32Error("DeviceIoControl", err)
	}
	return buf[:n], nil
}

func volumeDiskExtents(volumeName string) ([]byte, error) {
	h, err := openHandle(volumeName, 0, 0)
	if err != nil {
		return nil, err
	}
	defer closeHandle(h)
	buf := make([]byte, diskExtentsBufferSize(initialDiskExtents))
	for {
		var n uint32
		err := windows.DeviceIoControl(h, ioctlVolumeGetVolumeDiskExtents, nil, 0,
			&buf[0], uint32(len(buf)), &n, nil)
		if isErrno(err, windows.ERROR_MORE_DATA) {
			// NumberOfDiskExtents holds the count needed.
			count := diskExtentsCount(buf)
			if size := diskExtentsBufferSize(count); size > len(buf) && count <= maxDiskExtents {
				buf = make([]byte, size)
				continue
			}
		}
		if err != nil {
			return nil, win32Error("DeviceIoControl", err)
		}
		return buf[:n], nil
	}
}

// flushVolume flushes every open file of the volume and its metadata.
// FlushFileBuffers on a volume handle needs GENERIC_WRITE and
// administrator rights (FlushFileBuffers documentation).
func flushVolume(volumeName string) error {
	h, err := openHandle(volumeName, windows.GENERIC_READ|windows.GENERIC_WRITE, 0)
	if err != nil {
		return err
	}
	defer closeHandle(h)
	if err := windows.FlushFileBuffers(h); err != nil {
		return win32Error("FlushFileBuffers", err)
	}
	return nil
}

func setVolumeMountPoint(mountPoint, volumeName string) error {
	mp, err := utf16Ptr("SetVolumeMountPoint", mountPoint)
	if err != nil {
		return err
	}
	vn, err := utf16Ptr("SetVolumeMountPoint", volumeName)
	if err != nil {
		return err
	}
	if err := windows.SetVolumeMountPoint(mp, vn); err != nil {
		return win32Error("SetVolumeMountPoint", err)
	}
	return nil
}

func deleteVolumeMountPoint(mountPoint string) error {
	mp, err := utf16Ptr("DeleteVolumeMountPoint", mountPoint)
	if err != nil {
		return err
	}
	if err := windows.DeleteVolumeMountPoint(mp); err != nil {
		return win32Error("DeleteVolumeMountPoint", err)
	}
	return nil
}

func getVolumeNameForVolumeMountPoint(mountPoint string) (string, error) {
	mp, err := utf16Ptr("GetVolumeNameForVolumeMountPoint", mountPoint)
	if err != nil {
		return "", err
	}
	// "\\?\Volume{GUID}\" is 49 characters; 50 is the documented
	// sufficient size. MAX_PATH leaves room.
	buf := make([]uint16, windows.MAX_PATH)
	if err := windows.GetVolumeNameForVolumeMountPoint(mp, &buf[0], uint32(len(buf))); err != nil {
		return "", win32Error("GetVolumeNameForVolumeMountPoint", err)
	}
	return windows.UTF16ToString(buf), nil
}

func getDiskFreeSpaceEx(path string) (available, total, free uint64, err error) {
	p, err := utf16Ptr("GetDiskFreeSpaceEx", path)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := windows.GetDiskFreeSpaceEx(p, &available, &total, &free); err != nil {
		return 0, 0, 0, win32Error("GetDiskFreeSpaceEx", err)
	}
	return available, total, free, nil
}

func getFileAttributes(path string) (uint32, error) {
	p, err := utf16Ptr("GetFileAttributes", path)
	if err != nil {
		return 0, err
	}
	attrs, err := windows.GetFileAttributes(p)
	if err != nil {
		return 0, win32Error("GetFileAttributes", err)
	}
	return attrs, nil
}

// readReparsePoint opens the reparse point itself (not its target) and
// returns its REPARSE_DATA_BUFFER. FSCTL_GET_REPARSE_POINT is defined with
// FILE_ANY_ACCESS, so access 0 is enough; FILE_FLAG_BACKUP_SEMANTICS is
// required to open a directory.
func readReparsePoint(path string) ([]byte, error) {
	h, err := openHandle(path, 0, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS)
	if err != nil {
		return nil, err
	}
	defer closeHandle(h)
	buf := make([]byte, windows.MAXIMUM_REPARSE_DATA_BUFFER_SIZE)
	var n uint32
	if err := windows.DeviceIoControl(h, windows.FSCTL_GET_REPARSE_POINT, nil, 0,
		&buf[0], uint32(len(buf)), &n, nil); err != nil {
		return nil, win32Error("DeviceIoControl", err)
	}
	return buf[:n], nil
}

func createDirectory(path string) error {
	p, err := utf16Ptr("CreateDirectory", path)
	if err != nil {
		return err
	}
	if err := windows.CreateDirectory(p, nil); err != nil {
		return win32Error("CreateDirectory", err)
	}
	return nil
}

func removeDirectory(path string) error {
	p, err := utf16Ptr("RemoveDirectory", path)
	if err != nil {
		return err
	}
	if err := windows.RemoveDirectory(p); err != nil {
		return win32Error("RemoveDirectory", err)
	}
	return nil
}

func createSymbolicLink(link, target string, flags uint32) error {
	l, err := utf16Ptr("CreateSymbolicLink", link)
	if err != nil {
		return err
	}
	t, err := utf16Ptr("CreateSymbolicLink", target)
	if err != nil {
		return err
	}
	if err := windows.CreateSymbolicLink(l, t, flags); err != nil {
		return win32Error("CreateSymbolicLink", err)
	}
	return nil
}

// forEachEntry lists a directory with FindFirstFileW/FindNextFileW
// (learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-findfirstfilew)
// and calls fn with the name of each entry, "." and ".." left out, until fn
// returns true. Neither call follows a link or mount point among the
// entries; each is reported by its own name. The find handle is always
// closed.
func forEachEntry(dir string, fn func(name string) (stop bool)) error {
	p, err := utf16Ptr("FindFirstFile", findPattern(dir))
	if err != nil {
		return err
	}
	var fd windows.Win32finddata
	h, err := windows.FindFirstFile(p, &fd)
	if err != nil {
		if isErrno(err, windows.ERROR_FILE_NOT_FOUND) {
			// "No matching files": an empty directory without "." and
			// ".." entries (a volume's root). Tell it apart from a
			// directory that is not there.
			if _, aerr := getFileAttributes(dir); aerr != nil {
				return win32Error("FindFirstFile", err)
			}
			return nil
		}
		return win32Error("FindFirstFile", err)
	}
	defer func() {
		// FindClose fails only for an invalid handle; the listing is
		// already done.
		_ = windows.FindClose(h)
	}()
	for {
		if name := windows.UTF16ToString(fd.FileName[:]); name != "." && name != ".." && fn(name) {
			return nil
		}
		if err := windows.FindNextFile(h, &fd); err != nil {
			if isErrno(err, windows.ERROR_NO_MORE_FILES) {
				return nil
			}
			return win32Error("FindNextFile", err)
		}
	}
}

// directoryEntries returns the names of a directory's entries
// (forEachEntry).
func directoryEntries(dir string) ([]string, error) {
	var names []string
	if err := forEachEntry(dir, func(name string) bool {
		names = append(names, name)
		return false
	}); err != nil {
		return nil, err
	}
	return names, nil
}

// directoryHasEntries reports whether a directory has an entry other than
// "." and "..", stopping at the first (forEachEntry).
func directoryHasEntries(dir string) (bool, error) {
	found := false
	err := forEachEntry(dir, func(string) bool {
		found = true
		return true
	})
	return found, err
}
