package winhost

import (
	"fmt"
	"strconv"
)

// Win32Error is a failed Win32 call.
type Win32Error struct {
	Call string // e.g. "SetVolumeMountPoint"
	Code uint32 // GetLastError / the returned errno
}

func (e *Win32Error) Error() string {
	return fmt.Sprintf("%s: win32 error %d (%s)", e.Call, e.Code, win32Name(e.Code))
}

// COMError is a failed COM or WMI infrastructure call (an HRESULT such as
// WBEM_E_NOT_FOUND), as opposed to a method that ran and returned non-zero.
type COMError struct {
	Op      string // e.g. "ExecQuery", "ExecMethod MSFT_Disk.Online"
	HResult uint32
	Detail  string // the provider's description, when there is one

	// Lookup is set when the call failed while the executor looked up the
	// WMI schema rather than an object: the class definition
	// (LookupClass), the method (LookupMethod) or one of its input
	// parameters (LookupParameter). A WBEM_E_NOT_FOUND from a lookup means
	// the class, method or parameter does not exist, never that the
	// object asked for is gone (see ErrSchema).
	Lookup string

	// ErrorObject is WMI's extended error object for the failed call (the
	// scripting API's SWbemLastError: an MSFT_WmiError from the Storage,
	// SMB and iSCSI providers, or an __ExtendedStatus from WMI itself),
	// read by the executor with every property, or nil when WMI kept none.
	// wmistatus.go interprets it.
	ErrorObject *Instance
}

// Schema lookups a COMError can name (COMError.Lookup).
const (
	LookupClass     = "class"
	LookupMethod    = "method"
	LookupParameter = "parameter"
)

func (e *COMError) Error() string {
	s := fmt.Sprintf("%s: HRESULT 0x%08X", e.Op, e.HResult)
	if e.Lookup != "" {
		s += " looking up the " + e.Lookup
	}
	detail := e.Detail
	if m := errorObjectMessage(e.ErrorObject); m != "" && m != detail {
		if detail != "" {
			detail += "; "
		}
		detail += m
	}
	if detail != "" {
		s += " (" + detail + ")"
	}
	return s
}

// MethodError is a WMI method that ran and returned a non-zero value.
type MethodError struct {
	Class       string
	Method      string
	ReturnValue uint32
	// Message is the meaning of ReturnValue when it is documented.
	Message string
}

func (e *MethodError) Error() string {
	s := e.Class + "." + e.Method + " returned " + strconv.FormatUint(uint64(e.ReturnValue), 10)
	if e.Message != "" {
		s += " (" + e.Message + ")"
	}
	return s
}

// Well-known Win32 error codes (winerror.h).
const (
	ErrorFileNotFound              = 2
	ErrorPathNotFound              = 3
	ErrorAccessDenied              = 5
	ErrorInvalidHandle             = 6
	ErrorNotReady                  = 21
	ErrorSharingViolation          = 32
	ErrorBadNetpath                = 53
	ErrorNetworkAccessDenied       = 65
	ErrorBadNetName                = 67
	ErrorFileExists                = 80
	ErrorInvalidParameter          = 87
	ErrorDirNotEmpty               = 145
	ErrorAlreadyExists             = 183
	ErrorInvalidFunction           = 1
	ErrorNotAReparsePoint          = 4390
	ErrorSessionCredentialConflict = 1219
	ErrorLogonFailure              = 1326
	ErrorDirectory                 = 267
	ErrorNotSupported              = 50
	ErrorPrivilegeNotHeld          = 1314
	ErrorWriteProtect              = 19
	RPCServerUnavailable           = 1722 // RPC_S_SERVER_UNAVAILABLE
	RPCCallFailed                  = 1726 // RPC_S_CALL_FAILED
	RPCCallFailedDNE               = 1727 // RPC_S_CALL_FAILED_DNE
)

func win32Name(code uint32) string {
	switch code {
	case ErrorInvalidFunction:
		return "ERROR_INVALID_FUNCTION"
	case ErrorFileNotFound:
		return "ERROR_FILE_NOT_FOUND"
	case ErrorPathNotFound:
		return "ERROR_PATH_NOT_FOUND"
	case ErrorAccessDenied:
		return "ERROR_ACCESS_DENIED"
	case ErrorInvalidHandle:
		return "ERROR_INVALID_HANDLE"
	case ErrorNotReady:
		return "ERROR_NOT_READY"
	case ErrorSharingViolation:
		return "ERROR_SHARING_VIOLATION"
	case ErrorBadNetpath:
		return "ERROR_BAD_NETPATH"
	case ErrorNetworkAccessDenied:
		return "ERROR_NETWORK_ACCESS_DENIED"
	case ErrorBadNetName:
		return "ERROR_BAD_NET_NAME"
	case ErrorFileExists:
		return "ERROR_FILE_EXISTS"
	case ErrorInvalidParameter:
		return "ERROR_INVALID_PARAMETER"
	case ErrorDirNotEmpty:
		return "ERROR_DIR_NOT_EMPTY"
	case ErrorAlreadyExists:
		return "ERROR_ALREADY_EXISTS"
	case ErrorDirectory:
		return "ERROR_DIRECTORY"
	case ErrorSessionCredentialConflict:
		return "ERROR_SESSION_CREDENTIAL_CONFLICT"
	case ErrorLogonFailure:
		return "ERROR_LOGON_FAILURE"
	case ErrorNotAReparsePoint:
		return "ERROR_NOT_A_REPARSE_POINT"
	case ErrorNotSupported:
		return "ERROR_NOT_SUPPORTED"
	case ErrorPrivilegeNotHeld:
		return "ERROR_PRIVILEGE_NOT_HELD"
	case ErrorWriteProtect:
		return "ERROR_WRITE_PROTECT"
	case RPCServerUnavailable:
		return "RPC_S_SERVER_UNAVAILABLE"
	case RPCCallFailed:
		return "RPC_S_CALL_FAILED"
	case RPCCallFailedDNE:
		return "RPC_S_CALL_FAILED_DNE"
	}
	return "unknown"
}
