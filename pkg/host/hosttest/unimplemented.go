package hosttest

import (
	"context"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Unimplemented returns a host.Host whose every method fails with an error
// wrapping host.ErrNotImplemented and naming the method ("disks.List").
// Tests build fakes on it: replace one area, or embed an area in a struct
// that overrides the methods a test needs, and every other call fails
// loudly instead of pretending to succeed. pkg/hostmetrics' tests use
// it to reach every method of every area through the metrics decorator.
// The plugin never uses it: every host it runs on implements every method.
func Unimplemented() host.Host {
	return host.Host{
		Disks:   unimplementedDisks{},
		Volumes: unimplementedVolumes{},
		Files:   unimplementedFiles{},
		SMB:     unimplementedSMB{},
		ISCSI:   unimplementedISCSI{},
	}
}

func notImpl(op string) error { return fmt.Errorf("%s: %w", op, host.ErrNotImplemented) }

type unimplementedDisks struct{}

func (unimplementedDisks) List(context.Context) ([]host.Disk, error) {
	return nil, notImpl("disks.List")
}
func (unimplementedDisks) Get(context.Context, uint32) (host.Disk, error) {
	return host.Disk{}, notImpl("disks.Get")
}
func (unimplementedDisks) Page83(context.Context, host.Disk) (string, error) {
	return "", notImpl("disks.Page83")
}
func (unimplementedDisks) Rescan(context.Context) error { return notImpl("disks.Rescan") }
func (unimplementedDisks) SetReadOnly(context.Context, host.Disk, bool) error {
	return notImpl("disks.SetReadOnly")
}
func (unimplementedDisks) SetOnline(context.Context, host.Disk, bool) error {
	return notImpl("disks.SetOnline")
}
func (unimplementedDisks) Initialize(context.Context, host.Disk, host.PartitionStyle) error {
	return notImpl("disks.Initialize")
}
func (unimplementedDisks) Partitions(context.Context, host.Disk) ([]host.Partition, error) {
	return nil, notImpl("disks.Partitions")
}
func (unimplementedDisks) CreatePartition(context.Context, host.Disk) (host.Partition, error) {
	return host.Partition{}, notImpl("disks.CreatePartition")
}
func (unimplementedDisks) MaxPartitionSize(context.Context, host.Partition) (uint64, error) {
	return 0, notImpl("disks.MaxPartitionSize")
}
func (unimplementedDisks) ResizePartition(context.Context, host.Partition, uint64) error {
	return notImpl("disks.ResizePartition")
}

type unimplementedVolumes struct{}

func (unimplementedVolumes) OfPartition(context.Context, host.Partition) (host.Volume, error) {
	return host.Volume{}, notImpl("volumes.OfPartition")
}
func (unimplementedVolumes) Get(context.Context, string) (host.Volume, error) {
	return host.Volume{}, notImpl("volumes.Get")
}
func (unimplementedVolumes) Format(context.Context, host.Volume, host.FormatOptions) (host.Volume, error) {
	return host.Volume{}, notImpl("volumes.Format")
}
func (unimplementedVolumes) Mount(context.Context, string, string) error {
	return notImpl("volumes.Mount")
}
func (unimplementedVolumes) Unmount(context.Context, string) error { return notImpl("volumes.Unmount") }
func (unimplementedVolumes) Flush(context.Context, string) error   { return notImpl("volumes.Flush") }
func (unimplementedVolumes) DiskNumber(context.Context, string) (uint32, error) {
	return 0, notImpl("volumes.DiskNumber")
}
func (unimplementedVolumes) FreeSpace(context.Context, string) (host.Space, error) {
	return host.Space{}, notImpl("volumes.FreeSpace")
}

type unimplementedFiles struct{}

func (unimplementedFiles) Stat(context.Context, string) (host.PathInfo, error) {
	return host.PathInfo{}, notImpl("files.Stat")
}
func (unimplementedFiles) MakeDir(context.Context, string) error { return notImpl("files.MakeDir") }
func (unimplementedFiles) Remove(context.Context, string) error  { return notImpl("files.Remove") }
func (unimplementedFiles) Symlink(context.Context, string, string) error {
	return notImpl("files.Symlink")
}
func (unimplementedFiles) IsEmptyDir(context.Context, string) (bool, error) {
	return false, notImpl("files.IsEmptyDir")
}
func (unimplementedFiles) ReadDir(context.Context, string) ([]string, error) {
	return nil, notImpl("files.ReadDir")
}

type unimplementedSMB struct{}

func (unimplementedSMB) Mapping(context.Context, string) (host.SMBMapping, error) {
	return host.SMBMapping{}, notImpl("smb.Mapping")
}
func (unimplementedSMB) Mappings(context.Context) ([]host.SMBMapping, error) {
	return nil, notImpl("smb.Mappings")
}
func (unimplementedSMB) Map(context.Context, string, host.Credential, bool) error {
	return notImpl("smb.Map")
}
func (unimplementedSMB) Unmap(context.Context, string) error { return notImpl("smb.Unmap") }
func (unimplementedSMB) Check(context.Context, string) error { return notImpl("smb.Check") }

type unimplementedISCSI struct{}

func (unimplementedISCSI) Portals(context.Context) ([]host.Portal, error) {
	return nil, notImpl("iscsi.Portals")
}
func (unimplementedISCSI) AddPortal(context.Context, host.Portal, string, *host.CHAP) error {
	return notImpl("iscsi.AddPortal")
}
func (unimplementedISCSI) RefreshPortal(context.Context, host.Portal) error {
	return notImpl("iscsi.RefreshPortal")
}
func (unimplementedISCSI) RemovePortal(context.Context, host.Portal) error {
	return notImpl("iscsi.RemovePortal")
}
func (unimplementedISCSI) Targets(context.Context, host.Portal) ([]host.ISCSITarget, error) {
	return nil, notImpl("iscsi.Targets")
}
func (unimplementedISCSI) Connect(context.Context, host.ConnectRequest) (host.ISCSISession, error) {
	return host.ISCSISession{}, notImpl("iscsi.Connect")
}
func (unimplementedISCSI) Sessions(context.Context, string) ([]host.ISCSISession, error) {
	return nil, notImpl("iscsi.Sessions")
}
func (unimplementedISCSI) Disconnect(context.Context, host.ISCSISession) error {
	return notImpl("iscsi.Disconnect")
}
func (unimplementedISCSI) Unregister(context.Context, host.ISCSISession) error {
	return notImpl("iscsi.Unregister")
}
func (unimplementedISCSI) SetInitiatorSecret(context.Context, host.Secret) error {
	return notImpl("iscsi.SetInitiatorSecret")
}
func (unimplementedISCSI) Register(context.Context, host.ISCSISession, bool, *host.CHAP) error {
	return notImpl("iscsi.Register")
}
func (unimplementedISCSI) SessionDisks(context.Context, host.ISCSISession) ([]uint32, error) {
	return nil, notImpl("iscsi.SessionDisks")
}
func (unimplementedISCSI) ReportLUNs(context.Context, string) ([]uint32, error) {
	return nil, notImpl("iscsi.ReportLUNs")
}

var (
	_ host.Disks   = unimplementedDisks{}
	_ host.Volumes = unimplementedVolumes{}
	_ host.Files   = unimplementedFiles{}
	_ host.SMB     = unimplementedSMB{}
	_ host.ISCSI   = unimplementedISCSI{}
)
