package wmiexec

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/comworker"
)

var _ winhost.Executor = (*Executor)(nil)

const (
	defaultWMIWorkers   = 2
	defaultWin32Workers = 4
)

// New starts the executor: the COM workers (each initialises COM in the
// multithreaded apartment on its own thread; the first also sets process
// COM security) and the Win32 workers. It fails when COM cannot be
// initialised. WMI connections are made on first use. Close it when done.
func New(o Options) (*Executor, error) {
	sink := &noteSink{}
	wmi, err := comworker.New(comworker.Config[*comThread]{
		Name:     kindWMI,
		Workers:  orDefault(o.WMIWorkers, defaultWMIWorkers),
		Queue:    o.Queue,
		MaxStuck: o.MaxStuck,
		Init:     func() (*comThread, error) { return newCOMThread(sink.note) },
		Close:    (*comThread).close,
		Logger:   o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("initialise COM for WMI: %w", err)
	}
	sink.pool.Store(wmi)
	win32, err := comworker.New(comworker.Config[struct{}]{
		Name:     kindWin32,
		Workers:  orDefault(o.Win32Workers, defaultWin32Workers),
		Queue:    o.Queue,
		MaxStuck: o.MaxStuck,
		Init:     func() (struct{}, error) { return struct{}{}, nil },
		Logger:   o.Logger,
	})
	if err != nil {
		if cerr := wmi.Close(context.Background()); cerr != nil {
			o.Logger.Error(cerr, "Stopping the WMI workers")
		}
		return nil, fmt.Errorf("start the Win32 workers: %w", err)
	}
	return &Executor{wmi: wmi, win32: win32}, nil
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// noteSink lets a COM thread count the extra round trips it makes
// (connections, class definitions) on the pool that runs it.
type noteSink struct {
	pool atomic.Pointer[comworker.Pool[*comThread]]
}

func (s *noteSink) note(op comworker.Op) {
	if p := s.pool.Load(); p != nil {
		p.Note(op)
	}
}

// logCall writes one line per host call at verbosity 5.
func logCall(ctx context.Context, op comworker.Op, start time.Time, err error, kv ...any) {
	logger := klog.FromContext(ctx).V(5)
	if !logger.Enabled() {
		return
	}
	kv = append([]any{"method", op.String(), "durationMs", time.Since(start).Milliseconds()}, kv...)
	if err != nil {
		kv = append(kv, "err", err.Error())
	}
	logger.Info("Host call", kv...)
}

// Query implements winhost.WMI.
func (e *Executor) Query(ctx context.Context, namespace, wql string) ([]winhost.Instance, error) {
	op, start := queryOp(wql), time.Now()
	out, err := comworker.Call(ctx, e.wmi, op, func(t *comThread) ([]winhost.Instance, error) {
		return t.query(namespace, wql)
	})
	logCall(ctx, op, start, err, "namespace", namespace, "wql", wql, "instances", len(out))
	return out, err
}

// Associators implements winhost.WMI.
func (e *Executor) Associators(ctx context.Context, namespace, path, assocClass, resultClass string) ([]winhost.Instance, error) {
	op, start := associatorsOp(assocClass, resultClass), time.Now()
	out, err := comworker.Call(ctx, e.wmi, op, func(t *comThread) ([]winhost.Instance, error) {
		return t.associators(namespace, path, assocClass, resultClass)
	})
	logCall(ctx, op, start, err, "namespace", namespace, "path", path, "instances", len(out))
	return out, err
}

// Call implements winhost.WMI. Parameter values marked Sensitive are never
// logged.
func (e *Executor) Call(ctx context.Context, namespace string, m winhost.Method) (winhost.Result, error) {
	op, start := callOp(m), time.Now()
	res, err := comworker.Call(ctx, e.wmi, op, func(t *comThread) (winhost.Result, error) {
		return t.call(namespace, m)
	})
	logCall(ctx, op, start, err, "namespace", namespace, "path", m.Path, "params", loggedParams(m.In), "returnValue", res.ReturnValue)
	return res, err
}

func win32Call[R any](ctx context.Context, e *Executor, name string, fn func() (R, error), kv ...any) (R, error) {
	op, start := win32Op(name), time.Now()
	r, err := comworker.Call(ctx, e.win32, op, func(struct{}) (R, error) { return fn() })
	logCall(ctx, op, start, err, kv...)
	return r, err
}

func win32Do(ctx context.Context, e *Executor, name string, fn func() error, kv ...any) error {
	_, err := win32Call(ctx, e, name, func() (struct{}, error) { return struct{}{}, fn() }, kv...)
	return err
}

// StorageDeviceIDDescriptor implements winhost.Win32.
func (e *Executor) StorageDeviceIDDescriptor(ctx context.Context, devicePath string) ([]byte, error) {
	return win32Call(ctx, e, "StorageDeviceIDDescriptor", func() ([]byte, error) {
		return storageDeviceIDDescriptor(devicePath)
	}, "path", devicePath)
}

// SCSIAddress implements winhost.Win32.
func (e *Executor) SCSIAddress(ctx context.Context, devicePath string) ([]byte, error) {
	return win32Call(ctx, e, "SCSIAddress", func() ([]byte, error) {
		return scsiAddress(devicePath)
	}, "path", devicePath)
}

// VolumeDiskExtents implements winhost.Win32.
func (e *Executor) VolumeDiskExtents(ctx context.Context, volumeName string) ([]byte, error) {
	return win32Call(ctx, e, "VolumeDiskExtents", func() ([]byte, error) {
		return volumeDiskExtents(volumeName)
	}, "volumeGUID", volumeName)
}

// FlushVolume implements winhost.Win32.
func (e *Executor) FlushVolume(ctx context.Context, volumeName string) error {
	return win32Do(ctx, e, "FlushFileBuffers", func() error { return flushVolume(volumeName) }, "volumeGUID", volumeName)
}

// SetVolumeMountPoint implements winhost.Win32.
func (e *Executor) SetVolumeMountPoint(ctx context.Context, mountPoint, volumeName string) error {
	return win32Do(ctx, e, "SetVolumeMountPoint", func() error {
		return setVolumeMountPoint(mountPoint, volumeName)
	}, "path", mountPoint, "volumeGUID", volumeName)
}

// DeleteVolumeMountPoint implements winhost.Win32.
func (e *Executor) DeleteVolumeMountPoint(ctx context.Context, mountPoint string) error {
	return win32Do(ctx, e, "DeleteVolumeMountPoint", func() error {
		return deleteVolumeMountPoint(mountPoint)
	}, "path", mountPoint)
}

// GetVolumeNameForVolumeMountPoint implements winhost.Win32.
func (e *Executor) GetVolumeNameForVolumeMountPoint(ctx context.Context, mountPoint string) (string, error) {
	return win32Call(ctx, e, "GetVolumeNameForVolumeMountPoint", func() (string, error) {
		return getVolumeNameForVolumeMountPoint(mountPoint)
	}, "path", mountPoint)
}

// GetDiskFreeSpaceEx implements winhost.Win32.
func (e *Executor) GetDiskFreeSpaceEx(ctx context.Context, path string) (available, total, free uint64, err error) {
	space, err := win32Call(ctx, e, "GetDiskFreeSpaceEx", func() ([3]uint64, error) {
		a, t, f, err := getDiskFreeSpaceEx(path)
		return [3]uint64{a, t, f}, err
	}, "path", path)
	return space[0], space[1], space[2], err
}

// GetFileAttributes implements winhost.Win32.
func (e *Executor) GetFileAttributes(ctx context.Context, path string) (uint32, error) {
	return win32Call(ctx, e, "GetFileAttributes", func() (uint32, error) {
		return getFileAttributes(path)
	}, "path", path)
}

// ReadReparsePoint implements winhost.Win32.
func (e *Executor) ReadReparsePoint(ctx context.Context, path string) ([]byte, error) {
	return win32Call(ctx, e, "ReadReparsePoint", func() ([]byte, error) {
		return readReparsePoint(path)
	}, "path", path)
}

// CreateDirectory implements winhost.Win32.
func (e *Executor) CreateDirectory(ctx context.Context, path string) error {
	return win32Do(ctx, e, "CreateDirectory", func() error { return createDirectory(path) }, "path", path)
}

// RemoveDirectory implements winhost.Win32.
func (e *Executor) RemoveDirectory(ctx context.Context, path string) error {
	return win32Do(ctx, e, "RemoveDirectory", func() error { return removeDirectory(path) }, "path", path)
}

// CreateSymbolicLink implements winhost.Win32.
func (e *Executor) CreateSymbolicLink(ctx context.Context, link, target string, flags uint32) error {
	return win32Do(ctx, e, "CreateSymbolicLink", func() error {
		return createSymbolicLink(link, target, flags)
	}, "path", link, "target", target)
}

// DirectoryHasEntries implements winhost.Win32.
func (e *Executor) DirectoryHasEntries(ctx context.Context, path string) (bool, error) {
	return win32Call(ctx, e, "DirectoryHasEntries", func() (bool, error) {
		return directoryHasEntries(path)
	}, "path", path)
}

// DirectoryEntries implements winhost.Win32.
func (e *Executor) DirectoryEntries(ctx context.Context, path string) ([]string, error) {
	return win32Call(ctx, e, "DirectoryEntries", func() ([]string, error) {
		return directoryEntries(path)
	}, "path", path)
}

// LookupHost implements winhost.Win32 with the system resolver
// (net.Resolver.LookupNetIP, which calls GetAddrInfoW on Windows, as the
// iSCSI initiator resolves a portal given by name). It runs on the
// caller's goroutine, not on a worker: it touches no COM or thread state,
// and the resolver itself honours ctx.
func (e *Executor) LookupHost(ctx context.Context, name string) ([]string, error) {
	op, start := win32Op("LookupHost"), time.Now()
	e.win32.Note(op)
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	logCall(ctx, op, start, err, "portal", name)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.Unmap().String()
	}
	return out, nil
}

// ReportIScsiPersistentLogins implements winhost.Win32.
func (e *Executor) ReportIScsiPersistentLogins(ctx context.Context) (uint32, []byte, error) {
	r, err := win32Call(ctx, e, "ReportIScsiPersistentLogins", func() (persistentLogins, error) {
		n, b, err := reportIScsiPersistentLogins()
		return persistentLogins{n, b}, err
	})
	return r.count, r.fixed, err
}

type persistentLogins struct {
	count uint32
	fixed []byte
}

// RemoveIScsiPersistentTarget implements winhost.Win32.
func (e *Executor) RemoveIScsiPersistentTarget(ctx context.Context, initiatorInstance string, initiatorPort uint32, targetName string, portal winhost.PortalW) error {
	return win32Do(ctx, e, "RemoveIScsiPersistentTarget", func() error {
		return removeIScsiPersistentTarget(initiatorInstance, initiatorPort, targetName, portal)
	}, "iqn", targetName, "portal", portal.Address)
}
