package sim

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/wincsi/csi-windows-node/internal/durable"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// File and directory names inside Config.Dir.
const (
	stateFile     = "state.json"
	faultsFile    = "faults.json"
	volumesSubdir = "volumes"
	smbSubdir     = "smb"
)

// StateVersion is the version of the state.json format.
const StateVersion = 1

// State is the whole model of the simulated host, as persisted in
// <Dir>/state.json and returned by Snapshot. Secrets appear only as salted
// SHA-256 hashes (fields named ...SHA256).
type State struct {
	Version int `json:"version"`
	// Salt is prepended to every secret before hashing.
	Salt string `json:"salt"`

	NextDiskID        uint64 `json:"nextDiskID"`
	NextSessionID     uint64 `json:"nextSessionID"`
	NextAutoLUN       uint32 `json:"nextAutoLUN"`
	NextTargetOrdinal uint32 `json:"nextTargetOrdinal"`
	Rescans           uint64 `json:"rescans"`

	// Disks are the disks the host sees, in disk-number order.
	Disks []DiskState `json:"disks"`
	// Detached holds the contents of detached disks by serial, so that
	// re-attaching the same (cloud) disk brings its data back.
	Detached []DiskState `json:"detached,omitempty"`
	// Mounts records the volume mount points made with Volumes.Mount.
	Mounts []MountState `json:"mounts"`

	Shares   []ShareState   `json:"shares"`
	Mappings []MappingState `json:"mappings"`

	// Targets are the iSCSI targets the simulated storage serves, with the
	// backing store of their LUNs.
	Targets []TargetState `json:"targets"`
	// Portals are the target portals registered on the initiator.
	Portals            []PortalState  `json:"portals"`
	Sessions           []SessionState `json:"sessions"`
	PersistentLogins   []LoginState   `json:"persistentLogins"`
	UnreachablePortals []string       `json:"unreachablePortals"`
	// Names is the simulated network's name service: a host name (lower
	// case) and the IP addresses it resolves to, in order.
	Names map[string][]string `json:"names,omitempty"`
	// InitiatorSecretSHA256 is the hash of the initiator's mutual-CHAP secret.
	InitiatorSecretSHA256 string `json:"initiatorSecretSHA256,omitempty"`

	// Accounts are the account names LookupAccountName resolves besides
	// the built-in ones (--sim-config accounts).
	Accounts []AccountState `json:"accounts,omitempty"`

	// The node's own configuration and the operator's scratch objects
	// (admin.go): services changed from their defaults, VHDX files, local
	// users and shares of the node itself.
	Services     []ServiceRecord     `json:"services,omitempty"`
	VirtualDisks []VirtualDiskRecord `json:"virtualDisks,omitempty"`
	LocalUsers   []LocalUserRecord   `json:"localUsers,omitempty"`
	LocalShares  []LocalShareRecord  `json:"localShares,omitempty"`
}

// DiskState is one disk.
type DiskState struct {
	ID       string `json:"id"` // stable handle; the Ref is "sim:disk:<id>"
	Number   uint32 `json:"number"`
	Serial   string `json:"serial"`
	Page83   string `json:"page83,omitempty"`
	Location string `json:"location"`
	Size     uint64 `json:"size"`
	// PendingSize is a new size set by ResizeDisk that the host sees after
	// the next Rescan (0: none).
	PendingSize    uint64              `json:"pendingSize,omitempty"`
	BusType        host.BusType        `json:"busType"`
	Boot           bool                `json:"boot,omitempty"`
	System         bool                `json:"system,omitempty"`
	ReadOnly       bool                `json:"readOnly"`
	Offline        bool                `json:"offline"`
	OfflineReason  host.OfflineReason  `json:"offlineReason"`
	Health         host.HealthStatus   `json:"health"`
	Collision      bool                `json:"collision,omitempty"`
	PartitionStyle host.PartitionStyle `json:"partitionStyle"`
	Partitions     []PartitionState    `json:"partitions"`
	// GUID is the disk GUID of a GPT disk (MSFT_Disk.Guid, without
	// braces), written by Initialize and kept with the partition table.
	GUID string `json:"guid,omitempty"`
	// Target and LUN identify the iSCSI LUN the disk is reached through.
	Target string `json:"target,omitempty"`
	LUN    uint32 `json:"lun,omitempty"`

	// Identity as Windows reports it (identity.go), for disks declared
	// in a --sim-config disk table; zero values take the defaults of
	// toHost, which attached and auto-attached disks use.
	Identity *DiskIdentity `json:"identity,omitempty"`
}

// PartitionState is one partition; Number is its position by offset.
type PartitionState struct {
	Offset      uint64       `json:"offset"`
	Size        uint64       `json:"size"`
	GptType     string       `json:"gptType,omitempty"`
	MbrType     uint16       `json:"mbrType,omitempty"`
	DriveLetter string       `json:"driveLetter,omitempty"`
	Volume      *VolumeState `json:"volume,omitempty"`
}

// VolumeState is the volume on a partition.
type VolumeState struct {
	GUID           string            `json:"guid"` // lower case, no braces
	FileSystem     string            `json:"fileSystem"`
	Label          string            `json:"label"`
	Size           uint64            `json:"size"`
	AllocationUnit uint32            `json:"allocationUnit"`
	Health         host.HealthStatus `json:"health"`
	// Root is the DACL of the root directory of the volume's file system,
	// set by Format; nil for a volume formatted before the simulated host
	// kept one, which reads as the default (WindowsAnswers.VolumeRootACL).
	Root *DACLState `json:"root,omitempty"`
}

// MountState is one volume mount point.
type MountState struct {
	Dir    string `json:"dir"`
	Volume string `json:"volume"` // GUID
}

// ShareState is one SMB share the simulated network serves.
type ShareState struct {
	Server       string      `json:"server"`
	Share        string      `json:"share"`
	Users        []ShareUser `json:"users"`
	Capacity     uint64      `json:"capacity"`
	NoEncryption bool        `json:"noEncryption,omitempty"`
	Reachable    bool        `json:"reachable"`
}

// ShareUser is an account accepted by a share.
type ShareUser struct {
	Name           string `json:"name"`
	PasswordSHA256 string `json:"passwordSHA256"`
	// Generation counts password changes; a mapping remembers the
	// generation it was made with.
	Generation int `json:"generation"`
}

// MappingState is one SMB global mapping.
type MappingState struct {
	RemotePath     string             `json:"remotePath"`
	User           string             `json:"user"`
	RequirePrivacy bool               `json:"requirePrivacy"`
	Status         host.MappingStatus `json:"status"`
	UserGeneration int                `json:"userGeneration"`
}

// TargetState is one iSCSI target served by the simulated storage.
type TargetState struct {
	IQN     string     `json:"iqn"`
	Ordinal uint32     `json:"ordinal"` // "Target <n>" in the disks' Location
	Portals []string   `json:"portals"` // host:port
	LUNs    []LUNState `json:"luns"`

	CHAPUser                  string `json:"chapUser,omitempty"`
	CHAPSecretSHA256          string `json:"chapSecretSHA256,omitempty"`
	MutualSecretSHA256        string `json:"mutualSecretSHA256,omitempty"`
	DiscoveryCHAPUser         string `json:"discoveryCHAPUser,omitempty"`
	DiscoveryCHAPSecretSHA256 string `json:"discoveryCHAPSecretSHA256,omitempty"`
	// Redirects maps a portal (host:port) to the address (IP:port) the
	// target moves the logins made through it to (a login redirect,
	// RFC 7143's "target moved" status): the sessions' connections report
	// that address.
	Redirects map[string]string `json:"redirects,omitempty"`
	// LoginWithoutID makes Connect log in and then fail with
	// host.ErrSessionUnknown, as a provider whose Connect returns no
	// CreatediSCSISession would (uncertain on Windows: docs/windows.md).
	LoginWithoutID bool `json:"loginWithoutID,omitempty"`
	// SecondSessionAtLogin makes every login to the target make a second
	// session through the same portal, someone else's (another
	// initiator's login at the same moment), so that a caller looking for
	// the session its login made finds two new ones.
	SecondSessionAtLogin bool `json:"secondSessionAtLogin,omitempty"`
}

// LUNState is one LUN of a target with its backing store: while no session
// is logged in, the LUN's partitions and volumes live here.
type LUNState struct {
	LUN                uint32 `json:"lun"`
	Size               uint64 `json:"size"`
	Serial             string `json:"serial"`
	Page83             string `json:"page83"`
	AppearAfterRescans int    `json:"appearAfterRescans,omitempty"`
	// Pending counts the rescans still needed before the LUN appears in
	// the current login (0: visible or not logged in).
	Pending        int                 `json:"pending,omitempty"`
	PartitionStyle host.PartitionStyle `json:"partitionStyle"`
	Partitions     []PartitionState    `json:"partitions"`
	GUID           string              `json:"guid,omitempty"` // the disk GUID of its GPT table
}

// PortalState is a target portal registered on the initiator.
type PortalState struct {
	Portal                    string   `json:"portal"` // host:port
	InitiatorPortal           string   `json:"initiatorPortal,omitempty"`
	DiscoveryCHAPUser         string   `json:"discoveryCHAPUser,omitempty"`
	DiscoveryCHAPSecretSHA256 string   `json:"discoveryCHAPSecretSHA256,omitempty"`
	Targets                   []string `json:"targets"` // discovered IQNs
}

// SessionState is one iSCSI session.
type SessionState struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	Portal string `json:"portal"` // the portal the login went through
	// Address is the address (IP:port) the target answered the
	// connection on: the portal's own address, the address its name
	// resolved to, or where the target redirected the login. Empty in
	// states written before it existed: the portal.
	Address         string        `json:"address,omitempty"`
	InitiatorPortal string        `json:"initiatorPortal,omitempty"`
	Auth            host.AuthType `json:"auth"`
	Multipath       bool          `json:"multipath"`
	Persistent      bool          `json:"persistent"`
}

// LoginState is a persistent login, restored at boot.
type LoginState struct {
	Target           string        `json:"target"`
	Portal           string        `json:"portal"`
	InitiatorPortal  string        `json:"initiatorPortal,omitempty"`
	Auth             host.AuthType `json:"auth"`
	CHAPUser         string        `json:"chapUser,omitempty"`
	CHAPSecretSHA256 string        `json:"chapSecretSHA256,omitempty"`
	Multipath        bool          `json:"multipath"`
}

func loadState(dir string) (st *State, fresh bool, err error) {
	// A crash during a write can leave its temporary file behind.
	if tmps, _ := filepath.Glob(filepath.Join(dir, stateFile+".*.tmp")); len(tmps) > 0 {
		for _, t := range tmps {
			_ = os.Remove(t) // best effort: a leftover is harmless, only untidy
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return initialState(), true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sim state in %s: %w", dir, err)
	}
	st, err = decodeState(filepath.Join(dir, stateFile), data)
	return st, false, err
}

// decodeState decodes the contents of the state file at path.
func decodeState(path string, data []byte) (*State, error) {
	st := new(State)
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("sim state %s: %w", path, err)
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("sim state %s: version %d, want %d", path, st.Version, StateVersion)
	}
	return st, nil
}

// encodeState writes st into buf as compact JSON ending in a newline and
// returns buf's bytes. Compact rather than indented: the persister encodes
// the whole model under the sim's mutex for every group commit, and
// indenting costs four times as much (2 ms against 0.5 ms for a model of
// 500 disks; BenchmarkMountUnmountManyDisks shows what that does to a
// mutating call). jq . shows the file indented.
func encodeState(buf *bytes.Buffer, st *State) ([]byte, error) {
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(st); err != nil { // Encode appends the newline
		return nil, err
	}
	return buf.Bytes(), nil
}

func cloneState(st *State) State {
	data, err := json.Marshal(st)
	if err != nil {
		panic(fmt.Sprintf("sim: encoding state: %v", err)) // plain data: cannot fail
	}
	var out State
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("sim: decoding state: %v", err))
	}
	return out
}

// writeAtomic replaces <dir>/state.json durably (internal/durable: temporary
// file, fsync, rename, directory fsync).
func writeAtomic(dir string, data []byte) error {
	return durable.WriteFile(dir, stateFile, data)
}

// persister writes the latest state for every generation requested, one
// write covering all the generations bumped meanwhile (group commit).
type persister struct {
	// write is held from encoding the model to renaming state.json, so
	// that a crash's own write (Sim.crash) is never overtaken by an older
	// one. Taken before Sim.mu.
	write     sync.Mutex
	mu        sync.Mutex
	cond      *sync.Cond
	requested uint64
	durable   uint64
	err       error
	stop      bool
	done      chan struct{}
	writes    int    // number of state.json writes, for tests
	hold      func() // test hook run before each write, outside every lock
}

func (p *persister) init() {
	p.cond = sync.NewCond(&p.mu)
	p.done = make(chan struct{})
}

func (s *Sim) persistLoop() {
	p := &s.p
	defer close(p.done)
	// One buffer for every write: the model is encoded in full each time,
	// and reusing the buffer keeps that from turning into garbage.
	var buf bytes.Buffer
	for {
		p.mu.Lock()
		for p.durable >= p.requested && !p.stop {
			p.cond.Wait()
		}
		if p.durable >= p.requested {
			p.mu.Unlock()
			return
		}
		hold := p.hold
		p.mu.Unlock()
		if hold != nil {
			hold()
		}

		p.write.Lock()
		s.mu.Lock()
		data, err := encodeState(&buf, s.st)
		g := s.gen
		s.mu.Unlock()
		if err == nil {
			err = writeAtomic(s.dir, data)
		}
		p.write.Unlock()
		if err != nil {
			s.log.Error(err, "writing sim state", "dir", s.dir)
		}

		p.mu.Lock()
		if g > p.durable {
			p.durable = g
		}
		p.err = err
		p.writes++
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// commit waits until generation g is durable and returns the error of the
// write that covered it.
func (s *Sim) commit(g uint64) error {
	p := &s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if g > p.requested {
		p.requested = g
		p.cond.Broadcast()
	}
	for p.durable < g {
		p.cond.Wait()
	}
	if p.err != nil {
		return fmt.Errorf("persisting sim state: %w", p.err)
	}
	return nil
}

func (p *persister) shutdown() {
	p.mu.Lock()
	p.stop = true
	p.cond.Broadcast()
	p.mu.Unlock()
	<-p.done
}

// hash returns the salted SHA-256 of a secret, hex-encoded. It is the only
// form in which secrets are kept.
func (st *State) hash(secret string) string {
	h := sha256.New()
	h.Write([]byte(st.Salt))
	h.Write([]byte{0})
	h.Write([]byte(secret))
	return hex.EncodeToString(h.Sum(nil))
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("sim: reading random bytes: %v", err)) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// newGUID returns a random (version 4) GUID in lower case, without braces.
func newGUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("sim: reading random bytes: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// bootSerial is the serial of a fresh simulated host's boot disk.
const bootSerial = "SIMBOOT0000000000000"

// initialState is a fresh host: disk 0 is the boot and system disk (GPT:
// EFI system partition, MSR, C: with an NTFS volume).
func initialState() *State {
	st := &State{Version: StateVersion, Salt: randomHex(16), NextDiskID: 1}
	const size = 127 << 30 // the usual size of a cloud VM's OS disk
	st.Disks = []DiskState{{
		ID:             "disk-0",
		Number:         0,
		Serial:         bootSerial,
		Page83:         "60022480" + randomHex(12),
		Location:       "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0",
		Size:           size,
		BusType:        host.BusTypeSCSI,
		Boot:           true,
		System:         true,
		Health:         host.HealthHealthy,
		PartitionStyle: host.PartitionStyleGPT,
		Partitions:     bootPartitions(size, host.PartitionStyleGPT),
		GUID:           newGUID(),
	}}
	return st
}

// bootPartitions lays out a Windows boot disk: on GPT the EFI system
// partition, the MSR and C: with an NTFS volume; on MBR C: alone.
func bootPartitions(size uint64, style host.PartitionStyle) []PartitionState {
	switch {
	case size < 256<<20:
		return nil // too small for Windows: a declared disk without a layout
	case style == host.PartitionStyleMBR:
		cSize := size - size%sectorSize - mib
		return []PartitionState{{Offset: mib, Size: cSize, MbrType: host.MbrTypeIFS, DriveLetter: "C",
			Volume: &VolumeState{GUID: newGUID(), FileSystem: "NTFS", Label: "Windows", Size: cSize, AllocationUnit: 4096}}}
	case style != host.PartitionStyleGPT:
		return nil
	}
	efi := PartitionState{Offset: 1 << 20, Size: 100 << 20, GptType: host.GptTypeEFISystem,
		Volume: &VolumeState{GUID: newGUID(), FileSystem: "FAT32", Size: 100 << 20, AllocationUnit: 4096}}
	msr := PartitionState{Offset: 101 << 20, Size: 16 << 20, GptType: host.GptTypeMSR}
	cStart := uint64(117 << 20)
	cSize := gptUsableEnd(size) - cStart
	cSize -= cSize % sectorSize
	c := PartitionState{Offset: cStart, Size: cSize, GptType: host.GptTypeBasicData, DriveLetter: "C",
		Volume: &VolumeState{GUID: newGUID(), FileSystem: "NTFS", Label: "Windows", Size: cSize, AllocationUnit: 4096}}
	return []PartitionState{efi, msr, c}
}
