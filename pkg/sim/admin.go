package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// The operator's calls (host.Admin) on the simulated host: the node's
// configuration as preflight reads it, and the scratch objects selftest
// makes. The node the sim stands for is a Windows Server 2022 as Microsoft
// documents its defaults: the Workstation service automatic and running,
// the iSCSI initiator service MSiSCSI manual and stopped ("Guidance on
// disabling system services on Windows Server",
// learn.microsoft.com/windows-server/security/windows-services/security-guidelines-for-disabling-system-services-in-windows-server),
// Multipath-IO not installed, the SAN policy OfflineShared (the default
// since Windows Server 2016: learn.microsoft.com/windows/win32/api/vds/
// ne-vds-vds_san_policy). Every local path lies on one fixed NTFS volume.

// Op names of the admin calls (counted, logged and open to fault rules
// like the host calls; they are not in AllOps, which lists host.Host's).
const (
	OpSystemOS              = "system.OS"
	OpSystemToken           = "system.Token"
	OpSystemPathVolume      = "system.PathVolume"
	OpSystemSecurity        = "system.DirectoryDACL"
	OpSystemService         = "system.Service"
	OpSystemSetAutoStart    = "system.SetServiceAutoStart"
	OpSystemStartService    = "system.StartService"
	OpSystemFeature         = "system.OptionalFeature"
	OpSystemDSMDevices      = "system.DSMSupportedDevices"
	OpSystemNVMe            = "system.NativeNVMeRequested"
	OpSystemNewDiskPolicy   = "system.NewDiskPolicy"
	OpVirtualDiskCreate     = "vdisk.Create"
	OpVirtualDiskAttach     = "vdisk.Attach"
	OpVirtualDiskResize     = "vdisk.Resize"
	OpVirtualDiskDetach     = "vdisk.Detach"
	OpLocalSMBCreateUser    = "localsmb.CreateUser"
	OpLocalSMBDeleteUser    = "localsmb.DeleteUser"
	OpLocalSMBUsers         = "localsmb.Users"
	OpLocalSMBCreateShare   = "localsmb.CreateShare"
	OpLocalSMBDeleteShare   = "localsmb.DeleteShare"
	OpLocalSMBShares        = "localsmb.Shares"
	OpFileDataWriteFile     = "filedata.WriteFile"
	OpFileDataReadFile      = "filedata.ReadFile"
	OpFileDataRemoveFile    = "filedata.RemoveFile"
	simComputerName         = "SIMNODE"
	simBuild                = 20348
	simVolumeRoot           = "/"
	virtualDiskFileContents = "simulated VHDX: its disk is in state.json\n"
)

// AdminOps lists the admin op names.
var AdminOps = []string{
	OpSystemOS, OpSystemToken, OpSystemPathVolume, OpSystemSecurity, OpSystemService, OpSystemSetAutoStart,
	OpSystemStartService, OpSystemFeature, OpSystemDSMDevices, OpSystemNVMe, OpSystemNewDiskPolicy,
	OpVirtualDiskCreate, OpVirtualDiskAttach, OpVirtualDiskResize, OpVirtualDiskDetach,
	OpLocalSMBCreateUser, OpLocalSMBDeleteUser, OpLocalSMBUsers, OpLocalSMBCreateShare, OpLocalSMBDeleteShare,
	OpLocalSMBShares, OpFileDataWriteFile, OpFileDataReadFile, OpFileDataRemoveFile,
}

// adminReadOps are the admin calls a read-only Sim answers.
var adminReadOps = []string{
	OpSystemOS, OpSystemToken, OpSystemPathVolume, OpSystemSecurity, OpSystemService, OpSystemFeature,
	OpSystemDSMDevices, OpSystemNVMe, OpSystemNewDiskPolicy, OpLocalSMBUsers, OpLocalSMBShares, OpFileDataReadFile,
}

func init() {
	for _, op := range adminReadOps {
		readOps[op] = true
	}
}

// ServiceRecord is a service whose state or start type differs from the
// documented default (defaultServices).
type ServiceRecord struct {
	Name      string            `json:"name"`
	State     host.ServiceState `json:"state"`
	StartType host.StartType    `json:"startType"`
}

// defaultServices are the services the simulated node has, as a fresh
// Windows Server has them (see the top of this file).
var defaultServices = []ServiceRecord{
	{Name: "LanmanWorkstation", State: host.ServiceRunning, StartType: host.StartAuto},
	{Name: "LanmanServer", State: host.ServiceRunning, StartType: host.StartAuto},
	{Name: "MSiSCSI", State: host.ServiceStopped, StartType: host.StartManual},
	{Name: "smphost", State: host.ServiceStopped, StartType: host.StartManual},
}

// VirtualDiskRecord is a VHDX file: its size and, while it is detached,
// its contents (the disk it becomes when attached).
type VirtualDiskRecord struct {
	Path string `json:"path"`
	Size uint64 `json:"size"`
	// DiskID is the attached disk's ID ("" while detached).
	DiskID string `json:"diskID,omitempty"`
	// Contents holds the partitions while detached.
	PartitionStyle host.PartitionStyle `json:"partitionStyle"`
	Partitions     []PartitionState    `json:"partitions,omitempty"`
}

// LocalUserRecord is a local account of the simulated node.
type LocalUserRecord struct {
	Name           string `json:"name"`
	PasswordSHA256 string `json:"passwordSHA256"`
}

// LocalShareRecord is a share of the simulated node itself: a share of
// the server named SIMNODE (Shares), whose directory is Dir. Its contents
// live, like every simulated share's, under <Dir>/smb/simnode/<name>.
type LocalShareRecord struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
}

// Admin returns the operator's calls on the simulated host.
func (s *Sim) Admin() host.Admin {
	return host.Admin{System: system{s}, VirtualDisks: virtualDisks{s}, LocalSMB: localSMB{s}, FileData: fileData{s}}
}

// SetService sets a service's state and start type (a control operation,
// for tests): the node as an operator left it.
func (s *Sim) SetService(name string, state host.ServiceState, start host.StartType) error {
	return s.control(func(st *State) error {
		st.setService(ServiceRecord{Name: name, State: state, StartType: start})
		return nil
	})
}

func (st *State) service(name string) (ServiceRecord, bool) {
	for _, list := range [][]ServiceRecord{st.Services, defaultServices} {
		for _, r := range list {
			if strings.EqualFold(r.Name, name) {
				return r, true
			}
		}
	}
	return ServiceRecord{}, false
}

func (st *State) setService(r ServiceRecord) {
	for i := range st.Services {
		if strings.EqualFold(st.Services[i].Name, r.Name) {
			st.Services[i] = r
			return
		}
	}
	st.Services = append(st.Services, r)
}

type system struct{ s *Sim }

func (h system) OS(ctx context.Context) (host.OSInfo, error) {
	return call(ctx, h.s, OpSystemOS, false, func(*State) (host.OSInfo, error) {
		return host.OSInfo{Caption: "Microsoft Windows Server 2022 Datacenter (simulated)", Version: "10.0.20348",
			Build: simBuild, DisplayVersion: "21H2", ProductType: host.ProductServer, ComputerName: simComputerName}, nil
	})
}

func (h system) Token(ctx context.Context) (host.Token, error) {
	return call(ctx, h.s, OpSystemToken, false, func(*State) (host.Token, error) {
		return host.Token{User: winacl.SIDLocalSystem, System: true, Administrators: true, Elevated: true}, nil
	})
}

func (h system) PathVolume(ctx context.Context, path string) (host.PathVolume, error) {
	return call(ctx, h.s, OpSystemPathVolume, false, func(*State) (host.PathVolume, error) {
		if _, err := cleanAbs(path); err != nil {
			return host.PathVolume{}, err
		}
		return host.PathVolume{Root: simVolumeRoot, DriveType: host.DriveFixed, FileSystem: "NTFS"}, nil
	})
}

// DirectoryDACL renders the Linux permissions of path as the DACL Windows
// would show for the same access: SYSTEM and Administrators full control,
// Everyone (S-1-1-0) full control when the path is writable by all, Users
// (S-1-5-32-545) read and execute when it is readable by all.
func (h system) DirectoryDACL(ctx context.Context, path string) (host.DACL, error) {
	return call(ctx, h.s, OpSystemSecurity, false, func(*State) (host.DACL, error) {
		p, err := cleanAbs(path)
		if err != nil {
			return host.DACL{}, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return host.DACL{}, pathError("path", p, err)
		}
		allow := func(sid string, mask uint32) host.ACE {
			return host.ACE{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: mask, SID: sid}
		}
		d := host.DACL{Protected: true, Entries: []host.ACE{allow(winacl.SIDLocalSystem, winacl.FullControl), allow(winacl.SIDAdministrators, winacl.FullControl)}}
		if fi.Mode().Perm()&0o002 != 0 {
			d.Entries = append(d.Entries, allow(winacl.SIDEveryone, winacl.FullControl))
		}
		if fi.Mode().Perm()&0o004 != 0 {
			d.Entries = append(d.Entries, allow(winacl.SIDUsers, winacl.ReadExecute))
		}
		return d, nil
	})
}

func (h system) Service(ctx context.Context, name string) (host.Service, error) {
	return call(ctx, h.s, OpSystemService, false, func(st *State) (host.Service, error) {
		r, ok := st.service(name)
		if !ok {
			return host.Service{}, fmt.Errorf("service %s: %w", name, host.ErrNotFound)
		}
		return host.Service{Name: name, State: r.State, StartType: r.StartType}, nil
	})
}

func (h system) SetServiceAutoStart(ctx context.Context, name string) error {
	_, err := call(ctx, h.s, OpSystemSetAutoStart, true, func(st *State) (struct{}, error) {
		r, ok := st.service(name)
		if !ok {
			return struct{}{}, fmt.Errorf("service %s: %w", name, host.ErrNotFound)
		}
		r.StartType = host.StartAuto
		st.setService(r)
		return struct{}{}, nil
	})
	return err
}

func (h system) StartService(ctx context.Context, name string) error {
	_, err := call(ctx, h.s, OpSystemStartService, true, func(st *State) (struct{}, error) {
		r, ok := st.service(name)
		switch {
		case !ok:
			return struct{}{}, fmt.Errorf("service %s: %w", name, host.ErrNotFound)
		case r.StartType == host.StartDisabled:
			return struct{}{}, fmt.Errorf("service %s is disabled: %w", name, host.ErrConflict)
		}
		r.State = host.ServiceRunning
		st.setService(r)
		return struct{}{}, nil
	})
	return err
}

func (h system) OptionalFeature(ctx context.Context, name string) (host.FeatureState, error) {
	return call(ctx, h.s, OpSystemFeature, false, func(*State) (host.FeatureState, error) {
		if strings.EqualFold(name, "MultiPathIO") {
			return host.FeatureDisabled, nil
		}
		return host.FeatureUnknown, nil
	})
}

func (h system) DSMSupportedDevices(ctx context.Context) ([]string, error) {
	return call(ctx, h.s, OpSystemDSMDevices, false, func(*State) ([]string, error) {
		return nil, fmt.Errorf("the Microsoft DSM's device list: %w", host.ErrNotFound)
	})
}

func (h system) NativeNVMeRequested(ctx context.Context) (bool, error) {
	return call(ctx, h.s, OpSystemNVMe, false, func(*State) (bool, error) { return false, nil })
}

func (h system) NewDiskPolicy(ctx context.Context) (host.SANPolicy, error) {
	return call(ctx, h.s, OpSystemNewDiskPolicy, false, func(*State) (host.SANPolicy, error) {
		return host.SANPolicyOfflineShared, nil
	})
}

// virtualDisks keeps each VHDX as a small marker file at its path (so that
// directory listings and removals see it) and its disk in the model.
type virtualDisks struct{ s *Sim }

func (st *State) virtualDisk(path string) *VirtualDiskRecord {
	for i := range st.VirtualDisks {
		if st.VirtualDisks[i].Path == path {
			return &st.VirtualDisks[i]
		}
	}
	return nil
}

func (h virtualDisks) Create(ctx context.Context, path string, size uint64) error {
	_, err := call(ctx, h.s, OpVirtualDiskCreate, true, func(st *State) (struct{}, error) {
		p, err := cleanAbs(path)
		if err != nil {
			return struct{}{}, err
		}
		if size == 0 || size%sectorSize != 0 {
			return struct{}{}, fmt.Errorf("virtual disk %s: size %d is not a positive multiple of %d: %w", p, size, sectorSize, host.ErrInvalid)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if err != nil {
			return struct{}{}, pathError("virtual disk", p, err)
		}
		_, werr := f.WriteString(virtualDiskFileContents)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return struct{}{}, pathError("virtual disk", p, werr)
		}
		if old := st.virtualDisk(p); old != nil {
			*old = VirtualDiskRecord{Path: p, Size: size} // the file of a record was removed behind the sim's back
			return struct{}{}, nil
		}
		st.VirtualDisks = append(st.VirtualDisks, VirtualDiskRecord{Path: p, Size: size})
		return struct{}{}, nil
	})
	return err
}

// vdiskOf finds the record of an existing VHDX file.
func vdiskOf(st *State, path string) (*VirtualDiskRecord, error) {
	p, err := cleanAbs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(p); err != nil {
		return nil, pathError("virtual disk", p, err)
	}
	v := st.virtualDisk(p)
	if v == nil {
		return nil, fmt.Errorf("%s is not a virtual disk: %w", p, host.ErrInvalid)
	}
	return v, nil
}

// attachedDisk returns the disk of an attached VHDX, or nil.
func (st *State) attachedDisk(v *VirtualDiskRecord) *DiskState {
	if v.DiskID == "" {
		return nil
	}
	for i := range st.Disks {
		if st.Disks[i].ID == v.DiskID {
			return &st.Disks[i]
		}
	}
	return nil
}

// Attach brings the disk online (a file-backed disk is not on a shared
// bus, so the OfflineShared policy leaves it online: the VDS_SAN_POLICY
// definitions) and writable, as BusType File Backed Virtual.
func (h virtualDisks) Attach(ctx context.Context, path string) (uint32, error) {
	return call(ctx, h.s, OpVirtualDiskAttach, true, func(st *State) (uint32, error) {
		v, err := vdiskOf(st, path)
		if err != nil {
			return 0, err
		}
		if d := st.attachedDisk(v); d != nil {
			return 0, fmt.Errorf("virtual disk %s is attached as disk %d: %w", v.Path, d.Number, host.ErrInUse)
		}
		n := st.addDisk(DiskState{Size: v.Size, BusType: host.BusTypeFileBacked, Health: host.HealthHealthy,
			PartitionStyle: v.PartitionStyle, Partitions: v.Partitions})
		v.DiskID, v.Partitions = st.diskByNumber(n).ID, nil
		return n, nil
	})
}

// Resize sets the new size the host sees after the next Rescan, like a
// cloud disk's expansion (ResizeDisk).
func (h virtualDisks) Resize(ctx context.Context, path string, size uint64) error {
	_, err := call(ctx, h.s, OpVirtualDiskResize, true, func(st *State) (struct{}, error) {
		v, err := vdiskOf(st, path)
		if err != nil {
			return struct{}{}, err
		}
		if size < v.Size || size%sectorSize != 0 {
			return struct{}{}, fmt.Errorf("virtual disk %s: size %d: only growth to a multiple of %d: %w", v.Path, size, sectorSize, host.ErrOutOfRange)
		}
		v.Size = size
		if d := st.attachedDisk(v); d != nil && size != d.Size {
			d.PendingSize = size
		}
		return struct{}{}, nil
	})
	return err
}

// Detach answers nil for a disk that is not attached (one of the answers
// the contract allows).
func (h virtualDisks) Detach(ctx context.Context, path string) error {
	_, err := call(ctx, h.s, OpVirtualDiskDetach, true, func(st *State) (struct{}, error) {
		v, err := vdiskOf(st, path)
		if err != nil {
			return struct{}{}, err
		}
		if d := st.attachedDisk(v); d != nil {
			v.PartitionStyle, v.Partitions = d.PartitionStyle, d.Partitions
			st.removeDisk(d.ID)
		}
		v.DiskID = ""
		return struct{}{}, nil
	})
	return err
}

type localSMB struct{ s *Sim }

func (st *State) localUser(name string) int {
	return slices.IndexFunc(st.LocalUsers, func(u LocalUserRecord) bool { return strings.EqualFold(u.Name, name) })
}

func (h localSMB) CreateUser(ctx context.Context, name string, password host.Secret) error {
	_, err := call(ctx, h.s, OpLocalSMBCreateUser, true, func(st *State) (struct{}, error) {
		if name == "" || len(name) > 20 || strings.ContainsAny(name, `"/\[]:;|=,+*?<>@`) {
			return struct{}{}, fmt.Errorf("user name %q: %w", name, host.ErrInvalid)
		}
		if st.localUser(name) >= 0 {
			return struct{}{}, fmt.Errorf("local user %s: %w", name, host.ErrAlreadyExists)
		}
		st.LocalUsers = append(st.LocalUsers, LocalUserRecord{Name: name, PasswordSHA256: st.hash(password.Reveal())})
		return struct{}{}, nil
	})
	return err
}

// DeleteUser also takes the account off the node's shares: a deleted
// account no longer logs on.
func (h localSMB) DeleteUser(ctx context.Context, name string) error {
	_, err := call(ctx, h.s, OpLocalSMBDeleteUser, true, func(st *State) (struct{}, error) {
		i := st.localUser(name)
		if i < 0 {
			return struct{}{}, fmt.Errorf("local user %s: %w", name, host.ErrNotFound)
		}
		st.LocalUsers = append(st.LocalUsers[:i], st.LocalUsers[i+1:]...)
		for j := range st.Shares {
			sh := &st.Shares[j]
			if strings.EqualFold(sh.Server, simComputerName) {
				sh.Users = slices.DeleteFunc(sh.Users, func(u ShareUser) bool {
					return strings.EqualFold(u.Name, name) || strings.EqualFold(u.Name, simComputerName+`\`+name)
				})
			}
		}
		return struct{}{}, nil
	})
	return err
}

func (h localSMB) Users(ctx context.Context) ([]string, error) {
	return call(ctx, h.s, OpLocalSMBUsers, false, func(st *State) ([]string, error) {
		out := []string{"Administrator"}
		for _, u := range st.LocalUsers {
			out = append(out, u.Name)
		}
		return out, nil
	})
}

func (h localSMB) CreateShare(ctx context.Context, name, dir, user string) error {
	_, err := call(ctx, h.s, OpLocalSMBCreateShare, true, func(st *State) (struct{}, error) {
		d, err := cleanAbs(dir)
		if err != nil {
			return struct{}{}, err
		}
		if fi, err := os.Stat(d); err != nil {
			return struct{}{}, pathError("share directory", d, err)
		} else if !fi.IsDir() {
			return struct{}{}, fmt.Errorf("share directory %s is not a directory: %w", d, host.ErrInvalid)
		}
		i := st.localUser(user)
		if i < 0 {
			return struct{}{}, fmt.Errorf("share %s: local user %s: %w", name, user, host.ErrNotFound)
		}
		if st.share(simComputerName, name) != nil {
			return struct{}{}, fmt.Errorf("share %s: %w", uncRoot(simComputerName, name), host.ErrAlreadyExists)
		}
		if err := os.MkdirAll(h.s.shareDir(simComputerName, name), 0o750); err != nil {
			return struct{}{}, pathError("share", uncRoot(simComputerName, name), err)
		}
		// The local account is known by its bare name and as
		// COMPUTER\user, the form a loopback mapping uses.
		u := st.LocalUsers[i]
		st.Shares = append(st.Shares, ShareState{Server: simComputerName, Share: name, Capacity: DefaultShareCapacity, Reachable: true,
			Users: []ShareUser{{Name: u.Name, PasswordSHA256: u.PasswordSHA256}, {Name: simComputerName + `\` + u.Name, PasswordSHA256: u.PasswordSHA256}}})
		st.LocalShares = append(st.LocalShares, LocalShareRecord{Name: name, Dir: d})
		return struct{}{}, nil
	})
	return err
}

// DeleteShare removes the share and its simulated contents, never Dir.
func (h localSMB) DeleteShare(ctx context.Context, name string) error {
	_, err := call(ctx, h.s, OpLocalSMBDeleteShare, true, func(st *State) (struct{}, error) {
		i := slices.IndexFunc(st.LocalShares, func(r LocalShareRecord) bool { return strings.EqualFold(r.Name, name) })
		if i < 0 {
			return struct{}{}, fmt.Errorf("share %s: %w", name, host.ErrNotFound)
		}
		st.LocalShares = append(st.LocalShares[:i], st.LocalShares[i+1:]...)
		st.Shares = slices.DeleteFunc(st.Shares, func(sh ShareState) bool {
			return strings.EqualFold(sh.Server, simComputerName) && strings.EqualFold(sh.Share, name)
		})
		if err := os.RemoveAll(h.s.shareDir(simComputerName, name)); err != nil {
			return struct{}{}, pathError("share", uncRoot(simComputerName, name), err)
		}
		return struct{}{}, nil
	})
	return err
}

func (h localSMB) Shares(ctx context.Context) ([]host.LocalShare, error) {
	return call(ctx, h.s, OpLocalSMBShares, false, func(st *State) ([]host.LocalShare, error) {
		out := make([]host.LocalShare, 0, len(st.LocalShares))
		for _, r := range st.LocalShares {
			out = append(out, host.LocalShare{Name: r.Name, Path: r.Dir})
		}
		return out, nil
	})
}

type fileData struct{ s *Sim }

func (h fileData) WriteFile(ctx context.Context, path string, data []byte) error {
	_, err := call(ctx, h.s, OpFileDataWriteFile, true, func(*State) (struct{}, error) {
		p, err := cleanAbs(path)
		if err != nil {
			return struct{}{}, err
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			return struct{}{}, pathError("file", p, err)
		}
		return struct{}{}, nil
	})
	return err
}

func (h fileData) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return call(ctx, h.s, OpFileDataReadFile, false, func(*State) ([]byte, error) {
		p, err := cleanAbs(path)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, pathError("file", p, err)
		}
		return b, nil
	})
}

// RemoveFile refuses the file of an attached VHDX, as Windows does (the
// disk holds it open: ERROR_SHARING_VIOLATION), and forgets a detached
// one's record.
func (h fileData) RemoveFile(ctx context.Context, path string) error {
	_, err := call(ctx, h.s, OpFileDataRemoveFile, true, func(st *State) (struct{}, error) {
		p, err := cleanAbs(path)
		if err != nil {
			return struct{}{}, err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return struct{}{}, pathError("file", p, err)
		}
		if !fi.Mode().IsRegular() {
			return struct{}{}, fmt.Errorf("%s is not a plain file: %w", p, host.ErrInvalid)
		}
		v := st.virtualDisk(p)
		if v != nil && st.attachedDisk(v) != nil {
			return struct{}{}, fmt.Errorf("file %s is an attached virtual disk: %w", p, host.ErrInUse)
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return struct{}{}, pathError("file", p, err)
		}
		if v != nil {
			st.VirtualDisks = slices.DeleteFunc(st.VirtualDisks, func(r VirtualDiskRecord) bool { return r.Path == p })
		}
		return struct{}{}, nil
	})
	return err
}
