package wmiexec

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	ole "github.com/go-ole/go-ole"
	"github.com/go-ole/go-ole/oleutil"
	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// VARIANT ↔ Go conversion.
//
// Reading follows winhost.Instance: VT_BSTR → string, VT_BOOL → bool, every
// integer type → int64, VT_R4/VT_R8 → float64, VT_NULL/VT_EMPTY → nil,
// arrays → []any, VT_DISPATCH (an embedded SWbemObject) → winhost.Instance.
// The scripting API hands CIM uint32 over as VT_I4 ("Numbers (WMI)",
// https://learn.microsoft.com/windows/win32/wmisdk/numbers), so a value of
// 2^31 or more would read as negative; the property's CIMType tells the
// executor to read those 32 bits as unsigned. Other types (VT_DATE,
// VT_UNKNOWN, VT_BYREF…) do not occur in WMI replies and are reported as
// errors rather than guessed at.
//
// Writing follows the same table, the automation types WMI itself uses for
// each CIM type, so the provider receives what it would send: uint8 →
// VT_UI1; int8, int16 → VT_I2; uint16, int32, uint32 → VT_I4 (uint32 as its
// 32 bits); int64, uint64 → VT_BSTR in decimal (CIM 64-bit integers travel
// as strings); float32 → VT_R4; float64 → VT_R8; string → VT_BSTR; bool →
// VT_BOOL; []string → VT_ARRAY|VT_VARIANT of VT_BSTR (the array form
// VBScript passes). go-ole's own conversion is not used for parameters
// because it sends uint8 as VT_I1 and uint16/uint32 as VT_UI2/VT_UI4.

// CIM types of SWbemProperty.CIMType (WbemCimtypeEnum, wbemdisp.h).
const (
	cimTypeUint32 = 19 // wbemCimtypeUint32
	cimTypeNone   = 0
)

// maxObjectDepth bounds the nesting of embedded objects read.
const maxObjectDepth = 8

var (
	modoleaut32               = windows.NewLazySystemDLL("oleaut32.dll")
	procSafeArrayGetVartype   = modoleaut32.NewProc("SafeArrayGetVartype")
	procSafeArrayGetDim       = modoleaut32.NewProc("SafeArrayGetDim")
	procSafeArrayGetLBound    = modoleaut32.NewProc("SafeArrayGetLBound")
	procSafeArrayGetUBound    = modoleaut32.NewProc("SafeArrayGetUBound")
	procSafeArrayGetElement   = modoleaut32.NewProc("SafeArrayGetElement")
	procSafeArrayCreateVector = modoleaut32.NewProc("SafeArrayCreateVector")
	procSafeArrayPutElement   = modoleaut32.NewProc("SafeArrayPutElement")
	procSafeArrayDestroy      = modoleaut32.NewProc("SafeArrayDestroy")
)

func hresultErr(op string, hr uintptr) error {
	return &winhost.COMError{Op: op, HResult: uint32(hr)}
}

// fromVariant converts a VARIANT the executor does not own (the caller
// clears it). cimType is the CIM type of the property it came from, or 0.
func fromVariant(v *ole.VARIANT, cimType int32, depth int) (any, error) {
	if v.VT&ole.VT_BYREF != 0 {
		return nil, fmt.Errorf("unsupported VARIANT type %#x (by reference)", uint16(v.VT))
	}
	if v.VT&ole.VT_ARRAY != 0 {
		return fromSafeArray(uintptr(v.Val), cimType, depth)
	}
	switch v.VT {
	case ole.VT_EMPTY, ole.VT_NULL:
		return nil, nil
	case ole.VT_BSTR:
		return v.ToString(), nil
	case ole.VT_BOOL:
		return int16(v.Val) != 0, nil // VARIANT_BOOL: 16 bits, VARIANT_TRUE is -1
	case ole.VT_I1:
		return int64(int8(v.Val)), nil
	case ole.VT_I2:
		return int64(int16(v.Val)), nil
	case ole.VT_I4, ole.VT_INT:
		if cimType == cimTypeUint32 {
			return int64(uint32(v.Val)), nil
		}
		return int64(int32(v.Val)), nil
	case ole.VT_I8:
		return v.Val, nil
	case ole.VT_UI1:
		return int64(uint8(v.Val)), nil
	case ole.VT_UI2:
		return int64(uint16(v.Val)), nil
	case ole.VT_UI4, ole.VT_UINT:
		return int64(uint32(v.Val)), nil
	case ole.VT_UI8:
		if v.Val < 0 {
			return nil, fmt.Errorf("VT_UI8 value %d does not fit an int64", uint64(v.Val))
		}
		return v.Val, nil
	case ole.VT_R4:
		return float64(math.Float32frombits(uint32(v.Val))), nil
	case ole.VT_R8:
		return math.Float64frombits(uint64(v.Val)), nil
	case ole.VT_DISPATCH:
		d := v.ToIDispatch()
		if d == nil {
			return nil, nil
		}
		if depth >= maxObjectDepth {
			return nil, fmt.Errorf("embedded objects nested deeper than %d", maxObjectDepth)
		}
		return readObject(d, depth+1)
	}
	return nil, fmt.Errorf("unsupported VARIANT type %#x", uint16(v.VT))
}

// fromSafeArray converts a one-dimensional SAFEARRAY. Each element is read
// into a VARIANT (its value bytes for typed arrays, the whole VARIANT for
// VT_VARIANT arrays), converted, and cleared: SafeArrayGetElement copies
// BSTRs and AddRefs interfaces, so the copy is the executor's to free.
func fromSafeArray(sa uintptr, cimType int32, depth int) (any, error) {
	if sa == 0 {
		return nil, nil
	}
	if dims, _, _ := procSafeArrayGetDim.Call(sa); dims != 1 {
		return nil, fmt.Errorf("unsupported SAFEARRAY with %d dimensions", dims)
	}
	var vt uint16
	if hr, _, _ := procSafeArrayGetVartype.Call(sa, uintptr(unsafe.Pointer(&vt))); hr != 0 {
		return nil, hresultErr("SafeArrayGetVartype", hr)
	}
	switch ole.VT(vt) {
	case ole.VT_VARIANT, ole.VT_BSTR, ole.VT_BOOL, ole.VT_DISPATCH,
		ole.VT_I1, ole.VT_I2, ole.VT_I4, ole.VT_I8, ole.VT_INT,
		ole.VT_UI1, ole.VT_UI2, ole.VT_UI4, ole.VT_UI8, ole.VT_UINT,
		ole.VT_R4, ole.VT_R8:
	default:
		return nil, fmt.Errorf("unsupported SAFEARRAY element type %#x", vt)
	}
	var lo, hi int32
	if hr, _, _ := procSafeArrayGetLBound.Call(sa, 1, uintptr(unsafe.Pointer(&lo))); hr != 0 {
		return nil, hresultErr("SafeArrayGetLBound", hr)
	}
	if hr, _, _ := procSafeArrayGetUBound.Call(sa, 1, uintptr(unsafe.Pointer(&hi))); hr != 0 {
		return nil, hresultErr("SafeArrayGetUBound", hr)
	}
	out := make([]any, 0, max(0, int(hi)-int(lo)+1))
	for i := lo; i <= hi; i++ {
		var elem ole.VARIANT
		var dst unsafe.Pointer
		if ole.VT(vt) == ole.VT_VARIANT {
			dst = unsafe.Pointer(&elem)
		} else {
			elem.VT = ole.VT(vt)
			dst = unsafe.Pointer(&elem.Val)
		}
		idx := i
		if hr, _, _ := procSafeArrayGetElement.Call(sa, uintptr(unsafe.Pointer(&idx)), uintptr(dst)); hr != 0 {
			return nil, hresultErr("SafeArrayGetElement", hr)
		}
		val, err := fromVariant(&elem, cimType, depth)
		clearErr := ole.VariantClear(&elem)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i-lo, err)
		}
		if clearErr != nil {
			return nil, fmt.Errorf("element %d: VariantClear: %w", i-lo, clearErr)
		}
		out = append(out, val)
	}
	return out, nil
}

// toVariant converts a parameter value into a VARIANT the caller owns and
// must clear with ole.VariantClear.
func toVariant(v any) (ole.VARIANT, error) {
	switch x := v.(type) {
	case string:
		return bstrVariant(x), nil
	case bool:
		if x {
			return ole.NewVariant(ole.VT_BOOL, 0xffff), nil // VARIANT_TRUE
		}
		return ole.NewVariant(ole.VT_BOOL, 0), nil
	case uint8:
		return ole.NewVariant(ole.VT_UI1, int64(x)), nil
	case int8:
		return ole.NewVariant(ole.VT_I2, int64(x)), nil
	case int16:
		return ole.NewVariant(ole.VT_I2, int64(x)), nil
	case uint16:
		return ole.NewVariant(ole.VT_I4, int64(x)), nil
	case int32:
		return ole.NewVariant(ole.VT_I4, int64(x)), nil
	case uint32:
		return ole.NewVariant(ole.VT_I4, int64(int32(x))), nil
	case int64:
		return bstrVariant(strconv.FormatInt(x, 10)), nil
	case uint64:
		return bstrVariant(strconv.FormatUint(x, 10)), nil
	case float32:
		return ole.NewVariant(ole.VT_R4, int64(math.Float32bits(x))), nil
	case float64:
		return ole.NewVariant(ole.VT_R8, int64(math.Float64bits(x))), nil
	case []string:
		return stringArrayVariant(x)
	}
	return ole.VARIANT{}, fmt.Errorf("unsupported parameter type %T", v)
}

func bstrVariant(s string) ole.VARIANT {
	return ole.NewVariant(ole.VT_BSTR, int64(uintptr(unsafe.Pointer(ole.SysAllocStringLen(s)))))
}

// stringArrayVariant builds a VT_ARRAY|VT_VARIANT holding VT_BSTRs.
func stringArrayVariant(ss []string) (ole.VARIANT, error) {
	sa, _, _ := procSafeArrayCreateVector.Call(uintptr(ole.VT_VARIANT), 0, uintptr(len(ss)))
	if sa == 0 {
		return ole.VARIANT{}, errors.New("SafeArrayCreateVector failed")
	}
	for i, s := range ss {
		elem := bstrVariant(s)
		idx := int32(i)
		// SafeArrayPutElement copies the VARIANT (VariantCopy), so the
		// temporary is cleared either way.
		hr, _, _ := procSafeArrayPutElement.Call(sa, uintptr(unsafe.Pointer(&idx)), uintptr(unsafe.Pointer(&elem)))
		clearErr := ole.VariantClear(&elem)
		if hr != 0 || clearErr != nil {
			if r, _, _ := procSafeArrayDestroy.Call(sa); r != 0 {
				return ole.VARIANT{}, fmt.Errorf("SafeArrayPutElement: %w; SafeArrayDestroy: %w", hresultErr("SafeArrayPutElement", hr), hresultErr("SafeArrayDestroy", r))
			}
			if hr != 0 {
				return ole.VARIANT{}, hresultErr("SafeArrayPutElement", hr)
			}
			return ole.VARIANT{}, fmt.Errorf("VariantClear: %w", clearErr)
		}
	}
	return ole.NewVariant(ole.VT_ARRAY|ole.VT_VARIANT, int64(sa)), nil
}

// dispParams and excepInfo are DISPPARAMS and EXCEPINFO (oaidl.h); go-ole's
// types of those names keep their fields unexported.
//
// The two arrays of DISPPARAMS are typed pointers, not uintptr: the garbage
// collector sees them, keeps what they point at alive and, were the
// objects on a goroutine stack that moves, adjusts them with it. A Go
// address kept as an integer is none of that (rule 4 of unsafe.Pointer
// covers only a conversion written in the call's own argument list,
// golang/go src/unsafe/unsafe.go). syscall.StartupInfo passes its strings
// to CreateProcess the same way (golang/go src/syscall/types_windows.go).
type dispParams struct {
	rgvarg            *ole.VARIANT
	rgdispidNamedArgs *int32
	cArgs             uint32
	cNamedArgs        uint32
}

type excepInfo struct {
	wCode             uint16
	wReserved         uint16
	bstrSource        *uint16
	bstrDescription   *uint16
	bstrHelpFile      *uint16
	dwHelpContext     uint32
	pvReserved        uintptr
	pfnDeferredFillIn uintptr
	scode             int32
}

// putVariant sets a property through IDispatch::Invoke(DISPATCH_PROPERTYPUT)
// with the VARIANT exactly as built, which go-ole's PutProperty cannot do.
func putVariant(disp *ole.IDispatch, name string, v *ole.VARIANT) error {
	dispid, err := disp.GetSingleIDOfName(name)
	if err != nil {
		return err
	}
	lcid := ole.GetUserDefaultLCID()
	invoke := disp.VTable().Invoke
	named := int32(ole.DISPID_PROPERTYPUT)
	params := dispParams{rgvarg: v, rgdispidNamedArgs: &named, cArgs: 1, cNamedArgs: 1}
	var ex excepInfo
	// params, named and ex may live on this goroutine's stack (escape
	// analysis keeps them there). Only their addresses written in the
	// argument list below become integers, which unsafe.Pointer's rule 4
	// allows: the compiler keeps them alive and in place until SyscallN
	// returns. The addresses inside params are typed pointers (dispParams).
	hr, _, _ := syscall.SyscallN(invoke,
		uintptr(unsafe.Pointer(disp)),
		uintptr(dispid),
		uintptr(unsafe.Pointer(ole.IID_NULL)),
		uintptr(lcid),
		uintptr(ole.DISPATCH_PROPERTYPUT),
		uintptr(unsafe.Pointer(&params)),
		0, // no result for a property put
		uintptr(unsafe.Pointer(&ex)),
		0)
	runtime.KeepAlive(v)
	runtime.KeepAlive(&params)
	desc := ""
	if ex.bstrDescription != nil {
		desc = windows.UTF16PtrToString(ex.bstrDescription)
	}
	for _, b := range []*uint16{ex.bstrSource, ex.bstrDescription, ex.bstrHelpFile} {
		if b != nil {
			// SysFreeString returns nothing useful (it is void in
			// oleauto.h); go-ole reports only a failed call.
			_ = ole.SysFreeString((*int16)(unsafe.Pointer(b)))
		}
	}
	if hr != 0 {
		code := uint32(hr)
		if code == dispEException && ex.scode != 0 {
			code = uint32(ex.scode)
		}
		return &winhost.COMError{Op: "put " + name, HResult: code, Detail: desc}
	}
	return nil
}

// getProperty reads a property of an automation object into a VARIANT the
// caller must clear.
func getProperty(d *ole.IDispatch, name string) (*ole.VARIANT, error) {
	return oleutil.GetProperty(d, name)
}

// dispatchOf returns the IDispatch in v, or an error naming what was read.
func dispatchOf(v *ole.VARIANT, what string) (*ole.IDispatch, error) {
	d := v.ToIDispatch()
	if d == nil {
		return nil, fmt.Errorf("%s: got VARIANT type %#x, want an object", what, uint16(v.VT))
	}
	return d, nil
}
