package host

import (
	"context"
	"fmt"
)

// Unimplemented returns a Host whose every method fails with
// ErrNotImplemented, naming the area. It stands for the parts of the Windows
// host whose executor has not been built, so that a request reaching them
// fails loudly (gRPC Unimplemented) instead of pretending to succeed.
func Unimplemented() Host {
	return Host{
		Disks:   unimplementedDisks{},
		Volumes: unimplementedVolumes{},
		Files:   unimplementedFiles{},
		SMB:     unimplementedSMB{},
		ISCSI:   unimplementedISCSI{},
	}
}

func notImpl(op string) error { return fmt.Errorf("%s: %w", op, ErrNotImplemented) }

type unimplementedDisks struct{}

func (unimplementedDisks) List(context.Context) ([]Disk, error) { return nil, notImpl("disks.List") }
func (unimplementedDisks) Get(context.Context, uint32) (Disk, error) {
	return Disk{}, notImpl("disks.Get")
}
func (unimplementedDisks) Page83(context.Context, Disk) (string, error) {
	return "", notImpl("disks.Page83")
}
func (unimplementedDisks) Rescan(context.Context) error { return notImpl("disks.Rescan") }
func (unimplementedDisks) SetReadOnly(context.Context, Disk, bool) error {
	return notImpl("disks.SetReadOnly")
}
func (unimplementedDisks) SetOnline(context.Context, Disk, bool) error {
	return notImpl("disks.SetOnline")
}
func (unimplementedDisks) Initialize(context.Context, Disk, PartitionStyle) error {
	return notImpl("disks.Initialize")
}
func (unimplementedDisks) Partitions(context.Context, Disk) ([]Partition, error) {
	return nil, notImpl("disks.Partitions")
}
func (unimplementedDisks) CreatePartition(context.Context, Disk) (Partition, error) {
	return Partition{}, notImpl("disks.CreatePartition")
}
func (unimplementedDisks) MaxPartitionSize(context.Context, Partition) (uint64, error) {
	return 0, notImpl("disks.MaxPartitionSize")
}
func (unimplementedDisks) ResizePartition(context.Context, Partition, uint64) error {
	return notImpl("disks.ResizePartition")
}

type unimplementedVolumes struct{}

func (unimplementedVolumes) OfPartition(context.Context, Partition) (Volume, error) {
	return Volume{}, notImpl("volumes.OfPartition")
}
func (unimplementedVolumes) Get(context.Context, string) (Volume, error) {
	return Volume{}, notImpl("volumes.Get")
}
func (unimplementedVolumes) Format(context.Context, Volume, FormatOptions) (Volume, error) {
	return Volume{}, notImpl("volumes.Format")
}
func (unimplementedVolumes) Mount(context.Context, string, string) error {
	return notImpl("volumes.Mount")
}
func (unimplementedVolumes) Unmount(context.Context, string) error { return notImpl("volumes.Unmount") }
func (unimplementedVolumes) Flush(context.Context, string) error   { return notImpl("volumes.Flush") }
func (unimplementedVolumes) DiskNumber(context.Context, string) (uint32, error) {
	return 0, notImpl("volumes.DiskNumber")
}
func (unimplementedVolumes) FreeSpace(context.Context, string) (Space, error) {
	return Space{}, notImpl("volumes.FreeSpace")
}

type unimplementedFiles struct{}

func (unimplementedFiles) Stat(context.Context, string) (PathInfo, error) {
	return PathInfo{}, notImpl("files.Stat")
}
func (unimplementedFiles) MakeDir(context.Context, string) error { return notImpl("files.MakeDir") }
func (unimplementedFiles) Remove(context.Context, string) error  { return notImpl("files.Remove") }
func (unimplementedFiles) Symlink(context.Context, string, string) error {
	return notImpl("files.Symlink")
}
func (unimplementedFiles) IsEmptyDir(context.Context, string) (bool, error) {
	return false, notImpl("files.IsEmptyDir")
}

type unimplementedSMB struct{}

func (unimplementedSMB) Mapping(context.Context, string) (SMBMapping, error) {
	return SMBMapping{}, notImpl("smb.Mapping")
}
func (unimplementedSMB) Map(context.Context, string, Credential, bool) error {
	return notImpl("smb.Map")
}
func (unimplementedSMB) Unmap(context.Context, string) error { return notImpl("smb.Unmap") }
func (unimplementedSMB) Check(context.Context, string) error { return notImpl("smb.Check") }

type unimplementedISCSI struct{}

func (unimplementedISCSI) Portals(context.Context) ([]Portal, error) {
	return nil, notImpl("iscsi.Portals")
}
func (unimplementedISCSI) AddPortal(context.Context, Portal, string, *CHAP) error {
	return notImpl("iscsi.AddPortal")
}
func (unimplementedISCSI) RefreshPortal(context.Context, Portal) error {
	return notImpl("iscsi.RefreshPortal")
}
func (unimplementedISCSI) RemovePortal(context.Context, Portal) error {
	return notImpl("iscsi.RemovePortal")
}
func (unimplementedISCSI) Targets(context.Context, Portal) ([]ISCSITarget, error) {
	return nil, notImpl("iscsi.Targets")
}
func (unimplementedISCSI) Connect(context.Context, ConnectRequest) (ISCSISession, error) {
	return ISCSISession{}, notImpl("iscsi.Connect")
}
func (unimplementedISCSI) Sessions(context.Context, string) ([]ISCSISession, error) {
	return nil, notImpl("iscsi.Sessions")
}
func (unimplementedISCSI) Disconnect(context.Context, ISCSISession) error {
	return notImpl("iscsi.Disconnect")
}
func (unimplementedISCSI) Unregister(context.Context, ISCSISession) error {
	return notImpl("iscsi.Unregister")
}
func (unimplementedISCSI) SetInitiatorSecret(context.Context, Secret) error {
	return notImpl("iscsi.SetInitiatorSecret")
}
func (unimplementedISCSI) SessionDisks(context.Context, ISCSISession) ([]uint32, error) {
	return nil, notImpl("iscsi.SessionDisks")
}

var (
	_ Disks   = unimplementedDisks{}
	_ Volumes = unimplementedVolumes{}
	_ Files   = unimplementedFiles{}
	_ SMB     = unimplementedSMB{}
	_ ISCSI   = unimplementedISCSI{}
)

func (unimplementedISCSI) Register(context.Context, ISCSISession, bool, *CHAP) error {
	return notImpl("iscsi.Register")
}
