package winhost

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// How a failed host call reads, and what it means. This file is the only
// place where a Windows code gets a meaning.
//
// The rule, for every layer: the callee names the operation, the caller
// adds only what it alone knows.
//   - The executor's error names the call that failed and its code: a
//     *Win32Error ("SetVolumeMountPointW: win32 error 145
//     (ERROR_DIR_NOT_EMPTY)"), a *COMError ("ExecMethod MSFT_Disk.Online:
//     HRESULT 0x80041033") or, for a method that ran and returned non-zero,
//     a *MethodError ("MSFT_Disk.SetAttributes returned 41003 (the disk is
//     offline)").
//   - mapErr and methodError add the host sentinel the code means (errors.Is
//     works on both) and nothing else.
//   - Each method of this package wraps its failure once, naming what it
//     did and on what ("bring disk 3 online: …"); helpers it calls return
//     causes without naming the operation again.
//   - The caller (pkg/backend) does not repeat the operation; it adds what
//     only it knows: the volume, the staging path's role, the remedy.
//
// A failure arrives in one of five forms, and all of them are read here:
//   - a Win32 call's error code (*Win32Error): win32Codes;
//   - a method's non-zero ReturnValue (*MethodError): the table of the
//     class's provider (providerOf): the Storage Management API return
//     codes, the iSCSI statuses, or, for the SMB provider, Win32 codes;
//   - the HRESULT of a failed WMI call (*COMError): a status of the class's
//     provider (iSCSI), HRESULT_FROM_WIN32 of a Win32 code (0x8007xxxx), or
//     one of WMI's own failures (hresultCodes);
//   - WMI's extended error object of a failed call (COMError.ErrorObject),
//     which carries the provider's real status when the HRESULT is a
//     generic WBEM_E_FAILED (errorObjectStatus);
//   - a schema lookup that found nothing (COMError.Lookup with
//     WBEM_E_NOT_FOUND): host.ErrSchema, never host.ErrNotFound.

// Win32Error is a failed Win32 call.
type Win32Error struct {
	Call string // e.g. "SetVolumeMountPoint"
	Code uint32 // GetLastError / the returned errno
}

func (e *Win32Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Call, win32Code(e.Code))
}

// win32Code is a Win32 error code read out of another error (an HRESULT,
// an error object, a return value), named in the message.
type win32Code uint32

func (c win32Code) Error() string {
	return fmt.Sprintf("win32 error %d (%s)", uint32(c), win32Name(uint32(c)))
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
	// object asked for is gone (host.ErrSchema); any other failure of a
	// lookup means what it means on every call (access denied, the WMI
	// service restarting).
	Lookup string

	// ErrorObject is WMI's extended error object for the failed call (the
	// scripting API's SWbemLastError: an MSFT_WmiError from the Storage,
	// SMB and iSCSI providers, or an __ExtendedStatus from WMI itself),
	// read by the executor with every property, or nil when WMI kept none.
	// errorObjectStatus interprets it.
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

// codeInfo is the documented meaning of one code.
type codeInfo struct {
	msg string // the documented message, or the code's symbolic name
	// sentinel is what the code means to the plugin; nil leaves the
	// failure without a host meaning (an internal error).
	sentinel error
}

// codeTable maps the codes of one kind.
type codeTable map[uint32]codeInfo

// provider is what the numbers of one WMI provider's classes mean.
type provider struct {
	// returns: the methods' non-zero ReturnValue.
	returns codeTable
	// statuses: the provider's own statuses, reported as the HRESULT of a
	// failed call or in its extended error object instead of as a return
	// value.
	statuses codeTable
}

// providerOf returns the tables of a class's provider. A class without
// its own (MSFT_StorageSetting, or "" for a query, an association or a
// Win32 call) has the common Storage Management API codes and no
// statuses.
func providerOf(class string) provider {
	switch class {
	case classDisk:
		return provider{returns: diskCodes}
	case classPartition:
		return provider{returns: partitionCodes}
	case classVolume:
		return provider{returns: volumeCodes}
	case classTargetPortal, classTarget, classSession, classConnection, classInitiatorSession:
		return provider{returns: iscsiMethodCodes, statuses: iscsiCodes}
	case classSmbGlobalMapping, classSmbShare:
		// The SMB provider documents no return values (the
		// MSFT_SmbMapping.Create page lists none); failures are expected
		// as COM errors or in the error object. A non-zero value is read
		// as the Win32 code it most likely is.
		return provider{returns: win32Codes}
	}
	return provider{returns: commonCodes}
}

// methodError is the error for a non-zero return value of a method of
// class: a *MethodError with the value's documented message, wrapped
// together with the host sentinel the value means.
func methodError(class, method string, rv uint32) error {
	info := providerOf(class).returns[rv]
	me := &MethodError{Class: class, Method: method, ReturnValue: rv, Message: info.msg}
	if info.sentinel == nil {
		return me
	}
	return fmt.Errorf("%w: %w", me, info.sentinel)
}

// mapErr gives an executor error of a call on class ("" for a Win32 call
// or when no class's provider is involved) the host meaning its code has,
// so that errors.Is works on the sentinel and on the original error alike.
// Errors without a code (context errors, host sentinels from the executor
// such as host.ErrBusy, property errors) pass through unchanged, and so do
// codes without a meaning.
func mapErr(class string, err error) error {
	var we *Win32Error
	if errors.As(err, &we) {
		// A provider's own Win32 API reports its statuses as the code
		// (iscsidsc's ISDSC_STATUS: ReportIScsiPersistentLoginsW).
		if info, ok := providerOf(class).statuses[we.Code]; ok {
			if info.sentinel == nil {
				return fmt.Errorf("%w (%s)", err, info.msg)
			}
			return fmt.Errorf("%w (%s): %w", err, info.msg, info.sentinel)
		}
		return withSentinel(err, win32Codes[we.Code].sentinel)
	}
	var ce *COMError
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.Lookup != "" && ce.HResult == hrWbemNotFound:
		// The class, method or parameter is not there, which says
		// nothing about the object the call was for.
		return withSentinel(err, host.ErrSchema)
	case ConnectionLost(ce.HResult):
		// Whatever the error object says: it is not this call's.
		return withSentinel(err, hresultCodes[ce.HResult].sentinel)
	}
	st := errorObjectStatus(ce.ErrorObject)
	if ce.Lookup == "" {
		statuses := providerOf(class).statuses
		info, ok := statuses[ce.HResult]
		if !ok && st.hasHR {
			info, ok = statuses[st.hresult]
		}
		if ok {
			if info.sentinel == nil {
				return fmt.Errorf("%w (%s)", err, info.msg)
			}
			return fmt.Errorf("%w (%s): %w", err, info.msg, info.sentinel)
		}
	}
	if code, ok := win32FromHResult(ce.HResult); ok {
		return withWin32(err, code)
	}
	if st.hasW32 {
		return withWin32(err, st.win32)
	}
	return withSentinel(err, hresultCodes[ce.HResult].sentinel)
}

// mapHostErr is mapErr for a call that involves no class's provider: a
// Win32 call, a query or an association.
func mapHostErr(err error) error { return mapErr("", err) }

func withSentinel(err, sentinel error) error {
	if sentinel == nil {
		return err
	}
	return fmt.Errorf("%w: %w", err, sentinel)
}

// withWin32 adds a Win32 code found in a COM failure: named, with its
// sentinel. A code without a meaning leaves err unchanged.
func withWin32(err error, code uint32) error {
	s := win32Codes[code].sentinel
	if s == nil {
		return err
	}
	return fmt.Errorf("%w: %w: %w", err, win32Code(code), s)
}

// ConnectionLost reports whether a COM failure with this HRESULT means
// that the connection to the WMI service is gone: the service restarted
// or is shutting down, or the RPC channel to it broke. Such a failure is
// host.ErrNotReady on every path (retry later), and the executor drops
// the connection so that the next call reconnects instead of failing
// forever on a dead proxy. Seen while winmgmt restarts: RPC_E_DISCONNECTED
// and RPC_S_SERVER_UNAVAILABLE (uncertain which one a given Windows
// answers; docs/windows.md lists the experiment).
func ConnectionLost(hr uint32) bool {
	switch hr {
	case hrRPCDisconnected, hrWbemShuttingDown, hrWbemTransportFailure,
		hrRPCServerUnavailable, hrRPCCallFailed, hrRPCCallFailedDNE:
		return true
	}
	return false
}

// isCode reports whether err is a *Win32Error with one of the codes.
func isCode(err error, codes ...uint32) bool {
	var we *Win32Error
	if !errors.As(err, &we) {
		return false
	}
	for _, c := range codes {
		if we.Code == c {
			return true
		}
	}
	return false
}

// Well-known Win32 error codes (winerror.h).
const (
	ErrorInvalidFunction           = 1
	ErrorFileNotFound              = 2
	ErrorPathNotFound              = 3
	ErrorAccessDenied              = 5
	ErrorInvalidHandle             = 6
	ErrorWriteProtect              = 19
	ErrorNotReady                  = 21
	ErrorSharingViolation          = 32
	ErrorNotSupported              = 50
	ErrorBadNetpath                = 53
	ErrorNetworkAccessDenied       = 65
	ErrorBadNetName                = 67
	ErrorFileExists                = 80
	ErrorInvalidParameter          = 87
	ErrorDirNotEmpty               = 145
	ErrorAlreadyExists             = 183
	ErrorDirectory                 = 267
	ErrorSessionCredentialConflict = 1219
	ErrorSMBGuestLogonBlocked      = 1272
	ErrorLogonFailure              = 1326
	ErrorPrivilegeNotHeld          = 1314
	ErrorNotAReparsePoint          = 4390
	ErrorServiceAlreadyRunning     = 1056
	ErrorServiceDisabled           = 1058
	ErrorServiceDoesNotExist       = 1060
	NerrUserNotFound               = 2221 // NET_API_STATUS (lmerr.h), in the same code space
	NerrUserExists                 = 2224
	NerrPasswordTooShort           = 2245 // also: the password policy refused it
	NerrNetNameNotFound            = 2310 // no such share
	RPCServerUnavailable           = 1722 // RPC_S_SERVER_UNAVAILABLE
	RPCCallFailed                  = 1726 // RPC_S_CALL_FAILED
	RPCCallFailedDNE               = 1727 // RPC_S_CALL_FAILED_DNE
)

// win32Codes are the Win32 error codes the plugin names, with what they
// mean to it (System Error Codes,
// learn.microsoft.com/windows/win32/debug/system-error-codes--0-499,
// --1000-1299, --1300-1699, --1700-3999, --4000-5999). The network and
// account codes are the ones the SMB client reports for mappings and for
// paths reached through them (the csi-driver-smb and csi-proxy issues
// cited); they mean the same wherever they come from.
var win32Codes = codeTable{
	ErrorInvalidFunction:     {"ERROR_INVALID_FUNCTION", nil},
	ErrorFileNotFound:        {"ERROR_FILE_NOT_FOUND", host.ErrNotFound},
	ErrorPathNotFound:        {"ERROR_PATH_NOT_FOUND", host.ErrNotFound},
	ErrorAccessDenied:        {"ERROR_ACCESS_DENIED", host.ErrAccessDenied},
	ErrorInvalidHandle:       {"ERROR_INVALID_HANDLE", nil},
	ErrorWriteProtect:        {"ERROR_WRITE_PROTECT", host.ErrReadOnly},
	ErrorNotReady:            {"ERROR_NOT_READY", host.ErrNotReady},
	ErrorSharingViolation:    {"ERROR_SHARING_VIOLATION", host.ErrInUse},
	ErrorNotSupported:        {"ERROR_NOT_SUPPORTED", nil},
	51:                       {"ERROR_REM_NOT_LIST", host.ErrUnreachable},
	ErrorBadNetpath:          {"ERROR_BAD_NETPATH", host.ErrUnreachable}, // "The network path was not found" (csi-driver-smb #294)
	59:                       {"ERROR_UNEXP_NET_ERR", host.ErrUnreachable},
	64:                       {"ERROR_NETNAME_DELETED", host.ErrUnreachable},
	ErrorNetworkAccessDenied: {"ERROR_NETWORK_ACCESS_DENIED", host.ErrAccessDenied},
	ErrorBadNetName:          {"ERROR_BAD_NET_NAME", host.ErrNotFound}, // the share does not exist on the server
	ErrorFileExists:          {"ERROR_FILE_EXISTS", host.ErrAlreadyExists},
	85:                       {"ERROR_ALREADY_ASSIGNED", host.ErrAlreadyExists},
	86:                       {"ERROR_INVALID_PASSWORD", host.ErrLogonFailure},
	ErrorInvalidParameter:    {"ERROR_INVALID_PARAMETER", host.ErrInvalid},
	121:                      {"ERROR_SEM_TIMEOUT", host.ErrUnreachable},
	ErrorDirNotEmpty:         {"ERROR_DIR_NOT_EMPTY", host.ErrDirNotEmpty},
	ErrorAlreadyExists:       {"ERROR_ALREADY_EXISTS", host.ErrAlreadyExists},
	ErrorDirectory:           {"ERROR_DIRECTORY", nil},
	1202:                     {"ERROR_DEVICE_ALREADY_REMEMBERED", host.ErrAlreadyExists},
	// "Multiple connections to a server or shared resource by the same
	// user, using more than one user name, are not allowed"
	// (csi-driver-smb #219).
	ErrorSessionCredentialConflict: {"ERROR_SESSION_CREDENTIAL_CONFLICT", host.ErrCredentialConflict},
	// "You can't access this shared folder because your organization's
	// security policies block unauthenticated guest access": the SMB
	// client's policy, which refuses insecure guest logons by default
	// since Windows Server 2019
	// (https://learn.microsoft.com/windows-server/storage/file-server/enable-insecure-guest-logons-smb2-and-smb3).
	ErrorSMBGuestLogonBlocked: {"ERROR_SMB_GUEST_LOGON_BLOCKED", host.ErrGuestLogonBlocked},
	1222:                      {"ERROR_NO_NETWORK", host.ErrUnreachable},
	1231:                      {"ERROR_NETWORK_UNREACHABLE", host.ErrUnreachable},
	1232:                      {"ERROR_HOST_UNREACHABLE", host.ErrUnreachable},
	1311:                      {"ERROR_NO_LOGON_SERVERS", host.ErrUnreachable},
	// Account problems are logon failures the user must fix in the secret
	// or the directory (csi-proxy #206: a blocked account looked like a
	// generic failure). "A specified logon session does not exist" (1312):
	// csi-driver-smb known-issues.md #1 says the user name lacked a domain
	// (DOMAIN\user).
	1312:                  {"ERROR_NO_SUCH_LOGON_SESSION", host.ErrLogonFailure},
	ErrorPrivilegeNotHeld: {"ERROR_PRIVILEGE_NOT_HELD", host.ErrAccessDenied},
	ErrorLogonFailure:     {"ERROR_LOGON_FAILURE", host.ErrLogonFailure},
	1327:                  {"ERROR_ACCOUNT_RESTRICTION", host.ErrLogonFailure},
	1330:                  {"ERROR_PASSWORD_EXPIRED", host.ErrLogonFailure},
	1331:                  {"ERROR_ACCOUNT_DISABLED", host.ErrLogonFailure},
	1909:                  {"ERROR_ACCOUNT_LOCKED_OUT", host.ErrLogonFailure},
	// The RPC server behind the call (the WMI service, a provider host)
	// went away or is restarting: retry later.
	RPCServerUnavailable: {"RPC_S_SERVER_UNAVAILABLE", host.ErrNotReady},
	RPCCallFailed:        {"RPC_S_CALL_FAILED", host.ErrNotReady},
	RPCCallFailedDNE:     {"RPC_S_CALL_FAILED_DNE", host.ErrNotReady},
	2250:                 {"ERROR_NOT_CONNECTED", host.ErrNotFound}, // "This network connection does not exist"
	// What DeleteVolumeMountPoint answers for a directory that is not a
	// mount point.
	ErrorNotAReparsePoint: {"ERROR_NOT_A_REPARSE_POINT", host.ErrNotFound},
	// The operator's calls (preflight, selftest): the service control
	// manager's answers (StartService and OpenService pages), the account
	// lookup's, and netapi32's NET_API_STATUS values (Network Management
	// Error Codes, learn.microsoft.com/windows/win32/netmgmt/network-management-error-codes).
	ErrorServiceAlreadyRunning: {"ERROR_SERVICE_ALREADY_RUNNING", nil},
	ErrorServiceDisabled:       {"ERROR_SERVICE_DISABLED", host.ErrConflict},
	ErrorServiceDoesNotExist:   {"ERROR_SERVICE_DOES_NOT_EXIST", host.ErrNotFound},
	NerrUserNotFound:           {"NERR_UserNotFound", host.ErrNotFound},
	NerrUserExists:             {"NERR_UserExists", host.ErrAlreadyExists},
	NerrPasswordTooShort:       {"NERR_PasswordTooShort", host.ErrInvalid},
	NerrNetNameNotFound:        {"NERR_NetNameNotFound", host.ErrNotFound},
}

func win32Name(code uint32) string {
	if info, ok := win32Codes[code]; ok {
		return info.msg
	}
	return "unknown"
}

// HRESULTs of WMI infrastructure failures the plugin gives a meaning to
// (WBEMSTATUS, learn.microsoft.com/windows/win32/api/wbemcli/ne-wbemcli-wbemstatus;
// E_ACCESSDENIED, RPC_E_DISCONNECTED and the RPC errors from winerror.h as
// HRESULTs).
const (
	hrWbemNotFound            = 0x80041002 // WBEM_E_NOT_FOUND: the object no longer exists (or, in a lookup, the schema lacks it)
	hrWbemAccessDenied        = 0x80041003 // WBEM_E_ACCESS_DENIED
	hrWbemInvalidParameter    = 0x80041008 // WBEM_E_INVALID_PARAMETER
	hrWbemInvalidNamespace    = 0x8004100E // WBEM_E_INVALID_NAMESPACE
	hrWbemInvalidClass        = 0x80041010 // WBEM_E_INVALID_CLASS
	hrWbemTransportFailure    = 0x80041015 // WBEM_E_TRANSPORT_FAILURE
	hrWbemInvalidMethod       = 0x8004102E // WBEM_E_INVALID_METHOD
	hrWbemInvalidMethodParams = 0x8004102F // WBEM_E_INVALID_METHOD_PARAMETERS
	hrWbemShuttingDown        = 0x80041033 // WBEM_E_SHUTTING_DOWN: the WMI service is stopping
	hrRPCDisconnected         = 0x80010108 // RPC_E_DISCONNECTED: the object invoked has disconnected from its clients
	hrAccessDenied            = 0x80070005 // E_ACCESSDENIED
	hrRPCServerUnavailable    = 0x800706BA // HRESULT_FROM_WIN32(RPC_S_SERVER_UNAVAILABLE): the WMI service is restarting
	hrRPCCallFailed           = 0x800706BE // HRESULT_FROM_WIN32(RPC_S_CALL_FAILED): the call broke off with the service
	hrRPCCallFailedDNE        = 0x800706BF // HRESULT_FROM_WIN32(RPC_S_CALL_FAILED_DNE)
)

// hresultCodes give WMI's own failures the same meaning on every path
// (storage, SMB, iSCSI). WBEM_E_NOT_FOUND is the object's absence; a
// schema lookup's is told apart by mapErr.
var hresultCodes = codeTable{
	hrWbemNotFound:            {"WBEM_E_NOT_FOUND", host.ErrNotFound},
	hrWbemAccessDenied:        {"WBEM_E_ACCESS_DENIED", host.ErrAccessDenied},
	hrAccessDenied:            {"E_ACCESSDENIED", host.ErrAccessDenied},
	hrWbemInvalidParameter:    {"WBEM_E_INVALID_PARAMETER", host.ErrInvalid},
	hrWbemTransportFailure:    {"WBEM_E_TRANSPORT_FAILURE", host.ErrNotReady},
	hrWbemShuttingDown:        {"WBEM_E_SHUTTING_DOWN", host.ErrNotReady},
	hrRPCDisconnected:         {"RPC_E_DISCONNECTED", host.ErrNotReady},
	hrRPCServerUnavailable:    {"RPC_S_SERVER_UNAVAILABLE", host.ErrNotReady},
	hrRPCCallFailed:           {"RPC_S_CALL_FAILED", host.ErrNotReady},
	hrRPCCallFailedDNE:        {"RPC_S_CALL_FAILED_DNE", host.ErrNotReady},
	hrWbemInvalidNamespace:    {"WBEM_E_INVALID_NAMESPACE", host.ErrSchema},
	hrWbemInvalidClass:        {"WBEM_E_INVALID_CLASS", host.ErrSchema},
	hrWbemInvalidMethod:       {"WBEM_E_INVALID_METHOD", host.ErrSchema},
	hrWbemInvalidMethodParams: {"WBEM_E_INVALID_METHOD_PARAMETERS", host.ErrSchema},
}

// Return values of the Windows Storage Management API methods (the MSFT_*
// classes in Root\Microsoft\Windows\Storage), with their documented message
// and the host sentinel each one means to the plugin.
//
// Sources, all under learn.microsoft.com/windows-hardware/drivers/storage/
// (checked against the MicrosoftDocs/windows-driver-docs sources):
//   - storage-management-api-common-return-codes ("common page"): the
//     standard CIM codes 0-8, the extended CIM codes 4096-4099 and the
//     ranges 40000 (common), 41000 (disk), 42000 (partition), 43000 (volume);
//   - the method pages of the methods the plugin calls: msft-disk-online,
//     msft-disk-offline, msft-disk-setattributes, initialize-msft-disk,
//     createpartition-msft-disk, msft-partition-getsupportedsizes,
//     msft-partition-resize, format-msft-volume,
//     msft-storagesetting-updatehoststoragecache (which documents no return
//     values; only the common codes apply).
//
// Where the two disagree the method page wins for that class: the method
// pages give the Failover Clustering code as 41018 for MSFT_Disk methods and
// 40018 for MSFT_Volume.Format, the common page lists only 40018; both are
// kept. Codes 41015, 41016 and 41017 appear only on the CreatePartition page.
// Every entry below is on one of those pages.

// Standard and extended CIM codes and the common 40000 range (common page).
var commonCodes = codeTable{
	1:    {"not supported", nil},
	2:    {"unspecified error", nil},
	3:    {"timeout", host.ErrNotReady},
	4:    {"failed", nil},
	5:    {"invalid parameter", host.ErrInvalid},
	6:    {"in use", host.ErrInUse},
	7:    {"this command is not supported on x86 running in x64 environment", nil},
	8:    {"object not found", host.ErrNotFound},
	4096: {"method parameters checked - job started", nil}, // the plugin never asks for a job
	4097: {"size not supported", host.ErrOutOfRange},
	4098: {"timeout not supported", nil},
	4099: {"the device is busy", host.ErrInUse},

	40000: {"not enough available capacity", host.ErrOutOfRange},
	40001: {"access denied", host.ErrAccessDenied},
	40002: {"there are not enough resources to complete the operation", host.ErrNotReady},
	40003: {"cache out of date", host.ErrNotReady},
	40004: {"an unexpected I/O error has occurred", nil},
	40005: {"you must specify a size by using either the Size or the UseMaximumSize parameter", host.ErrInvalid},
	40006: {"the object or object type requested does not exist in cache", host.ErrNotFound},
	40007: {"the request failed due to a fatal device hardware error", nil},
	40018: {"the object is managed by the Microsoft Failover Clustering component", host.ErrConflict},
}

// MSFT_Disk: the 41000 range (common page; 41015-41018 from the
// CreatePartition, Online, Offline, SetAttributes and Initialize pages) and
// the partition codes CreatePartition documents.
var diskCodes = withCommon(codeTable{
	6:     {"disk is in use", host.ErrInUse},
	41000: {"the disk has not been initialized", host.ErrConflict},
	41001: {"the disk has already been initialized", host.ErrAlreadyExists},
	41002: {"the disk is read only", host.ErrReadOnly},
	41003: {"the disk is offline", host.ErrNotReady},
	41004: {"the disk's partition limit has been reached", host.ErrConflict},
	41005: {"the specified partition alignment is not valid", host.ErrInvalid},
	41006: {"a parameter is not valid for this type of partition", host.ErrInvalid},
	41007: {"cannot clear with OEM partitions present", host.ErrConflict},
	41008: {"cannot clear with data partitions present", host.ErrConflict},
	41009: {"operation not supported on a critical disk", host.ErrConflict},
	41010: {"the specified partition type is not valid", host.ErrInvalid},
	41011: {"only the first 2 TB are usable on MBR disks", host.ErrOutOfRange},
	41012: {"the specified offset is not valid", host.ErrInvalid},
	41013: {"cannot convert the style of a disk with data or other known partitions on it", host.ErrConflict},
	41014: {"the disk is not large enough to support a GPT partition style", host.ErrOutOfRange},
	41015: {"there is no media in the device", host.ErrNotReady},
	41016: {"the specified offset is not valid", host.ErrInvalid},
	41017: {"the specified partition layout is invalid", host.ErrConflict},
	41018: {"the object is managed by the Microsoft Failover Clustering component", host.ErrConflict},
	42002: {"the requested access path is already in use", host.ErrAlreadyExists},
	42004: {"cannot assign access paths to hidden partitions", host.ErrInvalid},
	42007: {"the access path is not valid", host.ErrInvalid},
})

// MSFT_Partition: the 42000 range (common page; GetSupportedSize and Resize
// document 4097, 42008 and 42009).
var partitionCodes = withCommon(codeTable{
	42000: {"the partition was deleted, although its access paths were not", nil},
	42001: {"the extended partition still contains other partitions", host.ErrConflict},
	42002: {"the requested access path is already in use", host.ErrAlreadyExists},
	42004: {"cannot assign access paths to hidden partitions", host.ErrInvalid},
	42005: {"cannot remove a volume GUID path", host.ErrInvalid},
	42006: {"cannot remove the drive letter of a boot or paging file partition", host.ErrConflict},
	42007: {"the access path is not valid", host.ErrInvalid},
	42008: {"cannot shrink a partition containing a volume with errors", host.ErrConflict},
	42009: {"cannot resize a partition containing an unknown file system", host.ErrConflict},
	42010: {"the operation is not allowed on a system or critical partition", host.ErrConflict},
	42011: {"this operation is only supported on data partitions", host.ErrConflict},
	42012: {"cannot assign multiple drive letters to a partition", host.ErrInvalid},
	42013: {"cannot assign drive letter to this type of partition", host.ErrInvalid},
})

// MSFT_Volume: the 43000 range (common page) and the codes Format documents
// (42010, 43000-43006).
var volumeCodes = withCommon(codeTable{
	42010: {"the operation is not allowed on a system or critical partition", host.ErrConflict},
	43000: {"the specified cluster size is invalid", host.ErrInvalid},
	43001: {"the specified file system is not supported", host.ErrInvalid},
	43002: {"the volume cannot be quick formatted", host.ErrConflict},
	43003: {"the number of clusters exceeds 32 bits", host.ErrOutOfRange},
	43004: {"the specified UDF version is not supported", host.ErrInvalid},
	43005: {"the cluster size must be a multiple of the disk's physical sector size", host.ErrInvalid},
	43006: {"cannot perform the requested operation when the drive is read only", host.ErrReadOnly},
	43007: {"the repair failed", nil},
	43008: {"the scan failed", nil},
	43009: {"a snapshot error occurred while scanning this drive", nil},
	43010: {"a scan is already running on this drive", host.ErrInUse},
	43011: {"a snapshot error occurred while scanning this drive", nil},
	43012: {"a snapshot error occurred while scanning this drive", nil},
	43013: {"cannot open drive for direct access", host.ErrInUse},
	43014: {"cannot determine the file system of the drive", nil},
	43015: {"this setting may not be changed due to the group policy setting", host.ErrAccessDenied},
	43016: {"this setting may not be changed due to the global registry setting", host.ErrAccessDenied},
})

// Class names of the Storage Management API the disk path uses.
const (
	classDisk           = "MSFT_Disk"
	classPartition      = "MSFT_Partition"
	classVolume         = "MSFT_Volume"
	classStorageSetting = "MSFT_StorageSetting"
	assocPartToVolume   = "MSFT_PartitionToVolume"
)

func withCommon(t codeTable) codeTable {
	out := make(codeTable, len(commonCodes)+len(t))
	for k, v := range commonCodes {
		out[k] = v
	}
	for k, v := range t {
		out[k] = v
	}
	return out
}

// The iSCSI initiator's classes: the iSCSI statuses and the common codes.
var iscsiMethodCodes = withCommon(iscsiCodes)

// iscsiCodes are the iSCSI discovery status codes (ISDSC_STATUS, iscsierr.h)
// the plugin gives a meaning to, with their documented message. Sources:
// iscsierr.h and the ISCSI_STATUS_QUALIFIERS table
// (learn.microsoft.com/windows-hardware/drivers/storage/iscsi-status-qualifiers).
//
// Uncertain: how the MSFT_iSCSI* methods report them. PowerShell shows an
// iSCSI failure as "HRESULT 0xefff0009" in the FullyQualifiedErrorId, which
// suggests the provider fails the call with the status as its error code
// (a COMError here) rather than returning it as ReturnValue; both are
// mapped (provider.returns, provider.statuses), and so is the status in
// the error object of a generic WBEM_E_FAILED.
var iscsiCodes = codeTable{
	0xEFFF0002: {"login failed", host.ErrLogonFailure},                                                // ISDSC_LOGIN_FAILED
	0xEFFF0003: {"connection failed", host.ErrUnreachable},                                            // ISDSC_CONNECTION_FAILED
	0xEFFF0009: {"authentication failure", host.ErrLogonFailure},                                      // ISDSC_AUTHENTICATION_FAILURE
	0xEFFF000A: {"authorization failure", host.ErrAccessDenied},                                       // ISDSC_AUTHORIZATION_FAILURE
	0xEFFF000B: {"not found", host.ErrNotFound},                                                       // ISDSC_NOT_FOUND
	0xEFFF000C: {"target removed", host.ErrNotFound},                                                  // ISDSC_TARGET_REMOVED
	0xEFFF0013: {"service unavailable", host.ErrUnreachable},                                          // ISDSC_SERVICE_UNAVAILABLE
	0xEFFF0016: {"session already exists", host.ErrAlreadyExists},                                     // ISDSC_SESSION_ALREADY_EXISTS
	0xEFFF0018: {"target already exists", host.ErrAlreadyExists},                                      // ISDSC_TARGET_ALREADY_EXISTS
	0xEFFF001C: {"invalid session id", host.ErrNotFound},                                              // ISDSC_INVALID_SESSION_ID
	0xEFFF001F: {"session is busy since a request is already in progress", host.ErrBusy},              // ISDSC_SESSION_BUSY
	0xEFFF0022: {"logon failed", host.ErrLogonFailure},                                                // ISDSC_LOGON_FAILED
	0xEFFF0023: {"TCP send failed", host.ErrUnreachable},                                              // ISDSC_SEND_FAILED
	0xEFFF0024: {"TCP transport error", host.ErrUnreachable},                                          // ISDSC_TRANSPORT_ERROR
	0xEFFF0029: {"the target name is not found or is marked as hidden from login", host.ErrNotFound},  // ISDSC_TARGET_NOT_FOUND
	0xEFFF002A: {"a login parameter is invalid", host.ErrInvalid},                                     // ISDSC_LOGIN_USER_INFO_BAD
	0xEFFF0032: {"target portal structure already exists", host.ErrAlreadyExists},                     // ISDSC_TARGET_PORTAL_ALREADY_EXISTS
	0xEFFF0039: {"the initiator service did not respond", host.ErrNotReady},                           // ISDSC_SERVICE_DID_NOT_RESPOND
	0xEFFF003C: {"there is no target portal available to complete the login", host.ErrNotFound},       // ISDSC_NO_PORTAL_SPECIFIED
	0xEFFF003E: {"the Microsoft iSCSI Initiator Service is not running", host.ErrNotReady},            // ISDSC_SERVICE_NOT_RUNNING
	0xEFFF003F: {"the target has already been logged in via an iSCSI session", host.ErrAlreadyExists}, // ISDSC_TARGET_ALREADY_LOGGED_IN
	0xEFFF0040: {"a device on the session is in use", host.ErrInUse},                                  // ISDSC_DEVICE_BUSY_ON_SESSION
	0xEFFF0043: {"the specified portal was not found", host.ErrNotFound},                              // ISDSC_PORTAL_NOT_FOUND
	0xEFFF004A: {"the CHAP secret does not conform to the standard", host.ErrInvalid},                 // ISDSC_INVALID_CHAP_SECRET
	0xEFFF004B: {"the target CHAP secret is invalid (12 to 16 bytes)", host.ErrInvalid},               // ISDSC_INVALID_TARGET_CHAP_SECRET
	0xEFFF004C: {"the initiator CHAP secret is invalid (12 to 16 bytes)", host.ErrInvalid},            // ISDSC_INVALID_INITIATOR_CHAP_SECRET
	0xEFFF004D: {"the CHAP user name is invalid", host.ErrInvalid},                                    // ISDSC_INVALID_CHAP_USER_NAME
	0xEFFF004E: {"the logon authentication type is invalid", host.ErrInvalid},                         // ISDSC_INVALID_LOGON_AUTH_TYPE
	0xEFFF0051: {"the iSCSI name contains invalid characters or is too long", host.ErrInvalid},        // ISDSC_INVALID_ISCSI_NAME
	0xEFFF0056: {"a parameter is not valid", host.ErrInvalid},                                         // ISDSC_INVALID_PARAMETER
	0xEFFF005E: {"the device is not from an iSCSI disk or a persistent login", host.ErrNotFound},      // ISDSC_DEVICE_NOT_ISCSI_OR_PERSISTENT
	0xEFFF005F: {"the DNS name was not resolved", host.ErrUnreachable},                                // ISDSC_DNS_NAME_UNRESOLVED
	0xEFFF0068: {"the name could not be resolved to an IP address", host.ErrUnreachable},              // ISDSC_INVALID_HOST
	0xEFFF0041: {"failed to save persistent login information", nil},                                  // ISDSC_COULD_NOT_SAVE_PERSISTENT_LOGIN_DATA
	0xEFFF0042: {"failed to remove persistent login information", nil},                                // ISDSC_COULD_NOT_REMOVE_PERSISTENT_LOGIN_DATA
	0xEFFF0001: {"a non specific error occurred", nil},                                                // ISDSC_NON_SPECIFIC_ERROR
}

// The numeric status of a failed WMI call, read out of WMI's extended
// error object.
//
// A provider can report a failure three ways through the scripting API
// the executor uses, and which one the SMB and iSCSI providers use is not
// documented: as the method's ReturnValue, as the HRESULT of the failed
// call (SMB: HRESULT_FROM_WIN32(code); iSCSI: the ISDSC status), or as a
// generic HRESULT such as WBEM_E_FAILED with the real status only in WMI's
// extended error object. That object (SWbemLastError,
// learn.microsoft.com/windows/win32/wmisdk/swbemlasterror) is, for the
// MI-based Storage, SMB and iSCSI providers, an MSFT_WmiError
// (learn.microsoft.com/previous-versions/windows/desktop/ramgmtpsprov/msft-wmierror:
// CIM_Error's MessageID plus error_Code, error_Type and error_Category),
// and for WMI's own failures an __ExtendedStatus (StatusCode). The
// executor hands the object over as it read it (COMError.ErrorObject);
// the functions below read the numbers out of it, so the 1219, logon and
// CHAP tables apply whichever way a failure arrives.
//
// How MSFT_SmbGlobalMapping.Create reports failures is not documented
// either. What is known: PowerShell shows them as a CimException whose
// FullyQualifiedErrorId is "Windows System Error <code>" (1219 in
// kubernetes-csi/csi-driver-smb#219, 87 in kubernetes-csi/csi-proxy#206,
// 53 in kubernetes-csi/csi-driver-smb#294), that is an MSFT_WmiError of the
// Win32 type posted by the provider (MI_Context_PostError with
// MI_RESULT_TYPE_WIN32).
//
// Sources for the shapes read:
//   - error_Type is the result type the provider posted with
//     MI_Context_PostError: "MI", "HRESULT" or "WIN32"
//     (learn.microsoft.com/windows/win32/api/mi/nf-mi-mi_context_posterror);
//     error_Code is the code of that type.
//   - MessageID is what PowerShell shows as the FullyQualifiedErrorId of a
//     CIM cmdlet's error (PowerShell/PowerShell,
//     src/Microsoft.PowerShell.Commands.Management/cimSupport/cmdletization/cim/CimJobException.cs:
//     errorId = cimException.MessageId): "Windows System Error 1219" for
//     New-SmbGlobalMapping and "HRESULT 0xefff0029" for Connect-IscsiTarget
//     (as PowerShell prints iSCSI failures; uncertain: not seen in a public
//     issue of a project we cite, only in public build notes).
//
// Uncertain: whether the scripting API's error object for an MI provider
// carries error_Code and error_Type, or only MessageID; both are read.

// wmiStatus is the numeric status found in a failed call.
type wmiStatus struct {
	win32   uint32 // a Win32 error code, when one was found
	hresult uint32 // an HRESULT (or ISDSC status), when one was found
	hasW32  bool
	hasHR   bool
}

// errorObjectStatus reads the status out of WMI's extended error object.
func errorObjectStatus(obj *Instance) wmiStatus {
	var st wmiStatus
	if obj == nil {
		return st
	}
	if code, ok := uintProp(obj.Props["error_Code"]); ok {
		switch typ, _ := obj.Props["error_Type"].(string); strings.ToUpper(strings.TrimSpace(typ)) {
		case "WIN32":
			st.win32, st.hasW32 = code, true
		case "HRESULT":
			st.hresult, st.hasHR = code, true
		}
	}
	if id, ok := obj.Props["MessageID"].(string); ok && !st.hasW32 && !st.hasHR {
		st = parseMessageID(id)
	}
	if !st.hasHR && !st.hasW32 {
		// __ExtendedStatus: WMI's own status (a WBEMSTATUS HRESULT).
		if code, ok := uintProp(obj.Props["StatusCode"]); ok && code != 0 {
			st.hresult, st.hasHR = code, true
		}
	}
	if st.hasHR && !st.hasW32 {
		if w, ok := win32FromHResult(st.hresult); ok {
			st.win32, st.hasW32 = w, true
		}
	}
	return st
}

// parseMessageID reads "Windows System Error <n>" and "HRESULT 0x<hex>"
// (the forms PowerShell shows as FullyQualifiedErrorId, see above).
func parseMessageID(id string) wmiStatus {
	var st wmiStatus
	id = strings.TrimSpace(id)
	if rest, ok := cutPrefixFold(id, "Windows System Error "); ok {
		if n, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 32); err == nil {
			st.win32, st.hasW32 = uint32(n), true
		}
		return st
	}
	if rest, ok := cutPrefixFold(id, "HRESULT "); ok {
		rest = strings.TrimSpace(rest)
		if h, ok := cutPrefixFold(rest, "0x"); ok {
			if n, err := strconv.ParseUint(h, 16, 32); err == nil {
				st.hresult, st.hasHR = uint32(n), true
			}
		}
	}
	return st
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// uintProp reads a 32-bit status property as the executor converts it
// (an int64; a CIM uint32 of 2^31 or more arrives as its unsigned value,
// and a status typed sint32 as a negative number whose 32 bits are the
// code).
func uintProp(v any) (uint32, bool) {
	n, ok := v.(int64)
	if !ok || n < -1<<31 || n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

// win32FromHResult returns the Win32 code of an HRESULT_FROM_WIN32
// (0x8007xxxx).
func win32FromHResult(hr uint32) (uint32, bool) {
	if hr>>16 == 0x8007 {
		return hr & 0xFFFF, true
	}
	return 0, false
}

// errorObjectMessage is the human-readable text of an extended error
// object: its Message (CIM_Error) or Description (__ExtendedStatus).
func errorObjectMessage(obj *Instance) string {
	if obj == nil {
		return ""
	}
	for _, p := range []string{"Message", "Description", "error_WindowsErrorMessage"} {
		if s, ok := obj.Props[p].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
