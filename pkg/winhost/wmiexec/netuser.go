package wmiexec

import (
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// NetUserAdd's parm_err
// (https://learn.microsoft.com/en-us/windows/win32/api/lmaccess/nf-lmaccess-netuseradd)
// is, when the call returns ERROR_INVALID_PARAMETER, the index of the
// first member of the user information structure that is invalid. The
// indexes are the USER_*_PARMNUM values of lmaccess.h (Windows SDK), whose
// members the NetUserSetInfo page names
// (https://learn.microsoft.com/en-us/windows/win32/api/lmaccess/nf-lmaccess-netusersetinfo);
// these are USER_INFO_1's, the level the executor passes. They live
// outside the Windows-only files so that a test checks them on every OS.
var userInfo1Members = map[uint32]string{
	1: "usri1_name",         // USER_NAME_PARMNUM
	3: "usri1_password",     // USER_PASSWORD_PARMNUM
	4: "usri1_password_age", // USER_PASSWORD_AGE_PARMNUM
	5: "usri1_priv",         // USER_PRIV_PARMNUM
	6: "usri1_home_dir",     // USER_HOME_DIR_PARMNUM
	7: "usri1_comment",      // USER_COMMENT_PARMNUM
	8: "usri1_flags",        // USER_FLAGS_PARMNUM
	9: "usri1_script_path",  // USER_SCRIPT_PATH_PARMNUM
}

// userInfo1Member names the USER_INFO_1 member parm_err points at.
func userInfo1Member(parmErr uint32) string {
	if m, ok := userInfo1Members[parmErr]; ok {
		return m
	}
	return fmt.Sprintf("an unknown member (parm_err %d)", parmErr)
}

// netUserAddError is the error of a NetUserAdd that returned code (a
// NET_API_STATUS) with parmErr: for ERROR_INVALID_PARAMETER it names the
// member Windows refused, never its value (one of them is the password).
func netUserAddError(code, parmErr uint32) error {
	err := &winhost.Win32Error{Call: "NetUserAdd", Code: code}
	if code != winhost.ErrorInvalidParameter || parmErr == 0 {
		return err
	}
	return fmt.Errorf("%w: USER_INFO_1 member %s is invalid", err, userInfo1Member(parmErr))
}
