package wmiexec

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	ole "github.com/go-ole/go-ole"
	"github.com/go-ole/go-ole/oleutil"
	cim "github.com/microsoft/wmi/pkg/wmiinstance"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/comworker"
)

// HRESULTs and flags (winerror.h, wbemcli.h, wbemdisp.h).
const (
	sFalse                 = 0x00000001
	rpcETooLate            = 0x80010119 // CoInitializeSecurity already called
	dispEException         = 0x80020009
	wbemFlagReturnImmediat = 0x10 // wbemFlagReturnImmediately
	wbemFlagForwardOnly    = 0x20
)

// COM security for the whole process, set once before the first WMI
// connection: packet privacy and impersonation, as microsoft/wmi's session
// manager (microsoft/wmi v0.43.0 pkg/wmiinstance) and csi-proxy
// (kubernetes-csi/csi-proxy@eeba470 pkg/wmi/wmi.go) do. Packet privacy encrypts the
// calls that carry secrets (SMB credentials, CHAP secrets) between the
// plugin and the WMI service.
var (
	securityOnce sync.Once
	securityErr  error
)

func initSecurity() error {
	err := cim.CoInitializeSecurity(cim.RPC_C_AUTHN_LEVEL_PKT_PRIVACY, cim.RPC_C_IMP_LEVEL_IMPERSONATE)
	if err == nil {
		return nil
	}
	code, _ := hresultOf(err)
	if code == rpcETooLate {
		// Security was set already, by this process's COM runtime or
		// another component; the per-connection settings below still
		// ask for packet privacy.
		return nil
	}
	return &winhost.COMError{Op: "CoInitializeSecurity", HResult: code}
}

// comThread is one COM worker's state, used only on its own thread: the
// SWbemLocator, one SWbemServices per namespace and the class definitions
// fetched, all created lazily and kept for the worker's life.
type comThread struct {
	note    func(comworker.Op)
	locator *ole.IDispatch
	conns   map[string]*cim.WmiSession // namespace → connection
	classes map[string]*ole.VARIANT    // namespace + "\x00" + class → class object
}

// newCOMThread initialises COM on the calling (locked) thread in the
// multithreaded apartment, sets process security once, and creates the
// locator. It connects to nothing yet.
func newCOMThread(note func(comworker.Op)) (*comThread, error) {
	if err := ole.CoInitializeEx(0, ole.COINIT_MULTITHREADED); err != nil {
		// S_FALSE: already initialised on this thread; it must still be
		// balanced by CoUninitialize.
		if code, _ := hresultOf(err); code != sFalse {
			return nil, comError("CoInitializeEx", err)
		}
	}
	securityOnce.Do(func() { securityErr = initSecurity() })
	if securityErr != nil {
		ole.CoUninitialize()
		return nil, securityErr
	}
	unk, err := oleutil.CreateObject("WbemScripting.SWbemLocator")
	if err != nil {
		ole.CoUninitialize()
		return nil, comError("CreateObject SWbemLocator", err)
	}
	loc, err := unk.QueryInterface(cim.IID_ISWbemLocator)
	unk.Release()
	if err != nil {
		ole.CoUninitialize()
		return nil, comError("QueryInterface ISWbemLocator", err)
	}
	return &comThread{
		note:    note,
		locator: loc,
		conns:   map[string]*cim.WmiSession{},
		classes: map[string]*ole.VARIANT{},
	}, nil
}

// close releases every object the thread holds and uninitialises COM, on
// the worker's own thread.
func (t *comThread) close() {
	for ns := range t.conns {
		t.dropConn(ns)
	}
	t.locator.Release()
	ole.CoUninitialize()
}

// service returns the namespace's SWbemServices, connecting on first use.
// cim.WmiSession.Connect calls SWbemLocator.ConnectServer for the local
// machine and sets the connection's Security_ to impersonate and packet
// privacy.
func (t *comThread) service(ns string) (*ole.IDispatch, error) {
	if s := t.conns[ns]; s != nil {
		return s.Session, nil
	}
	t.note(comworker.Op{Kind: kindWMI, Name: "ConnectServer " + ns})
	s, err := cim.CreateSession(t.locator, ns, "", "", "", "")
	if err != nil {
		return nil, fmt.Errorf("ConnectServer %s: %w", ns, err)
	}
	if _, err := s.Connect(); err != nil {
		if s.RawSession != nil {
			s.Close()
		}
		return nil, comError("ConnectServer "+ns, err)
	}
	t.conns[ns] = s
	return s.Session, nil
}

// dropConn forgets a namespace's connection and class objects, so that the
// next call reconnects.
func (t *comThread) dropConn(ns string) {
	if s := t.conns[ns]; s != nil {
		s.Close()
		delete(t.conns, ns)
	}
	for k, v := range t.classes {
		if strings.HasPrefix(k, ns+"\x00") {
			clearVariant(v)
			delete(t.classes, k)
		}
	}
}

// failed converts a COM failure, with WMI's extended error object, and
// drops the connection when the failure means the connection to WMI is
// gone (winhost.ConnectionLost: a restarted or stopping winmgmt, a broken
// RPC channel), so that the next call reconnects instead of failing
// forever on a dead proxy. The failed call is not retried here; winhost
// reads it as host.ErrNotReady.
func (t *comThread) failed(ns, op string, err error) error {
	if code, ok := hresultOf(err); ok && winhost.ConnectionLost(code) {
		t.dropConn(ns)
	}
	return withErrorObject(comError(op, err))
}

// lookupFailed is failed for a schema lookup (a class definition, a
// method, an input parameter), marking the error as such
// (winhost.COMError.Lookup). What the failure means is winhost's to say:
// only a lookup that found nothing is host.ErrSchema.
func (t *comThread) lookupFailed(ns, lookup, op string, err error) error {
	err = t.failed(ns, op, err)
	var ce *winhost.COMError
	if errors.As(err, &ce) {
		ce.Lookup = lookup
	}
	return err
}

// class returns the class object (SWbemServices.Get), cached.
func (t *comThread) class(svc *ole.IDispatch, ns, class string) (*ole.IDispatch, error) {
	key := ns + "\x00" + class
	if v := t.classes[key]; v != nil {
		return v.ToIDispatch(), nil
	}
	t.note(comworker.Op{Kind: kindWMI, Name: "Get " + class})
	v, err := oleutil.CallMethod(svc, "Get", class)
	if err != nil {
		return nil, t.lookupFailed(ns, winhost.LookupClass, "Get "+class, err)
	}
	d, err := dispatchOf(v, "Get "+class)
	if err != nil {
		clearVariant(v)
		return nil, err
	}
	t.classes[key] = v
	return d, nil
}

// query runs SWbemServices.ExecQuery, semisynchronous and forward-only (the
// flags WMI recommends for enumerations read once), and reads every
// instance.
func (t *comThread) query(ns, wql string) ([]winhost.Instance, error) {
	svc, err := t.service(ns)
	if err != nil {
		return nil, err
	}
	set, err := oleutil.CallMethod(svc, "ExecQuery", wql, "WQL", int32(wbemFlagReturnImmediat|wbemFlagForwardOnly))
	if err != nil {
		return nil, t.failed(ns, "ExecQuery", err)
	}
	defer clearVariant(set)
	out, err := readSet(set, "ExecQuery")
	if err != nil {
		return nil, t.failed(ns, "ExecQuery", err)
	}
	return out, nil
}

// associators runs SWbemServices.AssociatorsOf(path, assocClass,
// resultClass); an empty class means no restriction, as in the method's
// defaults.
func (t *comThread) associators(ns, path, assocClass, resultClass string) ([]winhost.Instance, error) {
	svc, err := t.service(ns)
	if err != nil {
		return nil, err
	}
	set, err := oleutil.CallMethod(svc, "AssociatorsOf", path, assocClass, resultClass)
	if err != nil {
		return nil, t.failed(ns, "AssociatorsOf", err)
	}
	defer clearVariant(set)
	out, err := readSet(set, "AssociatorsOf")
	if err != nil {
		return nil, t.failed(ns, "AssociatorsOf", err)
	}
	return out, nil
}

// call runs SWbemServices.ExecMethod(path, method, inParams): on the
// instance at m.Path, or on the class for a static method. The input
// parameters are an instance spawned from the method's InParameters with
// only the supplied values set; with none supplied no object is passed.
func (t *comThread) call(ns string, m winhost.Method) (winhost.Result, error) {
	op := "ExecMethod " + m.Class + "." + m.Name
	svc, err := t.service(ns)
	if err != nil {
		return winhost.Result{}, err
	}
	target := m.Path
	if target == "" {
		target = m.Class
	}
	args := []any{target, m.Name}
	if supplied(m.In) {
		in, err := t.inParams(svc, ns, m)
		if err != nil {
			return winhost.Result{}, fmt.Errorf("%s: %w", op, err)
		}
		defer clearVariant(in)
		args = append(args, in.ToIDispatch())
	}
	out, err := oleutil.CallMethod(svc, "ExecMethod", args...)
	if err != nil {
		return winhost.Result{}, t.failed(ns, op, err)
	}
	defer clearVariant(out)
	d := out.ToIDispatch()
	if d == nil {
		return winhost.Result{}, nil // a void method without output parameters
	}
	params, err := readObject(d, 0)
	if err != nil {
		return winhost.Result{}, fmt.Errorf("%s: read output parameters: %w", op, err)
	}
	rv, err := splitReturnValue(params.Props)
	if err != nil {
		return winhost.Result{}, fmt.Errorf("%s: %w", op, err)
	}
	return winhost.Result{ReturnValue: rv, Out: params.Props}, nil
}

func supplied(in []winhost.Param) bool {
	for _, p := range in {
		if p.Value != nil {
			return true
		}
	}
	return false
}

// inParams spawns the method's input parameters object and sets every
// supplied parameter; the caller clears the returned VARIANT. Values are
// never put into errors: a parameter may be sensitive.
func (t *comThread) inParams(svc *ole.IDispatch, ns string, m winhost.Method) (*ole.VARIANT, error) {
	cls, err := t.class(svc, ns, m.Class)
	if err != nil {
		return nil, err
	}
	methods, err := getProperty(cls, "Methods_")
	if err != nil {
		return nil, t.failed(ns, "Methods_", err)
	}
	defer clearVariant(methods)
	md, err := dispatchOf(methods, "Methods_")
	if err != nil {
		return nil, err
	}
	method, err := oleutil.CallMethod(md, "Item", m.Name)
	if err != nil {
		return nil, t.lookupFailed(ns, winhost.LookupMethod, "method "+m.Name, err)
	}
	defer clearVariant(method)
	def, err := dispatchOf(method, "method "+m.Name)
	if err != nil {
		return nil, err
	}
	inDef, err := getProperty(def, "InParameters")
	if err != nil {
		return nil, t.failed(ns, "InParameters", err)
	}
	defer clearVariant(inDef)
	inDefD := inDef.ToIDispatch()
	if inDefD == nil {
		return nil, fmt.Errorf("the method takes no input parameters: %w", host.ErrInvalid)
	}
	inst, err := oleutil.CallMethod(inDefD, "SpawnInstance_")
	if err != nil {
		return nil, t.failed(ns, "SpawnInstance_", err)
	}
	if err := t.setParams(ns, inst, m.In); err != nil {
		clearVariant(inst)
		return nil, err
	}
	return inst, nil
}

func (t *comThread) setParams(ns string, inst *ole.VARIANT, in []winhost.Param) error {
	d, err := dispatchOf(inst, "SpawnInstance_")
	if err != nil {
		return err
	}
	props, err := getProperty(d, "Properties_")
	if err != nil {
		return t.failed(ns, "Properties_", err)
	}
	defer clearVariant(props)
	pd, err := dispatchOf(props, "Properties_")
	if err != nil {
		return err
	}
	for _, p := range in {
		if p.Value == nil {
			continue
		}
		if err := t.setParam(ns, pd, p); err != nil {
			return fmt.Errorf("parameter %s: %w", p.Name, err)
		}
	}
	return nil
}

func (t *comThread) setParam(ns string, props *ole.IDispatch, p winhost.Param) error {
	item, err := oleutil.CallMethod(props, "Item", p.Name)
	if err != nil {
		return t.lookupFailed(ns, winhost.LookupParameter, "Properties_.Item", err)
	}
	defer clearVariant(item)
	prop, err := dispatchOf(item, "Properties_.Item")
	if err != nil {
		return err
	}
	v, err := toVariant(p.Value)
	if err != nil {
		return fmt.Errorf("%w: %w", err, host.ErrInvalid)
	}
	err = putVariant(prop, "Value", &v)
	if cerr := ole.VariantClear(&v); cerr != nil && err == nil {
		err = fmt.Errorf("VariantClear: %w", cerr)
	}
	return err
}

// readSet reads every object of an SWbemObjectSet.
func readSet(set *ole.VARIANT, what string) ([]winhost.Instance, error) {
	d, err := dispatchOf(set, what)
	if err != nil {
		return nil, err
	}
	var out []winhost.Instance
	err = each(d, func(item *ole.VARIANT) error {
		obj, err := dispatchOf(item, what+" item")
		if err != nil {
			return err
		}
		in, err := readObject(obj, 0)
		if err != nil {
			return err
		}
		out = append(out, in)
		return nil
	})
	return out, err
}

// each enumerates a collection through its _NewEnum (IEnumVARIANT); every
// item is cleared after fn.
func each(coll *ole.IDispatch, fn func(item *ole.VARIANT) error) error {
	ev, err := getProperty(coll, "_NewEnum")
	if err != nil {
		return err
	}
	defer clearVariant(ev)
	unk := ev.ToIUnknown()
	if unk == nil {
		if d := ev.ToIDispatch(); d != nil {
			unk = &d.IUnknown
		} else {
			return fmt.Errorf("_NewEnum: got VARIANT type %#x", uint16(ev.VT))
		}
	}
	enum, err := unk.IEnumVARIANT(ole.IID_IEnumVariant)
	if err != nil {
		return err
	}
	defer enum.Release()
	for {
		item, n, err := enum.Next(1)
		if n == 0 {
			// S_FALSE ends the enumeration; any other HRESULT is a
			// failure reported while enumerating (semisynchronous calls
			// report provider errors here rather than in the call).
			if code, ok := hresultOf(err); err != nil && !(ok && code == sFalse) {
				return err
			}
			return nil
		}
		ferr := fn(&item)
		clearVariant(&item)
		if ferr != nil {
			return ferr
		}
	}
}

// readObject reads an SWbemObject: its path and class (from Path_) and
// every non-system property.
func readObject(obj *ole.IDispatch, depth int) (winhost.Instance, error) {
	pv, err := getProperty(obj, "Path_")
	if err != nil {
		return winhost.Instance{}, comError("Path_", err)
	}
	defer clearVariant(pv)
	pd, err := dispatchOf(pv, "Path_")
	if err != nil {
		return winhost.Instance{}, err
	}
	path, err := stringProperty(pd, "Path")
	if err != nil {
		return winhost.Instance{}, err
	}
	class, err := stringProperty(pd, "Class")
	if err != nil {
		return winhost.Instance{}, err
	}
	ps, err := getProperty(obj, "Properties_")
	if err != nil {
		return winhost.Instance{}, comError("Properties_", err)
	}
	defer clearVariant(ps)
	psd, err := dispatchOf(ps, "Properties_")
	if err != nil {
		return winhost.Instance{}, err
	}
	props := map[string]any{}
	err = each(psd, func(item *ole.VARIANT) error {
		prop, err := dispatchOf(item, "property")
		if err != nil {
			return err
		}
		name, err := stringProperty(prop, "Name")
		if err != nil {
			return err
		}
		cimType, err := int32Property(prop, "CIMType")
		if err != nil {
			return fmt.Errorf("%s.%s: %w", class, name, err)
		}
		vv, err := getProperty(prop, "Value")
		if err != nil {
			return comError(class+"."+name, err)
		}
		val, err := fromVariant(vv, cimType, depth)
		clearVariant(vv)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", class, name, err)
		}
		props[name] = val
		return nil
	})
	if err != nil {
		return winhost.Instance{}, err
	}
	return winhost.Instance{Path: path, Class: class, Props: props}, nil
}

func stringProperty(d *ole.IDispatch, name string) (string, error) {
	v, err := getProperty(d, name)
	if err != nil {
		return "", comError(name, err)
	}
	defer clearVariant(v)
	switch v.VT {
	case ole.VT_BSTR:
		return v.ToString(), nil
	case ole.VT_NULL, ole.VT_EMPTY:
		return "", nil
	}
	return "", fmt.Errorf("%s: got VARIANT type %#x, want a string", name, uint16(v.VT))
}

func int32Property(d *ole.IDispatch, name string) (int32, error) {
	v, err := getProperty(d, name)
	if err != nil {
		return 0, comError(name, err)
	}
	defer clearVariant(v)
	x, err := fromVariant(v, cimTypeNone, maxObjectDepth)
	if err != nil {
		return 0, err
	}
	n, ok := x.(int64)
	if !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%s: got %v, want a 32-bit integer", name, x)
	}
	return int32(n), nil
}

// clearVariant releases what a VARIANT holds. VariantClear fails only for
// malformed VARIANTs, which COM never hands out; nothing could be done
// about it here anyway.
func clearVariant(v *ole.VARIANT) {
	if v != nil {
		_ = v.Clear() // see above
	}
}

// hresultOf returns the HRESULT of a go-ole error. For DISP_E_EXCEPTION it
// is the SCODE of the exception, which is where the scripting API puts the
// WBEM error (WBEM_E_NOT_FOUND, WBEM_E_INVALID_PARAMETER, …).
func hresultOf(err error) (uint32, bool) {
	var oe *ole.OleError
	if !errors.As(err, &oe) {
		return 0, false
	}
	code := uint32(oe.Code())
	if code == dispEException {
		var ei ole.EXCEPINFO
		if errors.As(oe.SubError(), &ei) && ei.SCODE() != 0 {
			code = ei.SCODE()
		}
	}
	return code, true
}

// comError converts a go-ole error into a *winhost.COMError with its
// HRESULT and the exception's description.
func comError(op string, err error) error {
	code, ok := hresultOf(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	var oe *ole.OleError
	errors.As(err, &oe)
	detail := strings.TrimSpace(oe.Description())
	if detail == "<nil>" {
		detail = ""
	}
	return &winhost.COMError{Op: op, HResult: code, Detail: detail}
}

// withErrorObject attaches WMI's extended error object of this thread's
// last failed call to a *winhost.COMError (winhost reads its status).
func withErrorObject(err error) error {
	var ce *winhost.COMError
	if errors.As(err, &ce) && ce.ErrorObject == nil {
		ce.ErrorObject = lastErrorObject()
	}
	return err
}

// lastErrorObject reads WMI's last error object on this thread
// (SWbemLastError, an SWbemObject: every property, converted like any
// instance), or nil when there is none. Creating the object resets it.
func lastErrorObject() *winhost.Instance {
	unk, err := oleutil.CreateObject("WbemScripting.SWbemLastError")
	if err != nil {
		return nil // no error object: nothing more to say
	}
	defer unk.Release()
	d, err := unk.QueryInterface(ole.IID_IDispatch)
	if err != nil {
		return nil
	}
	defer d.Release()
	obj, err := readObject(d, 0)
	if err != nil {
		return nil
	}
	return &obj
}
