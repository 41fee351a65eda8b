package wmiexec

import (
	"errors"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// TestNetUserAddError: an ERROR_INVALID_PARAMETER names the USER_INFO_1
// member of parm_err (the USER_*_PARMNUM values of lmaccess.h) and stays
// NetUserAdd's Win32Error; other codes, and a parm_err of 0, name none.
func TestNetUserAddError(t *testing.T) {
	for _, tc := range []struct {
		code, parmErr uint32
		want          string // in the message; "" for no member
	}{
		{winhost.ErrorInvalidParameter, 1, "USER_INFO_1 member usri1_name is invalid"},
		{winhost.ErrorInvalidParameter, 3, "member usri1_password is invalid"},
		{winhost.ErrorInvalidParameter, 4, "member usri1_password_age is"},
		{winhost.ErrorInvalidParameter, 5, "member usri1_priv is"},
		{winhost.ErrorInvalidParameter, 6, "member usri1_home_dir is"},
		{winhost.ErrorInvalidParameter, 7, "member usri1_comment is"},
		{winhost.ErrorInvalidParameter, 8, "member usri1_flags is"},
		{winhost.ErrorInvalidParameter, 9, "member usri1_script_path is"},
		{winhost.ErrorInvalidParameter, 2, "an unknown member (parm_err 2)"},
		{winhost.ErrorInvalidParameter, 0, ""},
		{winhost.ErrorAccessDenied, 3, ""},
	} {
		err := netUserAddError(tc.code, tc.parmErr)
		var w *winhost.Win32Error
		if !errors.As(err, &w) || w.Code != tc.code || w.Call != "NetUserAdd" {
			t.Errorf("%d/%d: %v is not NetUserAdd's Win32Error", tc.code, tc.parmErr, err)
		}
		if tc.want == "" {
			if strings.Contains(err.Error(), "member") {
				t.Errorf("%d/%d: %q names a member", tc.code, tc.parmErr, err)
			}
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d/%d: %q, want it to contain %q", tc.code, tc.parmErr, err, tc.want)
		}
	}
}
