package wmiexec

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// The iSCSI discovery API (iscsidsc.dll): the persistent logins. WMI has a
// class for them, root\wmi MSiSCSIInitiator_PersistentLoginClass, one of
// the long-standing iSCSI discovery WMI classes
// (learn.microsoft.com/previous-versions/windows/desktop/iscsidisc/msiscsiinitiator-persistentloginclass),
// but its instances carry the login options, the CHAP user name and secret
// included (MSIscsiInitiator_TargetLoginOptions, Username and Password),
// and it has no method to remove a login. Signatures:
// ReportIScsiPersistentLoginsW and RemoveIScsiPersistentTargetW on
// learn.microsoft.com (windows/win32/api/iscsidsc/). Both return an
// ISDSC_STATUS: 0, a Win32 error code or an iSCSI status (0xEFFF...), the
// *Win32Error's Code.
var (
	modiscsidsc                      = windows.NewLazySystemDLL("iscsidsc.dll")
	procReportIScsiPersistentLoginsW = modiscsidsc.NewProc("ReportIScsiPersistentLoginsW")
	procRemoveIScsiPersistentTargetW = modiscsidsc.NewProc("RemoveIScsiPersistentTargetW")
)

// maxBufferTries bounds the calls made while logins are added between the
// size query and the read (each answers ERROR_INSUFFICIENT_BUFFER with a
// larger size).
const maxBufferTries = 5

// reportIScsiPersistentLogins returns the count and the fixed part of the
// buffer: count records of winhost.PersistentLoginInfoSize bytes. The
// records' LoginOptions point into the variable part after them, which
// holds the CHAP user names and secrets; it is never copied out, and the
// whole buffer is zeroed before returning.
//
// Protocol (the ReportIScsiPersistentLoginsW page): a first call with no
// buffer answers ERROR_INSUFFICIENT_BUFFER and the size needed; a call
// with that buffer answers ERROR_SUCCESS. hpe-storage/common-host-libs
// (windows/iscsidsc/report_iscsi_persistent_logins.go at 55e77af) saw the
// first call answer ERROR_INSUFFICIENT_BUFFER with size 0: no login.
func reportIScsiPersistentLogins() (uint32, []byte, error) {
	const call = "ReportIScsiPersistentLoginsW"
	if err := procReportIScsiPersistentLoginsW.Find(); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", call, err)
	}
	var count, size uint32
	for range maxBufferTries {
		var buf []byte
		var p *byte
		if size > 0 {
			buf = make([]byte, size)
			p = &buf[0]
		}
		r, _, _ := procReportIScsiPersistentLoginsW.Call(
			uintptr(unsafe.Pointer(&count)), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&size)))
		switch windows.Errno(r) {
		case windows.ERROR_SUCCESS:
			defer clear(buf)
			n := int(count) * winhost.PersistentLoginInfoSize
			if n > len(buf) {
				return 0, nil, fmt.Errorf("%s: %d logins do not fit the %d bytes returned", call, count, len(buf))
			}
			return count, append([]byte(nil), buf[:n]...), nil
		case windows.ERROR_INSUFFICIENT_BUFFER:
			clear(buf)
			if size == 0 {
				return 0, nil, nil
			}
			continue
		default:
			clear(buf)
			return 0, nil, &winhost.Win32Error{Call: call, Code: uint32(r)}
		}
	}
	return 0, nil, &winhost.Win32Error{Call: call, Code: uint32(windows.ERROR_INSUFFICIENT_BUFFER)}
}

// targetPortalW is ISCSI_TARGET_PORTALW (iscsidsc.h).
type targetPortalW struct {
	SymbolicName [256]uint16 // MAX_ISCSI_PORTAL_NAME_LEN
	Address      [256]uint16 // MAX_ISCSI_PORTAL_ADDRESS_LEN
	Socket       uint16
}

func removeIScsiPersistentTarget(initiatorInstance string, initiatorPort uint32, targetName string, portal winhost.PortalW) error {
	const call = "RemoveIScsiPersistentTargetW"
	if err := procRemoveIScsiPersistentTargetW.Find(); err != nil {
		return fmt.Errorf("%s: %w", call, err)
	}
	inst, err := utf16Ptr(call, initiatorInstance)
	if err != nil {
		return err
	}
	target, err := utf16Ptr(call, targetName)
	if err != nil {
		return err
	}
	var p targetPortalW
	if err := copyUTF16(p.SymbolicName[:], portal.SymbolicName); err != nil {
		return fmt.Errorf("%s: portal name: %w", call, err)
	}
	if err := copyUTF16(p.Address[:], portal.Address); err != nil {
		return fmt.Errorf("%s: portal address: %w", call, err)
	}
	p.Socket = portal.Socket
	r, _, _ := procRemoveIScsiPersistentTargetW.Call(uintptr(unsafe.Pointer(inst)), uintptr(initiatorPort),
		uintptr(unsafe.Pointer(target)), uintptr(unsafe.Pointer(&p)))
	if r != 0 {
		return &winhost.Win32Error{Call: call, Code: uint32(r)}
	}
	return nil
}

// copyUTF16 writes s, NUL-terminated, into a fixed WCHAR array.
func copyUTF16(dst []uint16, s string) error {
	u, err := windows.UTF16FromString(s)
	if err != nil {
		return err
	}
	if len(u) > len(dst) {
		return fmt.Errorf("%q is longer than %d characters", s, len(dst)-1)
	}
	copy(dst, u)
	return nil
}
