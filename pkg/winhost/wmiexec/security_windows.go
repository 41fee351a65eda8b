package wmiexec

import (
	"context"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The security functions golang.org/x/sys/windows does not bind (v0.49.0
// has GetSecurityInfo and SetSecurityInfo, which propagate inheritable
// entries to existing children when they set a DACL, but not the
// low-level pair, which does not).
var (
	modadvapi32          = windows.NewLazySystemDLL("advapi32.dll")
	procGetFileSecurityW = modadvapi32.NewProc("GetFileSecurityW")
	procSetFileSecurityW = modadvapi32.NewProc("SetFileSecurityW")
)

// maxDescriptor bounds the security descriptor read: owner, group and two
// ACLs of at most 64 KiB each fit well below it.
const maxDescriptor = 1 << 20

// GetFileSecurity implements winhost.Win32.
func (e *Executor) GetFileSecurity(ctx context.Context, path string, info uint32) ([]byte, error) {
	return win32Call(ctx, e, "GetFileSecurity", func() ([]byte, error) {
		return getFileSecurity(path, info)
	}, "path", path)
}

// SetFileSecurity implements winhost.Win32.
func (e *Executor) SetFileSecurity(ctx context.Context, path string, info uint32, sd []byte) error {
	return win32Do(ctx, e, "SetFileSecurity", func() error { return setFileSecurity(path, info, sd) }, "path", path)
}

// LookupAccountName implements winhost.Win32.
func (e *Executor) LookupAccountName(ctx context.Context, name string) ([]byte, uint32, error) {
	type account struct {
		sid []byte
		use uint32
	}
	a, err := win32Call(ctx, e, "LookupAccountName", func() (account, error) {
		sid, use, err := lookupAccountName(name)
		return account{sid, use}, err
	})
	return a.sid, a.use, err
}

// aligned returns a zeroed buffer of at least n bytes whose start is
// DWORD-aligned, as a security descriptor must be.
func aligned(n int) []uint32 { return make([]uint32, (n+3)/4) }

func bytesOf(buf []uint32, n int) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*4)[:n]...)
}

// getFileSecurity calls GetFileSecurityW
// (https://learn.microsoft.com/en-us/windows/win32/api/winbase/nf-winbase-getfilesecurityw):
// "if the returned number of bytes is less than or equal to nLength, the
// entire security descriptor is returned in the output buffer; otherwise,
// none of the descriptor is returned". It asks again, once or twice, with
// the size needed.
func getFileSecurity(path string, info uint32) ([]byte, error) {
	p, err := utf16Ptr("GetFileSecurity", path)
	if err != nil {
		return nil, err
	}
	size := 512
	for range 4 {
		buf := aligned(size)
		var need uint32
		r, _, errno := procGetFileSecurityW.Call(uintptr(unsafe.Pointer(p)), uintptr(info),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)*4), uintptr(unsafe.Pointer(&need)))
		runtime.KeepAlive(p)
		if r != 0 {
			if int(need) > len(buf)*4 || need == 0 {
				need = uint32(len(buf) * 4)
			}
			return bytesOf(buf, int(need)), nil
		}
		if !isErrno(errno, windows.ERROR_INSUFFICIENT_BUFFER) || int(need) <= size || need > maxDescriptor {
			return nil, win32Error("GetFileSecurity", errno)
		}
		size = int(need)
	}
	return nil, win32Error("GetFileSecurity", windows.ERROR_INSUFFICIENT_BUFFER)
}

// setFileSecurity calls SetFileSecurityW
// (https://learn.microsoft.com/en-us/windows/win32/api/winbase/nf-winbase-setfilesecurityw)
// with sd copied into a DWORD-aligned buffer.
func setFileSecurity(path string, info uint32, sd []byte) error {
	p, err := utf16Ptr("SetFileSecurity", path)
	if err != nil {
		return err
	}
	if len(sd) == 0 {
		return win32Error("SetFileSecurity", windows.ERROR_INVALID_SECURITY_DESCR)
	}
	buf := aligned(len(sd))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*4), sd)
	r, _, errno := procSetFileSecurityW.Call(uintptr(unsafe.Pointer(p)), uintptr(info), uintptr(unsafe.Pointer(&buf[0])))
	runtime.KeepAlive(p)
	runtime.KeepAlive(buf)
	if r == 0 {
		return win32Error("SetFileSecurity", errno)
	}
	return nil
}

// lookupAccountName calls LookupAccountNameW on the local computer
// (windows.LookupSID) and returns the SID's bytes.
func lookupAccountName(name string) ([]byte, uint32, error) {
	sid, _, use, err := windows.LookupSID("", name)
	if err != nil {
		return nil, 0, win32Error("LookupAccountName", err)
	}
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(sid)), sid.Len())...), use, nil
}
