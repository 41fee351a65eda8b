package winhost

import (
	"errors"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// sentinelForWin32 maps a Win32 error code onto the host sentinel it means.
// Codes without a clear meaning for the plugin map to nil (an internal error).
func sentinelForWin32(code uint32) error {
	switch code {
	case ErrorFileNotFound, ErrorPathNotFound, ErrorBadNetName:
		return host.ErrNotFound
	case ErrorAccessDenied, ErrorNetworkAccessDenied, ErrorPrivilegeNotHeld:
		return host.ErrAccessDenied
	case ErrorNotReady:
		return host.ErrNotReady
	case ErrorSharingViolation:
		return host.ErrInUse
	case ErrorBadNetpath:
		return host.ErrUnreachable
	case ErrorFileExists, ErrorAlreadyExists:
		return host.ErrAlreadyExists
	case ErrorInvalidParameter:
		return host.ErrInvalid
	case ErrorDirNotEmpty:
		return host.ErrDirNotEmpty
	case ErrorSessionCredentialConflict:
		return host.ErrCredentialConflict
	case ErrorLogonFailure:
		return host.ErrLogonFailure
	case ErrorNotAReparsePoint:
		return host.ErrNotFound
	}
	return nil
}

// mapWin32 wraps a *Win32Error with the host sentinel its code means, so
// that errors.Is works on both; other errors pass through.
func mapWin32(err error) error {
	var we *Win32Error
	if errors.As(err, &we) {
		if s := sentinelForWin32(we.Code); s != nil {
			return fmt.Errorf("%w: %w", err, s)
		}
	}
	return err
}

// HRESULTs of WMI infrastructure failures the plugin gives a meaning to
// (WBEMSTATUS, learn.microsoft.com/windows/win32/api/wbemcli/ne-wbemcli-wbemstatus;
// E_ACCESSDENIED and RPC_S_SERVER_UNAVAILABLE from winerror.h as HRESULTs).
const (
	hrWbemNotFound         = 0x80041002 // WBEM_E_NOT_FOUND: the object no longer exists
	hrWbemAccessDenied     = 0x80041003 // WBEM_E_ACCESS_DENIED
	hrWbemInvalidParameter = 0x80041008 // WBEM_E_INVALID_PARAMETER
	hrWbemTransportFailure = 0x80041015 // WBEM_E_TRANSPORT_FAILURE
	hrAccessDenied         = 0x80070005 // E_ACCESSDENIED
	hrRPCServerUnavailable = 0x800706BA // HRESULT_FROM_WIN32(RPC_S_SERVER_UNAVAILABLE): the WMI service is restarting
)

// sentinelForHResult maps a COM/WMI failure onto a host sentinel, or nil.
func sentinelForHResult(hr uint32) error {
	switch hr {
	case hrWbemNotFound:
		return host.ErrNotFound
	case hrWbemAccessDenied, hrAccessDenied:
		return host.ErrAccessDenied
	case hrWbemInvalidParameter:
		return host.ErrInvalid
	case hrWbemTransportFailure, hrRPCServerUnavailable:
		return host.ErrNotReady
	}
	return nil
}

// mapHostErr wraps a *Win32Error or *COMError with the host sentinel its
// code means, so that errors.Is works on both; other errors (context
// errors, host sentinels from the executor such as host.ErrBusy) pass
// through unchanged.
func mapHostErr(err error) error {
	var ce *COMError
	if errors.As(err, &ce) {
		if s := sentinelForHResult(ce.HResult); s != nil {
			return fmt.Errorf("%w: %w", err, s)
		}
		return err
	}
	return mapWin32(err)
}
