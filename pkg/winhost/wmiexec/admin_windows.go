package wmiexec

import (
	"context"
	"time"

	"github.com/go-ole/go-ole/oleutil"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/comworker"
)

// The calls of the operator's commands (winhost.AdminCalls): WMI's
// DeleteInstance on the COM workers, the rest on the Win32 workers, like
// every other call. The functions doing the work are in admin32_windows.go
// and vhd_windows.go.

var _ winhost.AdminExecutor = (*Executor)(nil)

// DeleteInstance implements winhost.AdminCalls: SWbemServices.Delete
// (learn.microsoft.com/windows/win32/wmisdk/swbemservices-delete).
func (e *Executor) DeleteInstance(ctx context.Context, namespace, path string) error {
	op, start := comworker.Op{Kind: kindWMI, Name: "Delete"}, time.Now()
	_, err := comworker.Call(ctx, e.wmi, op, func(t *comThread) (struct{}, error) {
		return struct{}{}, t.deleteInstance(namespace, path)
	})
	logCall(ctx, op, start, err, "namespace", namespace, "path", path)
	return err
}

func (t *comThread) deleteInstance(ns, path string) error {
	svc, err := t.service(ns)
	if err != nil {
		return err
	}
	v, err := oleutil.CallMethod(svc, "Delete", path)
	if err != nil {
		return t.failed(ns, "Delete", err)
	}
	clearVariant(v)
	return nil
}

// RegistryValue implements winhost.AdminCalls.
func (e *Executor) RegistryValue(ctx context.Context, key, name string) (any, error) {
	return win32Call(ctx, e, "RegistryValue", func() (any, error) { return registryValue(key, name) }, "key", key, "value", name)
}

// ProcessToken implements winhost.AdminCalls.
func (e *Executor) ProcessToken(ctx context.Context) (host.Token, error) {
	return win32Call(ctx, e, "ProcessToken", processToken)
}

// GetVolumePathName implements winhost.AdminCalls.
func (e *Executor) GetVolumePathName(ctx context.Context, path string) (string, error) {
	return win32Call(ctx, e, "GetVolumePathName", func() (string, error) { return getVolumePathName(path) }, "path", path)
}

// GetDriveType implements winhost.AdminCalls.
func (e *Executor) GetDriveType(ctx context.Context, root string) (uint32, error) {
	return win32Call(ctx, e, "GetDriveType", func() (uint32, error) { return getDriveType(root) }, "path", root)
}

// GetVolumeFileSystem implements winhost.AdminCalls.
func (e *Executor) GetVolumeFileSystem(ctx context.Context, root string) (string, error) {
	return win32Call(ctx, e, "GetVolumeInformation", func() (string, error) { return getVolumeFileSystem(root) }, "path", root)
}

// QueryService implements winhost.AdminCalls.
func (e *Executor) QueryService(ctx context.Context, name string) (host.Service, error) {
	return win32Call(ctx, e, "QueryService", func() (host.Service, error) { return queryService(name) }, "service", name)
}

// ChangeServiceStartType implements winhost.AdminCalls.
func (e *Executor) ChangeServiceStartType(ctx context.Context, name string, start host.StartType) error {
	return win32Do(ctx, e, "ChangeServiceConfig", func() error { return changeServiceStartType(name, start) },
		"service", name, "startType", start.String())
}

// StartService implements winhost.AdminCalls.
func (e *Executor) StartService(ctx context.Context, name string) error {
	return win32Do(ctx, e, "StartService", func() error { return startService(name) }, "service", name)
}

// CreateVirtualDisk implements winhost.AdminCalls.
func (e *Executor) CreateVirtualDisk(ctx context.Context, path string, size uint64) error {
	return win32Do(ctx, e, "CreateVirtualDisk", func() error { return createVirtualDisk(path, size) }, "path", path, "size", size)
}

// AttachVirtualDisk implements winhost.AdminCalls.
func (e *Executor) AttachVirtualDisk(ctx context.Context, path string) (string, error) {
	return win32Call(ctx, e, "AttachVirtualDisk", func() (string, error) { return attachVirtualDisk(path) }, "path", path)
}

// ResizeVirtualDisk implements winhost.AdminCalls.
func (e *Executor) ResizeVirtualDisk(ctx context.Context, path string, size uint64) error {
	return win32Do(ctx, e, "ResizeVirtualDisk", func() error { return resizeVirtualDisk(path, size) }, "path", path, "size", size)
}

// DetachVirtualDisk implements winhost.AdminCalls.
func (e *Executor) DetachVirtualDisk(ctx context.Context, path string) error {
	return win32Do(ctx, e, "DetachVirtualDisk", func() error { return detachVirtualDisk(path) }, "path", path)
}

// WriteFile implements winhost.AdminCalls.
func (e *Executor) WriteFile(ctx context.Context, path string, data []byte) error {
	return win32Do(ctx, e, "WriteFile", func() error { return writeFile(path, data) }, "path", path, "bytes", len(data))
}

// ReadFile implements winhost.AdminCalls.
func (e *Executor) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return win32Call(ctx, e, "ReadFile", func() ([]byte, error) { return readFile(path) }, "path", path)
}

// DeleteFile implements winhost.AdminCalls.
func (e *Executor) DeleteFile(ctx context.Context, path string) error {
	return win32Do(ctx, e, "DeleteFile", func() error { return deleteFile(path) }, "path", path)
}

// NetUserAdd implements winhost.AdminCalls; the password is never logged.
func (e *Executor) NetUserAdd(ctx context.Context, name string, password host.Secret) error {
	return win32Do(ctx, e, "NetUserAdd", func() error { return netUserAdd(name, password) }, "user", name)
}

// NetUserDel implements winhost.AdminCalls.
func (e *Executor) NetUserDel(ctx context.Context, name string) error {
	return win32Do(ctx, e, "NetUserDel", func() error { return netUserDel(name) }, "user", name)
}
