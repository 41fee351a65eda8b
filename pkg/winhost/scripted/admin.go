package scripted

import (
	"context"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// The calls of the operator's commands (winhost.AdminCalls), scripted like
// the Win32 calls: ExpectWin32 with the call's name and arguments.
// DeleteInstance is KindDeleteInstance, with the namespace and path.

// KindDeleteInstance is the kind of a DeleteInstance call.
const KindDeleteInstance = "DeleteInstance"

var _ winhost.AdminExecutor = (*Executor)(nil)

// ExpectDeleteInstance expects DeleteInstance(namespace, path).
func (e *Executor) ExpectDeleteInstance(namespace, path string, r Reply) *Executor {
	return e.expect(Call{Kind: KindDeleteInstance, Namespace: namespace, Path: path}, r, nil)
}

// DeleteInstance implements winhost.AdminCalls.
func (e *Executor) DeleteInstance(ctx context.Context, namespace, path string) error {
	return e.take(ctx, Call{Kind: KindDeleteInstance, Namespace: namespace, Path: path}).Err
}

// RegistryValue implements winhost.AdminCalls.
func (e *Executor) RegistryValue(ctx context.Context, key, name string) (any, error) {
	r := e.win32(ctx, "RegistryValue", key, name)
	return r.Value, r.Err
}

// ProcessToken implements winhost.AdminCalls.
func (e *Executor) ProcessToken(ctx context.Context) (host.Token, error) {
	r := e.win32(ctx, "ProcessToken")
	return r.Token, r.Err
}

// GetVolumePathName implements winhost.AdminCalls.
func (e *Executor) GetVolumePathName(ctx context.Context, path string) (string, error) {
	r := e.win32(ctx, "GetVolumePathName", path)
	return r.String, r.Err
}

// GetDriveType implements winhost.AdminCalls.
func (e *Executor) GetDriveType(ctx context.Context, root string) (uint32, error) {
	r := e.win32(ctx, "GetDriveType", root)
	return r.Uint32, r.Err
}

// GetVolumeFileSystem implements winhost.AdminCalls.
func (e *Executor) GetVolumeFileSystem(ctx context.Context, root string) (string, error) {
	r := e.win32(ctx, "GetVolumeFileSystem", root)
	return r.String, r.Err
}

// QueryService implements winhost.AdminCalls.
func (e *Executor) QueryService(ctx context.Context, name string) (host.Service, error) {
	r := e.win32(ctx, "QueryService", name)
	return r.Service, r.Err
}

// ChangeServiceStartType implements winhost.AdminCalls.
func (e *Executor) ChangeServiceStartType(ctx context.Context, name string, start host.StartType) error {
	return e.win32(ctx, "ChangeServiceStartType", name, start).Err
}

// StartService implements winhost.AdminCalls.
func (e *Executor) StartService(ctx context.Context, name string) error {
	return e.win32(ctx, "StartService", name).Err
}

// CreateVirtualDisk implements winhost.AdminCalls.
func (e *Executor) CreateVirtualDisk(ctx context.Context, path string, size uint64) error {
	return e.win32(ctx, "CreateVirtualDisk", path, size).Err
}

// AttachVirtualDisk implements winhost.AdminCalls.
func (e *Executor) AttachVirtualDisk(ctx context.Context, path string) (string, error) {
	r := e.win32(ctx, "AttachVirtualDisk", path)
	return r.String, r.Err
}

// ResizeVirtualDisk implements winhost.AdminCalls.
func (e *Executor) ResizeVirtualDisk(ctx context.Context, path string, size uint64) error {
	return e.win32(ctx, "ResizeVirtualDisk", path, size).Err
}

// DetachVirtualDisk implements winhost.AdminCalls.
func (e *Executor) DetachVirtualDisk(ctx context.Context, path string) error {
	return e.win32(ctx, "DetachVirtualDisk", path).Err
}

// WriteFile implements winhost.AdminCalls.
func (e *Executor) WriteFile(ctx context.Context, path string, data []byte) error {
	return e.win32(ctx, "WriteFile", path, data).Err
}

// ReadFile implements winhost.AdminCalls.
func (e *Executor) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r := e.win32(ctx, "ReadFile", path)
	return r.Bytes, r.Err
}

// DeleteFile implements winhost.AdminCalls.
func (e *Executor) DeleteFile(ctx context.Context, path string) error {
	return e.win32(ctx, "DeleteFile", path).Err
}

// NetUserAdd implements winhost.AdminCalls. The password is an argument
// like the others (a host.Secret, which prints redacted); a script
// matches it with ExpectMatching or with the same secret.
func (e *Executor) NetUserAdd(ctx context.Context, name string, password host.Secret) error {
	return e.win32(ctx, "NetUserAdd", name, password).Err
}

// NetUserDel implements winhost.AdminCalls.
func (e *Executor) NetUserDel(ctx context.Context, name string) error {
	return e.win32(ctx, "NetUserDel", name).Err
}
