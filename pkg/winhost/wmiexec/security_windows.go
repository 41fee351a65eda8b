package wmiexec

import (
	"context"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// FileSecurity implements winhost.Win32.
func (e *Executor) FileSecurity(ctx context.Context, path string, info uint32) ([]byte, error) {
	return win32Call(ctx, e, "GetSecurityInfo", func() ([]byte, error) {
		h, err := openHandle(path, windows.READ_CONTROL, windows.FILE_FLAG_BACKUP_SEMANTICS)
		if err != nil {
			return nil, err
		}
		defer closeHandle(h)
		return securityInfo(h, info)
	}, "path", path)
}

// UpdateFileDACL implements winhost.Win32: one handle for the read and the
// write, so the DACL set is built from the DACL of the same object.
func (e *Executor) UpdateFileDACL(ctx context.Context, path string, update func(sd []byte) ([]byte, uint32, error)) error {
	return win32Do(ctx, e, "UpdateFileDACL", func() error {
		h, err := openHandle(path, windows.READ_CONTROL|windows.WRITE_DAC, windows.FILE_FLAG_BACKUP_SEMANTICS)
		if err != nil {
			return err
		}
		defer closeHandle(h)
		sd, err := securityInfo(h, uint32(windows.DACL_SECURITY_INFORMATION))
		if err != nil {
			return err
		}
		acl, info, err := update(sd)
		if err != nil || acl == nil {
			return err
		}
		return setDACL(h, info, acl)
	}, "path", path)
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

// securityInfo reads the parts info names of the security descriptor of
// the object h is a handle of, with GetSecurityInfo
// (https://learn.microsoft.com/en-us/windows/win32/api/aclapi/nf-aclapi-getsecurityinfo),
// which x/sys returns self-relative on the Go heap (it frees Windows'
// copy).
func securityInfo(h windows.Handle, info uint32) ([]byte, error) {
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.SECURITY_INFORMATION(info))
	if err != nil {
		return nil, win32Error("GetSecurityInfo", err)
	}
	b := append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(sd)), sd.Length())...)
	runtime.KeepAlive(sd)
	return b, nil
}

// setDACL sets the DACL of the object h is a handle of with SetSecurityInfo
// (https://learn.microsoft.com/en-us/windows/win32/api/aclapi/nf-aclapi-setsecurityinfo):
// DACL_SECURITY_INFORMATION and the flags of info, the ACL acl copied into
// a DWORD-aligned buffer, as an ACL must be. SetSecurityInfo propagates the
// ACL's inheritable entries to the existing children.
func setDACL(h windows.Handle, info uint32, acl []byte) error {
	if len(acl) < 8 {
		return win32Error("SetSecurityInfo", windows.ERROR_INVALID_ACL)
	}
	buf := make([]uint32, (len(acl)+3)/4)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*4), acl)
	err := windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT,
		windows.SECURITY_INFORMATION(info)|windows.DACL_SECURITY_INFORMATION,
		nil, nil, (*windows.ACL)(unsafe.Pointer(&buf[0])), nil)
	runtime.KeepAlive(buf)
	if err != nil {
		return win32Error("SetSecurityInfo", err)
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
