package journal

import (
	"errors"
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

// maxFileSize bounds what is read of a journal file: an entry or a note is
// a few hundred bytes; a larger file was not written by the plugin.
const maxFileSize = 1 << 20

// shareAll lets other processes read, write, rename and delete a journal
// file while the plugin or diagnose has it open (the plugin replaces an
// entry while diagnose reads it).
const shareAll = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE

// read opens path for its security only (READ_CONTROL for the owner,
// GetSecurityInfo; FILE_READ_ATTRIBUTES for the number of links,
// GetFileInformationByHandle), then opens it again for reading and reads
// it, if that second handle reaches the same file (volume serial number
// and file index: the file was not replaced in between). A file replaced
// between the two opens (the plugin rewrote it while diagnose reads) is
// read again, up to three times.
func (osFileSecurity) read(path string) (fileRead, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return fileRead{}, err
	}
	for range 3 {
		r, err := readOnce(p, path)
		if err != nil || !errors.Is(r.dataErr, errReplaced) {
			return r, err
		}
	}
	return fileRead{}, fmt.Errorf("%s: %w three times", path, errReplaced)
}

// errReplaced: the file read is not the file whose security was read.
var errReplaced = errors.New("replaced while it was read")

func readOnce(p *uint16, path string) (fileRead, error) {
	h, err := windows.CreateFile(p, windows.READ_CONTROL|windows.FILE_READ_ATTRIBUTES, shareAll, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return fileRead{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer os.NewFile(uintptr(h), path).Close() // opened for its security: nothing to flush
	r := fileRead{checked: true}
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fileRead{}, fmt.Errorf("owner of %s: GetSecurityInfo: %w", path, err)
	}
	sid, _, err := sd.Owner()
	if err != nil {
		return fileRead{}, fmt.Errorf("owner of %s: %w", path, err)
	}
	if sid != nil {
		r.owner, _, err = winacl.FormatSID(unsafe.Slice((*byte)(unsafe.Pointer(sid)), sid.Len()))
		runtime.KeepAlive(sd)
		if err != nil {
			return fileRead{}, fmt.Errorf("owner of %s: %w", path, err)
		}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return fileRead{}, fmt.Errorf("links of %s: GetFileInformationByHandle: %w", path, err)
	}
	r.links = info.NumberOfLinks
	r.data, r.dataErr = readSame(p, path, &info)
	return r, nil
}

// readSame opens the file at p for reading and reads it, unless it is not
// the file of want.
func readSame(p *uint16, path string, want *windows.ByHandleFileInformation) ([]byte, error) {
	h, err := windows.CreateFile(p, windows.GENERIC_READ, shareAll, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	defer f.Close() // a read-only handle: nothing to flush
	var got windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &got); err != nil {
		return nil, fmt.Errorf("%s: GetFileInformationByHandle: %w", path, err)
	}
	if got.VolumeSerialNumber != want.VolumeSerialNumber || got.FileIndexHigh != want.FileIndexHigh || got.FileIndexLow != want.FileIndexLow {
		return nil, fmt.Errorf("%s: %w", path, errReplaced)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes, larger than any journal file", path, maxFileSize)
	}
	return b, nil
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
