package hostmetrics

import (
	"context"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

type disks struct {
	next host.Disks
	m    *Metrics
}

var _ host.Disks = disks{}

func (d disks) List(ctx context.Context) ([]host.Disk, error) {
	start := time.Now()
	v, err := d.next.List(ctx)
	d.m.observe(AreaDisks, "List", start, err)
	return v, err
}

func (d disks) Get(ctx context.Context, number uint32) (host.Disk, error) {
	start := time.Now()
	v, err := d.next.Get(ctx, number)
	d.m.observe(AreaDisks, "Get", start, err)
	return v, err
}

func (d disks) Page83(ctx context.Context, disk host.Disk) (string, error) {
	start := time.Now()
	v, err := d.next.Page83(ctx, disk)
	d.m.observe(AreaDisks, "Page83", start, err)
	return v, err
}

func (d disks) Rescan(ctx context.Context) error {
	start := time.Now()
	err := d.next.Rescan(ctx)
	d.m.observe(AreaDisks, "Rescan", start, err)
	return err
}

func (d disks) SetReadOnly(ctx context.Context, disk host.Disk, readOnly bool) error {
	start := time.Now()
	err := d.next.SetReadOnly(ctx, disk, readOnly)
	d.m.observe(AreaDisks, "SetReadOnly", start, err)
	return err
}

func (d disks) SetOnline(ctx context.Context, disk host.Disk, online bool) error {
	start := time.Now()
	err := d.next.SetOnline(ctx, disk, online)
	d.m.observe(AreaDisks, "SetOnline", start, err)
	return err
}

func (d disks) Initialize(ctx context.Context, disk host.Disk, style host.PartitionStyle) error {
	start := time.Now()
	err := d.next.Initialize(ctx, disk, style)
	d.m.observe(AreaDisks, "Initialize", start, err)
	return err
}

func (d disks) Partitions(ctx context.Context, disk host.Disk) ([]host.Partition, error) {
	start := time.Now()
	v, err := d.next.Partitions(ctx, disk)
	d.m.observe(AreaDisks, "Partitions", start, err)
	return v, err
}

func (d disks) CreatePartition(ctx context.Context, disk host.Disk) (host.Partition, error) {
	start := time.Now()
	v, err := d.next.CreatePartition(ctx, disk)
	d.m.observe(AreaDisks, "CreatePartition", start, err)
	return v, err
}

func (d disks) MaxPartitionSize(ctx context.Context, p host.Partition) (uint64, error) {
	start := time.Now()
	v, err := d.next.MaxPartitionSize(ctx, p)
	d.m.observe(AreaDisks, "MaxPartitionSize", start, err)
	return v, err
}

func (d disks) ResizePartition(ctx context.Context, p host.Partition, size uint64) error {
	start := time.Now()
	err := d.next.ResizePartition(ctx, p, size)
	d.m.observe(AreaDisks, "ResizePartition", start, err)
	return err
}

type volumes struct {
	next host.Volumes
	m    *Metrics
}

var _ host.Volumes = volumes{}

func (v volumes) OfPartition(ctx context.Context, p host.Partition) (host.Volume, error) {
	start := time.Now()
	r, err := v.next.OfPartition(ctx, p)
	v.m.observe(AreaVolumes, "OfPartition", start, err)
	return r, err
}

func (v volumes) Get(ctx context.Context, guidPath string) (host.Volume, error) {
	start := time.Now()
	r, err := v.next.Get(ctx, guidPath)
	v.m.observe(AreaVolumes, "Get", start, err)
	return r, err
}

func (v volumes) Format(ctx context.Context, vol host.Volume, o host.FormatOptions) (host.Volume, error) {
	start := time.Now()
	r, err := v.next.Format(ctx, vol, o)
	v.m.observe(AreaVolumes, "Format", start, err)
	return r, err
}

func (v volumes) Mount(ctx context.Context, guidPath, dir string) error {
	start := time.Now()
	err := v.next.Mount(ctx, guidPath, dir)
	v.m.observe(AreaVolumes, "Mount", start, err)
	return err
}

func (v volumes) Unmount(ctx context.Context, dir string) error {
	start := time.Now()
	err := v.next.Unmount(ctx, dir)
	v.m.observe(AreaVolumes, "Unmount", start, err)
	return err
}

func (v volumes) Flush(ctx context.Context, guidPath string) error {
	start := time.Now()
	err := v.next.Flush(ctx, guidPath)
	v.m.observe(AreaVolumes, "Flush", start, err)
	return err
}

func (v volumes) DiskNumber(ctx context.Context, guidPath string) (uint32, error) {
	start := time.Now()
	r, err := v.next.DiskNumber(ctx, guidPath)
	v.m.observe(AreaVolumes, "DiskNumber", start, err)
	return r, err
}

func (v volumes) FreeSpace(ctx context.Context, path string) (host.Space, error) {
	start := time.Now()
	r, err := v.next.FreeSpace(ctx, path)
	v.m.observe(AreaVolumes, "FreeSpace", start, err)
	return r, err
}

type files struct {
	next host.Files
	m    *Metrics
}

var _ host.Files = files{}

func (f files) Stat(ctx context.Context, path string) (host.PathInfo, error) {
	start := time.Now()
	r, err := f.next.Stat(ctx, path)
	f.m.observe(AreaFiles, "Stat", start, err)
	return r, err
}

func (f files) MakeDir(ctx context.Context, path string) error {
	start := time.Now()
	err := f.next.MakeDir(ctx, path)
	f.m.observe(AreaFiles, "MakeDir", start, err)
	return err
}

func (f files) Remove(ctx context.Context, path string) error {
	start := time.Now()
	err := f.next.Remove(ctx, path)
	f.m.observe(AreaFiles, "Remove", start, err)
	return err
}

func (f files) Symlink(ctx context.Context, link, target string) error {
	start := time.Now()
	err := f.next.Symlink(ctx, link, target)
	f.m.observe(AreaFiles, "Symlink", start, err)
	return err
}

func (f files) IsEmptyDir(ctx context.Context, path string) (bool, error) {
	start := time.Now()
	r, err := f.next.IsEmptyDir(ctx, path)
	f.m.observe(AreaFiles, "IsEmptyDir", start, err)
	return r, err
}

func (f files) ReadDir(ctx context.Context, path string) ([]string, error) {
	start := time.Now()
	r, err := f.next.ReadDir(ctx, path)
	f.m.observe(AreaFiles, "ReadDir", start, err)
	return r, err
}

type smb struct {
	next host.SMB
	m    *Metrics
}

var _ host.SMB = smb{}

func (s smb) Mapping(ctx context.Context, remotePath string) (host.SMBMapping, error) {
	start := time.Now()
	r, err := s.next.Mapping(ctx, remotePath)
	s.m.observe(AreaSMB, "Mapping", start, err)
	return r, err
}

func (s smb) Mappings(ctx context.Context) ([]host.SMBMapping, error) {
	start := time.Now()
	r, err := s.next.Mappings(ctx)
	s.m.observe(AreaSMB, "Mappings", start, err)
	return r, err
}

func (s smb) Map(ctx context.Context, remotePath string, cred host.Credential, requirePrivacy bool) error {
	start := time.Now()
	err := s.next.Map(ctx, remotePath, cred, requirePrivacy)
	s.m.observe(AreaSMB, "Map", start, err)
	return err
}

func (s smb) Unmap(ctx context.Context, remotePath string) error {
	start := time.Now()
	err := s.next.Unmap(ctx, remotePath)
	s.m.observe(AreaSMB, "Unmap", start, err)
	return err
}

func (s smb) Check(ctx context.Context, uncPath string) error {
	start := time.Now()
	err := s.next.Check(ctx, uncPath)
	s.m.observe(AreaSMB, "Check", start, err)
	return err
}

type iscsi struct {
	next host.ISCSI
	m    *Metrics
}

var _ host.ISCSI = iscsi{}

func (i iscsi) Portals(ctx context.Context) ([]host.Portal, error) {
	start := time.Now()
	r, err := i.next.Portals(ctx)
	i.m.observe(AreaISCSI, "Portals", start, err)
	return r, err
}

func (i iscsi) AddPortal(ctx context.Context, p host.Portal, initiatorPortal string, chap *host.CHAP) error {
	start := time.Now()
	err := i.next.AddPortal(ctx, p, initiatorPortal, chap)
	i.m.observe(AreaISCSI, "AddPortal", start, err)
	return err
}

func (i iscsi) RefreshPortal(ctx context.Context, p host.Portal) error {
	start := time.Now()
	err := i.next.RefreshPortal(ctx, p)
	i.m.observe(AreaISCSI, "RefreshPortal", start, err)
	return err
}

func (i iscsi) RemovePortal(ctx context.Context, p host.Portal) error {
	start := time.Now()
	err := i.next.RemovePortal(ctx, p)
	i.m.observe(AreaISCSI, "RemovePortal", start, err)
	return err
}

func (i iscsi) Targets(ctx context.Context, p host.Portal) ([]host.ISCSITarget, error) {
	start := time.Now()
	r, err := i.next.Targets(ctx, p)
	i.m.observe(AreaISCSI, "Targets", start, err)
	return r, err
}

func (i iscsi) Connect(ctx context.Context, r host.ConnectRequest) (host.ISCSISession, error) {
	start := time.Now()
	s, err := i.next.Connect(ctx, r)
	i.m.observe(AreaISCSI, "Connect", start, err)
	return s, err
}

func (i iscsi) Sessions(ctx context.Context, iqn string) ([]host.ISCSISession, error) {
	start := time.Now()
	r, err := i.next.Sessions(ctx, iqn)
	i.m.observe(AreaISCSI, "Sessions", start, err)
	return r, err
}

func (i iscsi) Disconnect(ctx context.Context, s host.ISCSISession) error {
	start := time.Now()
	err := i.next.Disconnect(ctx, s)
	i.m.observe(AreaISCSI, "Disconnect", start, err)
	return err
}

func (i iscsi) Register(ctx context.Context, s host.ISCSISession, multipath bool, chap *host.CHAP) error {
	start := time.Now()
	err := i.next.Register(ctx, s, multipath, chap)
	i.m.observe(AreaISCSI, "Register", start, err)
	return err
}

func (i iscsi) Unregister(ctx context.Context, s host.ISCSISession) error {
	start := time.Now()
	err := i.next.Unregister(ctx, s)
	i.m.observe(AreaISCSI, "Unregister", start, err)
	return err
}

func (i iscsi) SetInitiatorSecret(ctx context.Context, secret host.Secret) error {
	start := time.Now()
	err := i.next.SetInitiatorSecret(ctx, secret)
	i.m.observe(AreaISCSI, "SetInitiatorSecret", start, err)
	return err
}

func (i iscsi) SessionDisks(ctx context.Context, s host.ISCSISession) ([]uint32, error) {
	start := time.Now()
	r, err := i.next.SessionDisks(ctx, s)
	i.m.observe(AreaISCSI, "SessionDisks", start, err)
	return r, err
}

func (i iscsi) ReportLUNs(ctx context.Context, iqn string) ([]uint32, error) {
	start := time.Now()
	r, err := i.next.ReportLUNs(ctx, iqn)
	i.m.observe(AreaISCSI, "ReportLUNs", start, err)
	return r, err
}
