package winhost

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
)

// The scratch objects selftest makes and removes: a virtual disk, a local
// SMB share and user, a file's contents.

// VirtualDisks implements host.VirtualDisks with the virtual disk API
// (virtdisk.dll, learn.microsoft.com/windows/win32/api/virtdisk/).
type VirtualDisks struct{ e AdminExecutor }

var _ host.VirtualDisks = (*VirtualDisks)(nil)

// Create implements host.VirtualDisks.
func (v *VirtualDisks) Create(ctx context.Context, path string, size uint64) error {
	if err := v.e.CreateVirtualDisk(ctx, path, size); err != nil {
		return fmt.Errorf("create virtual disk %s: %w", path, mapHostErr(err))
	}
	return nil
}

// Attach implements host.VirtualDisks: the disk number is N of the
// physical path \\.\PhysicalDriveN that GetVirtualDiskPhysicalPath
// returns, the number MSFT_Disk.Number reports.
func (v *VirtualDisks) Attach(ctx context.Context, path string) (uint32, error) {
	phys, err := v.e.AttachVirtualDisk(ctx, path)
	if err != nil {
		return 0, fmt.Errorf("attach virtual disk %s: %w", path, mapHostErr(err))
	}
	n, err := physicalDriveNumber(phys)
	if err != nil {
		return 0, fmt.Errorf("attach virtual disk %s: %w", path, err)
	}
	return n, nil
}

// physicalDriveNumber reads N from \\.\PhysicalDriveN (case-insensitive).
func physicalDriveNumber(p string) (uint32, error) {
	const prefix = `\\.\physicaldrive`
	if len(p) <= len(prefix) || !strings.EqualFold(p[:len(prefix)], prefix) {
		return 0, fmt.Errorf("physical path %q is not \\\\.\\PhysicalDriveN", p)
	}
	n, err := strconv.ParseUint(p[len(prefix):], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("physical path %q is not \\\\.\\PhysicalDriveN", p)
	}
	return uint32(n), nil
}

// Resize implements host.VirtualDisks.
func (v *VirtualDisks) Resize(ctx context.Context, path string, size uint64) error {
	if err := v.e.ResizeVirtualDisk(ctx, path, size); err != nil {
		return fmt.Errorf("resize virtual disk %s to %d bytes: %w", path, size, mapHostErr(err))
	}
	return nil
}

// Detach implements host.VirtualDisks. What DetachVirtualDisk answers for
// a disk that is not attached is not documented
// (learn.microsoft.com/windows/win32/api/virtdisk/nf-virtdisk-detachvirtualdisk),
// so that error is returned as it comes; callers cleaning up remove the
// file anyway.
func (v *VirtualDisks) Detach(ctx context.Context, path string) error {
	if err := v.e.DetachVirtualDisk(ctx, path); err != nil {
		return fmt.Errorf("detach virtual disk %s: %w", path, mapHostErr(err))
	}
	return nil
}

// LocalSMB implements host.LocalSMB: local users through netapi32 and
// Win32_UserAccount, shares through MSFT_SmbShare.
type LocalSMB struct{ e AdminExecutor }

var _ host.LocalSMB = (*LocalSMB)(nil)

const classSmbShare = "MSFT_SmbShare"

// CreateUser implements host.LocalSMB.
func (l *LocalSMB) CreateUser(ctx context.Context, name string, password host.Secret) error {
	if err := l.e.NetUserAdd(ctx, name, password); err != nil {
		return fmt.Errorf("create local user %s: %w", name, mapHostErr(err))
	}
	return nil
}

// DeleteUser implements host.LocalSMB.
func (l *LocalSMB) DeleteUser(ctx context.Context, name string) error {
	if err := l.e.NetUserDel(ctx, name); err != nil {
		return fmt.Errorf("delete local user %s: %w", name, mapHostErr(err))
	}
	return nil
}

// Users implements host.LocalSMB: Win32_UserAccount restricted to local
// accounts (a domain member would otherwise enumerate its domain).
func (l *LocalSMB) Users(ctx context.Context) ([]string, error) {
	q, err := wql.Select("Win32_UserAccount", []string{"Name"}, wql.Eq("LocalAccount", true))
	if err != nil {
		return nil, err
	}
	insts, err := l.e.Query(ctx, NamespaceCIMV2, q)
	if err != nil {
		return nil, fmt.Errorf("list local users: %w", mapHostErr(err))
	}
	names := make([]string, 0, len(insts))
	for _, in := range insts {
		p := PropsOf(in)
		n := p.RequiredString("Name")
		if err := p.Err(); err != nil {
			return nil, fmt.Errorf("list local users: %w", err)
		}
		names = append(names, n)
	}
	return names, nil
}

// Rights of the share directory's DACL while it is shared: SYSTEM and
// Administrators full control, the share's user Modify (the "Modify" of
// File Security and Access Rights,
// learn.microsoft.com/windows/win32/fileio/file-security-and-access-rights),
// each inherited below (OI|CI), the DACL protected from inheritance. A
// share's own permissions do not admit a user the directory's DACL
// refuses.

// shareDACL is the DACL of a shared directory for the user's SID, set
// protected.
func shareDACL(userSID string) ([]byte, error) {
	acl := winacl.ACL{Revision: winacl.ACLRevision}
	for _, e := range []struct {
		sid  string
		mask uint32
	}{{winacl.SIDLocalSystem, winacl.FullControl}, {winacl.SIDAdministrators, winacl.FullControl}, {userSID, winacl.Modify}} {
		a, err := winacl.AllowACE(e.sid, e.mask, host.ACEInheritedBelow)
		if err != nil {
			return nil, err
		}
		acl.ACEs = append(acl.ACEs, a)
	}
	return acl.Bytes()
}

// CreateShare implements host.LocalSMB: the user's SID
// (LookupAccountNameW), the directory's DACL replaced by a protected one
// (Executor.UpdateFileDACL, as for volume roots: security.go), then the static
// MSFT_SmbShare.CreateShare with only parameters both Windows Server 2019
// and 23H2 define (learn.microsoft.com/previous-versions/windows/desktop/
// smb/createshare-msft-smbshare), Temporary so that a share a killed run
// left does not survive a restart of the server service.
func (l *LocalSMB) CreateShare(ctx context.Context, name, dir, user string) error {
	sid, err := NewSecurity(l.e).LookupAccountName(ctx, user)
	if err != nil {
		return fmt.Errorf("share %s: %w", name, err)
	}
	acl, err := shareDACL(sid)
	if err != nil {
		return fmt.Errorf("share %s: the DACL of %s: %w", name, dir, err)
	}
	set := func([]byte) ([]byte, uint32, error) {
		return acl, winacl.DACLSecurityInformation | winacl.ProtectedDACLSecurityInformation, nil
	}
	if err := l.e.UpdateFileDACL(ctx, dir, set); err != nil {
		return fmt.Errorf("share %s: grant %s access to %s: %w", name, user, dir, mapHostErr(err))
	}
	m := Method{Class: classSmbShare, Name: "CreateShare", In: []Param{
		{Name: "Name", Value: name},
		{Name: "Path", Value: dir},
		{Name: "Description", Value: "csi-windows-node selftest"},
		{Name: "Temporary", Value: true},
		{Name: "FullAccess", Value: []string{user}},
	}}
	if err := NewSMB(l.e).call(ctx, m, dir); err != nil {
		return fmt.Errorf("create share %s of %s: %w", name, dir, err)
	}
	return nil
}

// DeleteShare implements host.LocalSMB: MSFT_SmbShare has no method that
// removes a share (its methods are listed on
// learn.microsoft.com/previous-versions/windows/desktop/smb/msft-smbshare),
// so the instance itself is deleted (SWbemServices.Delete).
func (l *LocalSMB) DeleteShare(ctx context.Context, name string) error {
	insts, err := l.query(ctx, wql.Eq("Name", name))
	if err != nil {
		return err
	}
	if len(insts) == 0 {
		return fmt.Errorf("share %s: %w", name, host.ErrNotFound)
	}
	if insts[0].Path == "" {
		return fmt.Errorf("delete share %s: %w", name, &PropError{Class: classSmbShare, Prop: "__PATH"})
	}
	if err := l.e.DeleteInstance(ctx, NamespaceSMB, insts[0].Path); err != nil {
		return fmt.Errorf("delete share %s: %w", name, mapErr(classSmbShare, err))
	}
	return nil
}

// Shares implements host.LocalSMB.
func (l *LocalSMB) Shares(ctx context.Context) ([]host.LocalShare, error) {
	insts, err := l.query(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]host.LocalShare, 0, len(insts))
	for _, in := range insts {
		p := PropsOf(in)
		sh := host.LocalShare{Name: p.RequiredString("Name"), Path: p.String("Path")}
		if err := p.Err(); err != nil {
			return nil, fmt.Errorf("list shares: %w", err)
		}
		out = append(out, sh)
	}
	return out, nil
}

// shareProps are the MSFT_SmbShare properties read: Name and ScopeName
// are the class's keys (an instance's path is
// MSFT_SmbShare.Name="…",ScopeName="…"), and WMI gives a partial instance
// no usable __PATH unless every key is selected (as for MSFT_Disk's
// ObjectId, disks.go), which DeleteShare needs.
var shareProps = []string{"Name", "ScopeName", "Path"}

func (l *LocalSMB) query(ctx context.Context, conds ...wql.Cond) ([]Instance, error) {
	q, err := wql.Select(classSmbShare, shareProps, conds...)
	if err != nil {
		return nil, fmt.Errorf("build query on %s: %w: %w", classSmbShare, err, host.ErrInvalid)
	}
	insts, err := l.e.Query(ctx, NamespaceSMB, q)
	if err != nil {
		return nil, fmt.Errorf("list shares: %w", mapErr(classSmbShare, err))
	}
	return insts, nil
}

// FileData implements host.FileData with CreateFile, ReadFile, WriteFile
// and DeleteFile.
type FileData struct{ e AdminExecutor }

var _ host.FileData = (*FileData)(nil)

// WriteFile implements host.FileData.
func (f *FileData) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := f.e.WriteFile(ctx, path, data); err != nil {
		return fmt.Errorf("write %s: %w", path, mapHostErr(err))
	}
	return nil
}

// ReadFile implements host.FileData.
func (f *FileData) ReadFile(ctx context.Context, path string) ([]byte, error) {
	b, err := f.e.ReadFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, mapHostErr(err))
	}
	return b, nil
}

// RemoveFile implements host.FileData.
func (f *FileData) RemoveFile(ctx context.Context, path string) error {
	if err := f.e.DeleteFile(ctx, path); err != nil {
		return fmt.Errorf("remove %s: %w", path, mapHostErr(err))
	}
	return nil
}
