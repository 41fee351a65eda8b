package wmiexec

import (
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// The Win32 calls of winhost.AdminCalls, one function each, with errors as
// *winhost.Win32Error from the failing call's own errno.

// registryValue reads HKLM\key\name by its type (x/sys/windows/registry).
func registryValue(key, name string) (any, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, key, registry.QUERY_VALUE)
	if err != nil {
		return nil, win32Error("RegOpenKeyEx", err)
	}
	defer k.Close()
	_, typ, err := k.GetValue(name, nil)
	if err != nil {
		return nil, win32Error("RegQueryValueEx", err)
	}
	switch typ {
	case registry.SZ, registry.EXPAND_SZ:
		s, _, err := k.GetStringValue(name)
		return s, regErr(err)
	case registry.DWORD:
		n, _, err := k.GetIntegerValue(name)
		return uint32(n), regErr(err)
	case registry.QWORD:
		n, _, err := k.GetIntegerValue(name)
		return n, regErr(err)
	case registry.MULTI_SZ:
		ss, _, err := k.GetStringsValue(name)
		return ss, regErr(err)
	}
	return nil, fmt.Errorf(`RegQueryValueEx: HKLM\%s\%s has registry type %d, which is not read: %w`, key, name, typ, host.ErrInvalid)
}

func regErr(err error) error {
	if err != nil {
		return win32Error("RegQueryValueEx", err)
	}
	return nil
}

// processToken reads the process token (a pseudo-handle: nothing to
// close). CheckTokenMembership with a null token uses the calling thread's
// impersonation token or a duplicate of the primary token, as it requires
// (learn.microsoft.com/windows/win32/api/securitybaseapi/nf-securitybaseapi-checktokenmembership),
// and counts only enabled groups: a UAC-filtered token is not a member.
func processToken() (host.Token, error) {
	tok := windows.GetCurrentProcessToken()
	u, err := tok.GetTokenUser()
	if err != nil {
		return host.Token{}, win32Error("GetTokenInformation", err)
	}
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		return host.Token{}, win32Error("CreateWellKnownSid", err)
	}
	member, err := windows.Token(0).IsMember(admins)
	if err != nil {
		return host.Token{}, win32Error("CheckTokenMembership", err)
	}
	return host.Token{
		User:           u.User.Sid.String(),
		System:         u.User.Sid.IsWellKnown(windows.WinLocalSystemSid),
		Administrators: member,
		Elevated:       tok.IsElevated(),
	}, nil
}

func getVolumePathName(path string) (string, error) {
	p, err := utf16Ptr("GetVolumePathName", path)
	if err != nil {
		return "", err
	}
	buf := make([]uint16, windows.MAX_LONG_PATH)
	if err := windows.GetVolumePathName(p, &buf[0], uint32(len(buf))); err != nil {
		return "", win32Error("GetVolumePathName", err)
	}
	return windows.UTF16ToString(buf), nil
}

func getDriveType(root string) (uint32, error) {
	p, err := utf16Ptr("GetDriveType", root)
	if err != nil {
		return 0, err
	}
	return windows.GetDriveType(p), nil
}

func getVolumeFileSystem(root string) (string, error) {
	p, err := utf16Ptr("GetVolumeInformation", root)
	if err != nil {
		return "", err
	}
	fs := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumeInformation(p, nil, 0, nil, nil, nil, &fs[0], uint32(len(fs))); err != nil {
		return "", win32Error("GetVolumeInformation", err)
	}
	return windows.UTF16ToString(fs), nil
}

// openService opens the service control manager with SC_MANAGER_CONNECT
// and the service with access; both handles are closed by the returned
// function. (golang.org/x/sys/windows/svc/mgr asks for all access, which a
// read-only check must not need: learn.microsoft.com/windows/win32/
// services/service-security-and-access-rights.)
func openService(name string, access uint32) (windows.Handle, func(), error) {
	p, err := utf16Ptr("OpenService", name)
	if err != nil {
		return 0, nil, err
	}
	m, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return 0, nil, win32Error("OpenSCManager", err)
	}
	h, err := windows.OpenService(m, p, access)
	if err != nil {
		_ = windows.CloseServiceHandle(m) // the open error is the one to report
		return 0, nil, win32Error("OpenService", err)
	}
	return h, func() {
		_ = windows.CloseServiceHandle(h) // closing a valid handle cannot fail usefully
		_ = windows.CloseServiceHandle(m)
	}, nil
}

func queryService(name string) (host.Service, error) {
	h, done, err := openService(name, windows.SERVICE_QUERY_STATUS|windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		return host.Service{}, err
	}
	defer done()
	var st windows.SERVICE_STATUS_PROCESS
	var need uint32
	if err := windows.QueryServiceStatusEx(h, windows.SC_STATUS_PROCESS_INFO,
		(*byte)(unsafe.Pointer(&st)), uint32(unsafe.Sizeof(st)), &need); err != nil {
		return host.Service{}, win32Error("QueryServiceStatusEx", err)
	}
	// QUERY_SERVICE_CONFIG is followed by its strings: ask for the size
	// first (ERROR_INSUFFICIENT_BUFFER), then read.
	need = 0
	err = windows.QueryServiceConfig(h, nil, 0, &need)
	if err != nil && !isErrno(err, windows.ERROR_INSUFFICIENT_BUFFER) {
		return host.Service{}, win32Error("QueryServiceConfig", err)
	}
	buf := make([]byte, max(need, uint32(unsafe.Sizeof(windows.QUERY_SERVICE_CONFIG{}))))
	cfg := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(h, cfg, uint32(len(buf)), &need); err != nil {
		return host.Service{}, win32Error("QueryServiceConfig", err)
	}
	return host.Service{Name: name, State: host.ServiceState(st.CurrentState), StartType: host.StartType(cfg.StartType)}, nil
}

// changeServiceStartType changes only the start type: SERVICE_NO_CHANGE
// for the type and error control, null for every string
// (learn.microsoft.com/windows/win32/api/winsvc/nf-winsvc-changeserviceconfigw).
// (svc/mgr's UpdateConfig would write every field back.)
func changeServiceStartType(name string, start host.StartType) error {
	h, done, err := openService(name, windows.SERVICE_CHANGE_CONFIG)
	if err != nil {
		return err
	}
	defer done()
	if err := windows.ChangeServiceConfig(h, windows.SERVICE_NO_CHANGE, uint32(start), windows.SERVICE_NO_CHANGE,
		nil, nil, nil, nil, nil, nil, nil); err != nil {
		return win32Error("ChangeServiceConfig", err)
	}
	return nil
}

func startService(name string) error {
	h, done, err := openService(name, windows.SERVICE_START)
	if err != nil {
		return err
	}
	defer done()
	if err := windows.StartService(h, 0, nil); err != nil {
		return win32Error("StartService", err)
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return win32Error("WriteFile", err)
	}
	return nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, win32Error("CreateFile", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, winhost.MaxFileData+1))
	if err != nil {
		return nil, win32Error("ReadFile", err)
	}
	if len(b) > winhost.MaxFileData {
		return nil, fmt.Errorf("ReadFile: %s holds more than %d bytes: %w", path, winhost.MaxFileData, host.ErrOutOfRange)
	}
	return b, nil
}

func deleteFile(path string) error {
	p, err := utf16Ptr("DeleteFile", path)
	if err != nil {
		return err
	}
	if err := windows.DeleteFile(p); err != nil {
		return win32Error("DeleteFile", err)
	}
	return nil
}

// netapi32's user calls, which x/sys does not declare
// (learn.microsoft.com/windows/win32/api/lmaccess/nf-lmaccess-netuseradd,
// nf-lmaccess-netuserdel). Both return a NET_API_STATUS.
var (
	netapi32       = windows.NewLazySystemDLL("netapi32.dll")
	procNetUserAdd = netapi32.NewProc("NetUserAdd")
	procNetUserDel = netapi32.NewProc("NetUserDel")
)

// userInfo1 is USER_INFO_1
// (learn.microsoft.com/windows/win32/api/lmaccess/ns-lmaccess-user_info_1).
type userInfo1 struct {
	name        *uint16
	password    *uint16
	passwordAge uint32
	priv        uint32
	homeDir     *uint16
	comment     *uint16
	flags       uint32
	scriptPath  *uint16
}

// USER_INFO_1 values: a normal user account (USER_PRIV_USER) whose
// password does not expire; the page says UF_SCRIPT must be set.
const (
	userPrivUser       = 1
	ufScript           = 0x0001
	ufNormalAccount    = 0x0200
	ufDontExpirePasswd = 0x10000
)

func netUserAdd(name string, password host.Secret) error {
	n, err := utf16Ptr("NetUserAdd", name)
	if err != nil {
		return err
	}
	pw, err := windows.UTF16FromString(password.Reveal())
	if err != nil {
		return fmt.Errorf("NetUserAdd: the password contains a NUL character: %w", host.ErrInvalid)
	}
	defer clear(pw)
	comment, _ := windows.UTF16PtrFromString("csi-windows-node selftest") // constant, no NUL
	info := userInfo1{name: n, password: &pw[0], priv: userPrivUser, comment: comment,
		flags: ufScript | ufNormalAccount | ufDontExpirePasswd}
	var parmErr uint32
	r, _, _ := procNetUserAdd.Call(0, 1, uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&parmErr)))
	if r != 0 {
		return netUserAddError(uint32(r), parmErr)
	}
	return nil
}

func netUserDel(name string) error {
	n, err := utf16Ptr("NetUserDel", name)
	if err != nil {
		return err
	}
	r, _, _ := procNetUserDel.Call(0, uintptr(unsafe.Pointer(n)))
	if r != 0 {
		return &winhost.Win32Error{Call: "NetUserDel", Code: uint32(r)}
	}
	return nil
}
