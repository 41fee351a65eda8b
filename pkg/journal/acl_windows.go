package journal

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// descriptor reads path's owner and DACL with GetNamedSecurityInfoW
// (https://learn.microsoft.com/en-us/windows/win32/api/aclapi/nf-aclapi-getnamedsecurityinfow);
// x/sys returns it self-relative, on the Go heap.
func (osFileSecurity) descriptor(path string) ([]byte, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return nil, fmt.Errorf("GetNamedSecurityInfo: %w", err)
	}
	if sd == nil {
		return nil, nil
	}
	b := append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(sd)), sd.Length())...)
	runtime.KeepAlive(sd)
	return b, nil
}

// protect sets dir's owner and a protected DACL with SetNamedSecurityInfoW
// (https://learn.microsoft.com/en-us/windows/win32/api/aclapi/nf-aclapi-setnamedsecurityinfow).
// The protection is the PROTECTED_DACL_SECURITY_INFORMATION flag: the ACL
// itself cannot carry it. Setting a DACL this way recomputes the inherited
// entries of the files below, which is wanted here: the kubelet
// directory's entries leave them too.
func (osFileSecurity) protect(dir string, owner, dacl []byte) error {
	o, a := aligned(owner), aligned(dacl)
	err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		(*windows.SID)(unsafe.Pointer(&o[0])), nil, (*windows.ACL)(unsafe.Pointer(&a[0])), nil)
	runtime.KeepAlive(o)
	runtime.KeepAlive(a)
	if err != nil {
		return fmt.Errorf("SetNamedSecurityInfo: %w", err)
	}
	return nil
}

// aligned copies b into a DWORD-aligned buffer, as SIDs and ACLs must be.
func aligned(b []byte) []uint32 {
	buf := make([]uint32, (len(b)+3)/4+1)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*4), b)
	return buf
}

// read opens path once and reads both its owner (GetSecurityInfo on the
// handle) and its contents through that handle, so the owner checked is
// the owner of what is read. The file is shared for delete, so that the
// plugin may replace it while diagnose reads it.
func (osFileSecurity) read(path string) ([]byte, string, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, "", err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	defer f.Close() // a read-only handle: nothing to flush, no error worth reporting
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return nil, "", fmt.Errorf("owner of %s: GetSecurityInfo: %w", path, err)
	}
	// A file without an owner cannot be trusted, nor told apart from a
	// planted one: it fails the read (and Open, as an unreadable entry).
	sid, _, err := sd.Owner()
	if err != nil {
		return nil, "", fmt.Errorf("owner of %s: %w", path, err)
	}
	if sid == nil {
		return nil, "", fmt.Errorf("%s has no owner", path)
	}
	owner, _, err := winacl.FormatSID(unsafe.Slice((*byte)(unsafe.Pointer(sid)), sid.Len()))
	runtime.KeepAlive(sd)
	if err != nil {
		return nil, "", fmt.Errorf("owner of %s: %w", path, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, "", err
	}
	return b, owner, nil
}

// tokenOwner reads TokenOwner of the process token (GetTokenInformation,
// https://learn.microsoft.com/en-us/windows/win32/api/securitybaseapi/nf-securitybaseapi-gettokeninformation):
// the owner new files get.
func (osFileSecurity) tokenOwner() (string, error) {
	t := windows.GetCurrentProcessToken()
	var n uint32
	_ = windows.GetTokenInformation(t, windows.TokenOwner, nil, 0, &n) // asks for the size only
	if n == 0 {
		return "", fmt.Errorf("GetTokenInformation(TokenOwner): no size")
	}
	// TOKEN_OWNER is a pointer to the SID, followed by the SID itself.
	buf := make([]uintptr, (int(n)+int(unsafe.Sizeof(uintptr(0)))-1)/int(unsafe.Sizeof(uintptr(0))))
	if err := windows.GetTokenInformation(t, windows.TokenOwner, (*byte)(unsafe.Pointer(&buf[0])), uint32(len(buf))*uint32(unsafe.Sizeof(uintptr(0))), &n); err != nil {
		return "", fmt.Errorf("GetTokenInformation(TokenOwner): %w", err)
	}
	sid := *(**windows.SID)(unsafe.Pointer(&buf[0]))
	s, _, err := winacl.FormatSID(unsafe.Slice((*byte)(unsafe.Pointer(sid)), sid.Len()))
	runtime.KeepAlive(buf)
	return s, err
}
