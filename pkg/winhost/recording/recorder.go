package recording

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// Recorder is an executor that passes every call to another and writes
// the call and its answer to a recording, one JSON line each, as soon as
// the call returns (a crash leaves whole lines). Secrets are never
// written: a parameter marked Sensitive and a host.Secret argument are
// recorded by name only. It is safe for concurrent use; lines are numbered
// in the order calls returned.
//
// A failure to write is kept (Err) and ends the recording; the calls
// themselves are never failed by it.
type Recorder struct {
	inner winhost.AdminExecutor

	mu  sync.Mutex
	w   *Writer
	seq int
	err error
}

var _ winhost.AdminExecutor = (*Recorder)(nil)

// NewRecorder writes the header and returns the recorder.
func NewRecorder(inner winhost.AdminExecutor, w io.Writer, h Header) (*Recorder, error) {
	wr, err := NewWriter(w, h)
	if err != nil {
		return nil, fmt.Errorf("write the recording's header: %w", err)
	}
	return &Recorder{inner: inner, w: wr}, nil
}

// WriteResult ends the recording with the scenario's outcome.
func (r *Recorder) WriteResult(outcome any) error {
	b, err := json.Marshal(outcome)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.err = r.w.Raw(Result{Kind: KindResult, Outcome: b})
	return r.err
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Calls returns the number of calls recorded so far.
func (r *Recorder) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// record writes one call: l carries the call, reply its answer's value
// (nil for none), err its failure.
func (r *Recorder) record(l Line, reply *Reply, err error, start time.Time) {
	l.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		l.Error = EncodeError(err)
	} else {
		if reply == nil {
			reply = &Reply{}
		}
		l.Reply = reply
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.seq++
	l.Seq = r.seq
	r.err = r.w.Line(l)
}

// recordErr notes a value the recording cannot encode, which would be a
// bug in this package: the line is still written, without it.
func (r *Recorder) recordErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *Recorder) values(vs ...any) []Value {
	out := make([]Value, 0, len(vs))
	for _, v := range vs {
		e, err := Encode(v)
		if err != nil {
			r.recordErr(err)
			continue
		}
		out = append(out, e)
	}
	return out
}

func (r *Recorder) value(v any) *Reply {
	e, err := Encode(v)
	if err != nil {
		r.recordErr(err)
		return &Reply{}
	}
	return &Reply{Value: &e}
}

func (r *Recorder) objects(insts []winhost.Instance) *Reply {
	rep := &Reply{Instances: make([]Object, 0, len(insts))}
	for _, in := range insts {
		o, err := encodeObject(in)
		if err != nil {
			r.recordErr(err)
			continue
		}
		rep.Instances = append(rep.Instances, o)
	}
	return rep
}

// EncodeMethod describes a method call; sensitive parameters keep only
// their names.
func EncodeMethod(m winhost.Method) (*Method, error) {
	out := &Method{Class: m.Class, Path: m.Path, Name: m.Name}
	for _, p := range m.In {
		rp := Param{Name: p.Name, Sensitive: p.Sensitive}
		if !p.Sensitive {
			v, err := Encode(p.Value)
			if err != nil {
				return nil, fmt.Errorf("%s.%s(%s): %w", m.Class, m.Name, p.Name, err)
			}
			rp.Value = &v
		}
		out.In = append(out.In, rp)
	}
	return out, nil
}

// Query implements winhost.WMI.
func (r *Recorder) Query(ctx context.Context, namespace, wql string) ([]winhost.Instance, error) {
	start := time.Now()
	out, err := r.inner.Query(ctx, namespace, wql)
	r.record(Line{Kind: "Query", Namespace: namespace, WQL: wql}, r.objects(out), err, start)
	return out, err
}

// Associators implements winhost.WMI.
func (r *Recorder) Associators(ctx context.Context, namespace, path, assoc, result string) ([]winhost.Instance, error) {
	start := time.Now()
	out, err := r.inner.Associators(ctx, namespace, path, assoc, result)
	r.record(Line{Kind: "Associators", Namespace: namespace, Path: path, Assoc: assoc, ResultClass: result}, r.objects(out), err, start)
	return out, err
}

// Call implements winhost.WMI.
func (r *Recorder) Call(ctx context.Context, namespace string, m winhost.Method) (winhost.Result, error) {
	start := time.Now()
	res, err := r.inner.Call(ctx, namespace, m)
	rm, merr := EncodeMethod(m)
	if merr != nil {
		r.recordErr(merr)
	}
	rep := &Reply{ReturnValue: &res.ReturnValue, Out: map[string]Value{}}
	for k, v := range res.Out {
		e, eerr := Encode(v)
		if eerr != nil {
			r.recordErr(eerr)
			continue
		}
		rep.Out[k] = e
	}
	r.record(Line{Kind: "Call", Namespace: namespace, Method: rm}, rep, err, start)
	return res, err
}

// DeleteInstance implements winhost.AdminCalls.
func (r *Recorder) DeleteInstance(ctx context.Context, namespace, path string) error {
	start := time.Now()
	err := r.inner.DeleteInstance(ctx, namespace, path)
	r.record(Line{Kind: "DeleteInstance", Namespace: namespace, Path: path}, nil, err, start)
	return err
}

// win32 records a Win32 call that returns a value.
func win32[T any](r *Recorder, name string, args []any, call func() (T, error)) (T, error) {
	start := time.Now()
	v, err := call()
	r.record(Line{Kind: name, Args: r.values(args...)}, r.value(v), err, start)
	return v, err
}

// win32Do records a Win32 call that returns nothing.
func win32Do(r *Recorder, name string, args []any, call func() error) error {
	start := time.Now()
	err := call()
	r.record(Line{Kind: name, Args: r.values(args...)}, nil, err, start)
	return err
}

// StorageDeviceIDDescriptor implements winhost.Win32.
func (r *Recorder) StorageDeviceIDDescriptor(ctx context.Context, devicePath string) ([]byte, error) {
	return win32(r, "StorageDeviceIDDescriptor", []any{devicePath}, func() ([]byte, error) {
		return r.inner.StorageDeviceIDDescriptor(ctx, devicePath)
	})
}

// SCSIAddress implements winhost.Win32.
func (r *Recorder) SCSIAddress(ctx context.Context, devicePath string) ([]byte, error) {
	return win32(r, "SCSIAddress", []any{devicePath}, func() ([]byte, error) { return r.inner.SCSIAddress(ctx, devicePath) })
}

// VolumeDiskExtents implements winhost.Win32.
func (r *Recorder) VolumeDiskExtents(ctx context.Context, volumeName string) ([]byte, error) {
	return win32(r, "VolumeDiskExtents", []any{volumeName}, func() ([]byte, error) {
		return r.inner.VolumeDiskExtents(ctx, volumeName)
	})
}

// FlushVolume implements winhost.Win32.
func (r *Recorder) FlushVolume(ctx context.Context, volumeName string) error {
	return win32Do(r, "FlushVolume", []any{volumeName}, func() error { return r.inner.FlushVolume(ctx, volumeName) })
}

// SetVolumeMountPoint implements winhost.Win32.
func (r *Recorder) SetVolumeMountPoint(ctx context.Context, mountPoint, volumeName string) error {
	return win32Do(r, "SetVolumeMountPoint", []any{mountPoint, volumeName}, func() error {
		return r.inner.SetVolumeMountPoint(ctx, mountPoint, volumeName)
	})
}

// DeleteVolumeMountPoint implements winhost.Win32.
func (r *Recorder) DeleteVolumeMountPoint(ctx context.Context, mountPoint string) error {
	return win32Do(r, "DeleteVolumeMountPoint", []any{mountPoint}, func() error {
		return r.inner.DeleteVolumeMountPoint(ctx, mountPoint)
	})
}

// GetVolumeNameForVolumeMountPoint implements winhost.Win32.
func (r *Recorder) GetVolumeNameForVolumeMountPoint(ctx context.Context, mountPoint string) (string, error) {
	return win32(r, "GetVolumeNameForVolumeMountPoint", []any{mountPoint}, func() (string, error) {
		return r.inner.GetVolumeNameForVolumeMountPoint(ctx, mountPoint)
	})
}

// GetDiskFreeSpaceEx implements winhost.Win32.
func (r *Recorder) GetDiskFreeSpaceEx(ctx context.Context, path string) (uint64, uint64, uint64, error) {
	s, err := win32(r, "GetDiskFreeSpaceEx", []any{path}, func() ([3]uint64, error) {
		a, t, f, err := r.inner.GetDiskFreeSpaceEx(ctx, path)
		return [3]uint64{a, t, f}, err
	})
	return s[0], s[1], s[2], err
}

// GetFileAttributes implements winhost.Win32.
func (r *Recorder) GetFileAttributes(ctx context.Context, path string) (uint32, error) {
	return win32(r, "GetFileAttributes", []any{path}, func() (uint32, error) { return r.inner.GetFileAttributes(ctx, path) })
}

// ReadReparsePoint implements winhost.Win32.
func (r *Recorder) ReadReparsePoint(ctx context.Context, path string) ([]byte, error) {
	return win32(r, "ReadReparsePoint", []any{path}, func() ([]byte, error) { return r.inner.ReadReparsePoint(ctx, path) })
}

// CreateDirectory implements winhost.Win32.
func (r *Recorder) CreateDirectory(ctx context.Context, path string) error {
	return win32Do(r, "CreateDirectory", []any{path}, func() error { return r.inner.CreateDirectory(ctx, path) })
}

// RemoveDirectory implements winhost.Win32.
func (r *Recorder) RemoveDirectory(ctx context.Context, path string) error {
	return win32Do(r, "RemoveDirectory", []any{path}, func() error { return r.inner.RemoveDirectory(ctx, path) })
}

// CreateSymbolicLink implements winhost.Win32.
func (r *Recorder) CreateSymbolicLink(ctx context.Context, link, target string, flags uint32) error {
	return win32Do(r, "CreateSymbolicLink", []any{link, target, flags}, func() error {
		return r.inner.CreateSymbolicLink(ctx, link, target, flags)
	})
}

// DirectoryHasEntries implements winhost.Win32.
func (r *Recorder) DirectoryHasEntries(ctx context.Context, path string) (bool, error) {
	return win32(r, "DirectoryHasEntries", []any{path}, func() (bool, error) { return r.inner.DirectoryHasEntries(ctx, path) })
}

// DirectoryEntries implements winhost.Win32.
func (r *Recorder) DirectoryEntries(ctx context.Context, path string) ([]string, error) {
	return win32(r, "DirectoryEntries", []any{path}, func() ([]string, error) { return r.inner.DirectoryEntries(ctx, path) })
}

// RegistryValue implements winhost.AdminCalls.
func (r *Recorder) RegistryValue(ctx context.Context, key, name string) (any, error) {
	return win32(r, "RegistryValue", []any{key, name}, func() (any, error) { return r.inner.RegistryValue(ctx, key, name) })
}

// ProcessToken implements winhost.AdminCalls.
func (r *Recorder) ProcessToken(ctx context.Context) (host.Token, error) {
	return win32(r, "ProcessToken", nil, func() (host.Token, error) { return r.inner.ProcessToken(ctx) })
}

// GetVolumePathName implements winhost.AdminCalls.
func (r *Recorder) GetVolumePathName(ctx context.Context, path string) (string, error) {
	return win32(r, "GetVolumePathName", []any{path}, func() (string, error) { return r.inner.GetVolumePathName(ctx, path) })
}

// GetDriveType implements winhost.AdminCalls.
func (r *Recorder) GetDriveType(ctx context.Context, root string) (uint32, error) {
	return win32(r, "GetDriveType", []any{root}, func() (uint32, error) { return r.inner.GetDriveType(ctx, root) })
}

// GetVolumeFileSystem implements winhost.AdminCalls.
func (r *Recorder) GetVolumeFileSystem(ctx context.Context, root string) (string, error) {
	return win32(r, "GetVolumeFileSystem", []any{root}, func() (string, error) { return r.inner.GetVolumeFileSystem(ctx, root) })
}

// QueryService implements winhost.AdminCalls.
func (r *Recorder) QueryService(ctx context.Context, name string) (host.Service, error) {
	return win32(r, "QueryService", []any{name}, func() (host.Service, error) { return r.inner.QueryService(ctx, name) })
}

// ChangeServiceStartType implements winhost.AdminCalls.
func (r *Recorder) ChangeServiceStartType(ctx context.Context, name string, start host.StartType) error {
	return win32Do(r, "ChangeServiceStartType", []any{name, start}, func() error {
		return r.inner.ChangeServiceStartType(ctx, name, start)
	})
}

// StartService implements winhost.AdminCalls.
func (r *Recorder) StartService(ctx context.Context, name string) error {
	return win32Do(r, "StartService", []any{name}, func() error { return r.inner.StartService(ctx, name) })
}

// CreateVirtualDisk implements winhost.AdminCalls.
func (r *Recorder) CreateVirtualDisk(ctx context.Context, path string, size uint64) error {
	return win32Do(r, "CreateVirtualDisk", []any{path, size}, func() error { return r.inner.CreateVirtualDisk(ctx, path, size) })
}

// AttachVirtualDisk implements winhost.AdminCalls.
func (r *Recorder) AttachVirtualDisk(ctx context.Context, path string) (string, error) {
	return win32(r, "AttachVirtualDisk", []any{path}, func() (string, error) { return r.inner.AttachVirtualDisk(ctx, path) })
}

// ResizeVirtualDisk implements winhost.AdminCalls.
func (r *Recorder) ResizeVirtualDisk(ctx context.Context, path string, size uint64) error {
	return win32Do(r, "ResizeVirtualDisk", []any{path, size}, func() error { return r.inner.ResizeVirtualDisk(ctx, path, size) })
}

// DetachVirtualDisk implements winhost.AdminCalls.
func (r *Recorder) DetachVirtualDisk(ctx context.Context, path string) error {
	return win32Do(r, "DetachVirtualDisk", []any{path}, func() error { return r.inner.DetachVirtualDisk(ctx, path) })
}

// WriteFile implements winhost.AdminCalls.
func (r *Recorder) WriteFile(ctx context.Context, path string, data []byte) error {
	return win32Do(r, "WriteFile", []any{path, data}, func() error { return r.inner.WriteFile(ctx, path, data) })
}

// ReadFile implements winhost.AdminCalls.
func (r *Recorder) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return win32(r, "ReadFile", []any{path}, func() ([]byte, error) { return r.inner.ReadFile(ctx, path) })
}

// DeleteFile implements winhost.AdminCalls.
func (r *Recorder) DeleteFile(ctx context.Context, path string) error {
	return win32Do(r, "DeleteFile", []any{path}, func() error { return r.inner.DeleteFile(ctx, path) })
}

// NetUserAdd implements winhost.AdminCalls; the password is recorded as a
// secret without its value.
func (r *Recorder) NetUserAdd(ctx context.Context, name string, password host.Secret) error {
	return win32Do(r, "NetUserAdd", []any{name, password}, func() error { return r.inner.NetUserAdd(ctx, name, password) })
}

// NetUserDel implements winhost.AdminCalls.
func (r *Recorder) NetUserDel(ctx context.Context, name string) error {
	return win32Do(r, "NetUserDel", []any{name}, func() error { return r.inner.NetUserDel(ctx, name) })
}

// LookupHost implements winhost.Win32.
func (r *Recorder) LookupHost(ctx context.Context, name string) ([]string, error) {
	return win32(r, "LookupHost", []any{name}, func() ([]string, error) { return r.inner.LookupHost(ctx, name) })
}

// ReportIScsiPersistentLogins implements winhost.Win32: the count and the
// fixed part are recorded as one PersistentLogins. The fixed part is what
// the executor returns: the records, whose LoginOptions hold the lengths
// of the CHAP user name and secret and pointers into the variable part;
// the variable part, which holds the name and secret, never leaves the
// executor.
func (r *Recorder) ReportIScsiPersistentLogins(ctx context.Context) (uint32, []byte, error) {
	l, err := win32(r, "ReportIScsiPersistentLogins", nil, func() (PersistentLogins, error) {
		n, fixed, err := r.inner.ReportIScsiPersistentLogins(ctx)
		return PersistentLogins{Count: n, Fixed: fixed}, err
	})
	return l.Count, l.Fixed, err
}

// RemoveIScsiPersistentTarget implements winhost.Win32.
func (r *Recorder) RemoveIScsiPersistentTarget(ctx context.Context, initiatorInstance string, initiatorPort uint32, targetName string, portal winhost.PortalW) error {
	return win32Do(r, "RemoveIScsiPersistentTarget", []any{initiatorInstance, initiatorPort, targetName, portal}, func() error {
		return r.inner.RemoveIScsiPersistentTarget(ctx, initiatorInstance, initiatorPort, targetName, portal)
	})
}

// FileSecurity implements winhost.Win32.
func (r *Recorder) FileSecurity(ctx context.Context, path string, info uint32) ([]byte, error) {
	return win32(r, "FileSecurity", []any{path, info}, func() ([]byte, error) { return r.inner.FileSecurity(ctx, path, info) })
}

// UpdateFileDACL implements winhost.Win32 as the scripted executor lays
// it out: a line "UpdateFileDACL" (path) with the descriptor read, or the
// error of the open or the read; then, when update returned an ACL, a
// line "SetSecurityInfo" (path, the flags, the ACL) with the write's
// result. An error of update itself is not the host's and is not
// recorded.
func (r *Recorder) UpdateFileDACL(ctx context.Context, path string, update func(sd []byte) ([]byte, uint32, error)) error {
	start := time.Now()
	read := false
	var set []any
	err := r.inner.UpdateFileDACL(ctx, path, func(sd []byte) ([]byte, uint32, error) {
		read = true
		r.record(Line{Kind: "UpdateFileDACL", Args: r.values(path)}, r.value(sd), nil, start)
		acl, info, err := update(sd)
		if err == nil && acl != nil {
			set = []any{path, info, append([]byte(nil), acl...)}
			start = time.Now()
		}
		return acl, info, err
	})
	switch {
	case !read:
		r.record(Line{Kind: "UpdateFileDACL", Args: r.values(path)}, nil, err, start)
	case set != nil:
		r.record(Line{Kind: "SetSecurityInfo", Args: r.values(set...)}, nil, err, start)
	}
	return err
}

// LookupAccountName implements winhost.Win32: the SID and its use are
// recorded as one Account.
func (r *Recorder) LookupAccountName(ctx context.Context, name string) ([]byte, uint32, error) {
	a, err := win32(r, "LookupAccountName", []any{name}, func() (Account, error) {
		sid, use, err := r.inner.LookupAccountName(ctx, name)
		return Account{SID: sid, Use: use}, err
	})
	return a.SID, a.Use, err
}
