package winhost

import (
	"strconv"
	"strings"
)

// The numeric status of a failed WMI call.
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
// the functions here read the numbers out of it, so the 1219, logon and
// CHAP tables apply whichever way a failure arrives.
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
//     New-SmbGlobalMapping (kubernetes-csi/csi-driver-smb#219; 87 in
//     kubernetes-csi/csi-proxy#206, 53 in kubernetes-csi/csi-driver-smb#294)
//     and "HRESULT 0xefff0029" for Connect-IscsiTarget (as PowerShell
//     prints iSCSI failures; uncertain: not seen in a public issue of a
//     project we cite, only in public build notes).
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
