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
	case ErrorWriteProtect:
		return host.ErrReadOnly
	case RPCServerUnavailable, RPCCallFailed, RPCCallFailedDNE:
		// The RPC server behind the call (the WMI service, a provider
		// host) went away or is restarting: retry later.
		return host.ErrNotReady
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
// E_ACCESSDENIED and the RPC errors from winerror.h as HRESULTs).
const (
	hrWbemNotFound            = 0x80041002 // WBEM_E_NOT_FOUND: the object no longer exists (or, in a lookup, the schema lacks it)
	hrWbemAccessDenied        = 0x80041003 // WBEM_E_ACCESS_DENIED
	hrWbemInvalidParameter    = 0x80041008 // WBEM_E_INVALID_PARAMETER
	hrWbemInvalidNamespace    = 0x8004100E // WBEM_E_INVALID_NAMESPACE
	hrWbemInvalidClass        = 0x80041010 // WBEM_E_INVALID_CLASS
	hrWbemTransportFailure    = 0x80041015 // WBEM_E_TRANSPORT_FAILURE
	hrWbemInvalidMethod       = 0x8004102E // WBEM_E_INVALID_METHOD
	hrWbemInvalidMethodParams = 0x8004102F // WBEM_E_INVALID_METHOD_PARAMETERS
	hrAccessDenied            = 0x80070005 // E_ACCESSDENIED
	hrRPCServerUnavailable    = 0x800706BA // HRESULT_FROM_WIN32(RPC_S_SERVER_UNAVAILABLE): the WMI service is restarting
	hrRPCCallFailed           = 0x800706BE // HRESULT_FROM_WIN32(RPC_S_CALL_FAILED): the call broke off with the service
	hrRPCCallFailedDNE        = 0x800706BF // HRESULT_FROM_WIN32(RPC_S_CALL_FAILED_DNE)
)

// sentinelForHResult maps a COM/WMI failure onto a host sentinel, or nil.
// It gives every path (storage, SMB, iSCSI) the same meaning for the
// failures of WMI itself. WBEM_E_NOT_FOUND is the object's absence; a
// schema lookup's WBEM_E_NOT_FOUND is told apart by mapHostErr.
func sentinelForHResult(hr uint32) error {
	switch hr {
	case hrWbemNotFound:
		return host.ErrNotFound
	case hrWbemAccessDenied, hrAccessDenied:
		return host.ErrAccessDenied
	case hrWbemInvalidParameter:
		return host.ErrInvalid
	case hrWbemTransportFailure, hrRPCServerUnavailable, hrRPCCallFailed, hrRPCCallFailedDNE:
		return host.ErrNotReady
	case hrWbemInvalidNamespace, hrWbemInvalidClass, hrWbemInvalidMethod, hrWbemInvalidMethodParams:
		return host.ErrSchema
	}
	return nil
}

// mapHostErr wraps a *Win32Error or *COMError with the host sentinel its
// code means, so that errors.Is works on both; other errors (context
// errors, host sentinels from the executor such as host.ErrBusy) pass
// through unchanged. A COM failure met while the executor looked up the
// schema (COMError.Lookup) is host.ErrSchema whatever its HRESULT: the
// class, method or parameter is not there, which says nothing about the
// object the call was for.
func mapHostErr(err error) error {
	var ce *COMError
	if errors.As(err, &ce) {
		if ce.Lookup != "" {
			return fmt.Errorf("%w: %w", err, host.ErrSchema)
		}
		if s := sentinelForHResult(ce.HResult); s != nil {
			return fmt.Errorf("%w: %w", err, s)
		}
		return err
	}
	return mapWin32(err)
}
