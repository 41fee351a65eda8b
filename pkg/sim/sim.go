package sim

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Op names, one per host method. They key the call counters, the call log
// and fault rules.
const (
	OpDisksList             = "disks.List"
	OpDisksGet              = "disks.Get"
	OpDisksDeviceIDs        = "disks.DeviceIDs"
	OpDisksSCSIAddress      = "disks.SCSIAddress"
	OpDisksRescan           = "disks.Rescan"
	OpDisksSetReadOnly      = "disks.SetReadOnly"
	OpDisksSetOnline        = "disks.SetOnline"
	OpDisksInitialize       = "disks.Initialize"
	OpDisksPartitions       = "disks.Partitions"
	OpDisksCreatePartition  = "disks.CreatePartition"
	OpDisksMaxPartitionSize = "disks.MaxPartitionSize"
	OpDisksResizePartition  = "disks.ResizePartition"

	OpVolumesOfPartition = "volumes.OfPartition"
	OpVolumesGet         = "volumes.Get"
	OpVolumesList        = "volumes.List"
	OpVolumesFormat      = "volumes.Format"
	OpVolumesMount       = "volumes.Mount"
	OpVolumesUnmount     = "volumes.Unmount"
	OpVolumesFlush       = "volumes.Flush"
	OpVolumesDiskNumber  = "volumes.DiskNumber"
	OpVolumesFreeSpace   = "volumes.FreeSpace"

	OpFilesStat       = "files.Stat"
	OpFilesMakeDir    = "files.MakeDir"
	OpFilesRemove     = "files.Remove"
	OpFilesSymlink    = "files.Symlink"
	OpFilesIsEmptyDir = "files.IsEmptyDir"
	OpFilesReadDir    = "files.ReadDir"

	OpSMBMapping  = "smb.Mapping"
	OpSMBMappings = "smb.Mappings"
	OpSMBMap      = "smb.Map"
	OpSMBUnmap    = "smb.Unmap"
	OpSMBCheck    = "smb.Check"

	OpISCSIPortals            = "iscsi.Portals"
	OpISCSIAddPortal          = "iscsi.AddPortal"
	OpISCSIRefreshPortal      = "iscsi.RefreshPortal"
	OpISCSIRemovePortal       = "iscsi.RemovePortal"
	OpISCSITargets            = "iscsi.Targets"
	OpISCSIConnect            = "iscsi.Connect"
	OpISCSISessions           = "iscsi.Sessions"
	OpISCSIDisconnect         = "iscsi.Disconnect"
	OpISCSIUnregister         = "iscsi.Unregister"
	OpISCSIRegister           = "iscsi.Register"
	OpISCSISetInitiatorSecret = "iscsi.SetInitiatorSecret"
	OpISCSISessionDisks       = "iscsi.SessionDisks"
	OpISCSIReportLUNs         = "iscsi.ReportLUNs"
	OpISCSIResolvePortal      = "iscsi.ResolvePortal"
	OpISCSIDisksBySession     = "iscsi.DisksBySession"
	OpISCSIPersistentLogins   = "iscsi.PersistentLogins"
	OpISCSIRemovePersistent   = "iscsi.RemovePersistentLogin"

	OpSecurityRootDACL            = "security.RootDACL"
	OpSecurityAddRootAllowEntries = "security.AddRootAllowEntries"
	OpSecurityLookupAccountName   = "security.LookupAccountName"
)

// AllOps lists every op name, in interface order.
var AllOps = []string{
	OpDisksList, OpDisksGet, OpDisksDeviceIDs, OpDisksSCSIAddress, OpDisksRescan, OpDisksSetReadOnly,
	OpDisksSetOnline, OpDisksInitialize, OpDisksPartitions, OpDisksCreatePartition,
	OpDisksMaxPartitionSize, OpDisksResizePartition,
	OpVolumesOfPartition, OpVolumesGet, OpVolumesList, OpVolumesFormat, OpVolumesMount, OpVolumesUnmount,
	OpVolumesFlush, OpVolumesDiskNumber, OpVolumesFreeSpace,
	OpFilesStat, OpFilesMakeDir, OpFilesRemove, OpFilesSymlink, OpFilesIsEmptyDir, OpFilesReadDir,
	OpSMBMapping, OpSMBMappings, OpSMBMap, OpSMBUnmap, OpSMBCheck,
	OpISCSIPortals, OpISCSIAddPortal, OpISCSIRefreshPortal, OpISCSIRemovePortal,
	OpISCSITargets, OpISCSIConnect, OpISCSISessions, OpISCSIDisconnect, OpISCSIUnregister, OpISCSIRegister,
	OpISCSISetInitiatorSecret, OpISCSISessionDisks, OpISCSIReportLUNs, OpISCSIResolvePortal, OpISCSIDisksBySession,
	OpISCSIPersistentLogins, OpISCSIRemovePersistent,
	OpSecurityRootDACL, OpSecurityAddRootAllowEntries, OpSecurityLookupAccountName,
}

// DefaultDiskSize is the size of a disk attached or declared without one:
// 1 GiB.
const DefaultDiskSize = 1 << 30

// callLogSize bounds the call log.
const callLogSize = 10000

// errClosed is returned by every call made after Close.
var errClosed = errors.New("simulated host is closed")

// Config configures a simulated host.
type Config struct {
	// Dir holds state.json, faults.json and the contents of volumes and
	// shares. Required; created when missing.
	Dir string
	// Latency is injected before every host call (ctx-aware), for
	// benchmarks.
	Latency time.Duration
	// Win32Latency, when not nil, is injected instead of Latency before
	// the calls Windows answers with Win32 rather than WMI (win32Ops: file
	// checks, mount points, free space, SMB checks, name resolution,
	// persistent logins), which take microseconds to milliseconds where a
	// WMI round trip takes tens to hundreds.
	Win32Latency *time.Duration
	// Logger receives the sim's own log lines; zero means klog.Background().
	Logger klog.Logger
	// Setup, when set, is added to the state New opens (see Setup and
	// docs/sim-config.md): New fails, changing nothing, when an entry
	// conflicts with the state. Its Windows answers apply where Config
	// leaves them unset.
	Setup *Setup
	// Windows picks the simulated Windows' answer where Windows' own is
	// uncertain (docs/windows.md); zero fields take the defaults.
	Windows WindowsAnswers
}

// WindowsAnswers picks, for each behaviour of Windows that no source
// settles, which of the documented answers the simulated host gives. The
// host contract (pkg/host/hosttest) accepts every one of them; the plugin
// is tested with each.
type WindowsAnswers struct {
	// OfflineReadOnly is what MSFT_Disk.SetAttributes(IsReadOnly) answers
	// for an offline disk: "" or OfflineReadOnlyAccept (the default), or
	// OfflineReadOnlyRefuse.
	OfflineReadOnly string
	// VolumeRootACL is the DACL Format gives a volume's root: "" or
	// RootACLServer (the default), or RootACLClient (security.go).
	VolumeRootACL string
	// SecondPersistentLogin is what a persistent login (Connect with
	// IsPersistent) through a portal that has a persistent login of the
	// target already does to Windows' list of persistent logins: "" or
	// SecondPersistentLoginReplace (the default), or
	// SecondPersistentLoginAdd.
	SecondPersistentLogin string
}

// The answers to SetReadOnly on an offline disk. Uncertain on Windows:
// the SetAttributes page says "the disk must be online for most
// attributes to be set" and lists 41003 "the disk is offline"
// (learn.microsoft.com/windows-hardware/drivers/storage/msft-disk-setattributes);
// the VDS pages describe the read-only bit set and cleared while the disk
// is offline (IVdsDiskOnline::Online and ::Offline remarks,
// learn.microsoft.com/windows/win32/api/vds/nf-vds-ivdsdiskonline-online),
// and HPE's common-host-libs clears it before onlining
// (hpe-storage/common-host-libs chapi2/multipath/multipath_windows.go,
// MakeDiskOnlineAndWritable, at 55e77af).
const (
	// OfflineReadOnlyAccept: the attribute changes and the disk stays
	// offline.
	OfflineReadOnlyAccept = "accept"
	// OfflineReadOnlyRefuse: host.ErrNotReady (41003), the attribute
	// unchanged; a clone whose signature collides is still accepted.
	OfflineReadOnlyRefuse = "refuse"
)

// The answers to a second persistent login of a target through one
// portal. Uncertain on Windows: no page found says what it does to a
// persistent login of the target through that portal that is there
// already (MSFT_iSCSITarget.Connect's and Connect-IscsiTarget's
// IsPersistent, LoginIScsiTargetW's IsPersistent on
// learn.microsoft.com/windows/win32/api/iscsidsc/nf-iscsidsc-loginiscsitargetw);
// iscsicli ListPersistentTargets on a node would show it
// (docs/windows.md, "What stays uncertain").
const (
	// SecondPersistentLoginReplace: one persistent login per target and
	// portal; the second takes the first's place.
	SecondPersistentLoginReplace = "replace"
	// SecondPersistentLoginAdd: the second is stored beside the first;
	// both are listed and both are replayed at boot (a second session
	// through the portal when both logins are multipath; the second is
	// refused as a login next to a session otherwise).
	SecondPersistentLoginAdd = "add"
)

// checkWindowsAnswers reports an answer the simulated host does not know.
func checkWindowsAnswers(w WindowsAnswers) error {
	switch w.OfflineReadOnly {
	case "", OfflineReadOnlyAccept, OfflineReadOnlyRefuse:
	default:
		return fmt.Errorf("sim: offline read-only answer %q: want %q or %q", w.OfflineReadOnly, OfflineReadOnlyAccept, OfflineReadOnlyRefuse)
	}
	if w.VolumeRootACL != "" && !ValidRootACL(w.VolumeRootACL) {
		return fmt.Errorf("sim: volume root ACL %q: want %q or %q", w.VolumeRootACL, RootACLServer, RootACLClient)
	}
	switch w.SecondPersistentLogin {
	case "", SecondPersistentLoginReplace, SecondPersistentLoginAdd:
	default:
		return fmt.Errorf("sim: second persistent login answer %q: want %q or %q", w.SecondPersistentLogin,
			SecondPersistentLoginReplace, SecondPersistentLoginAdd)
	}
	return nil
}

// Sim is a simulated Windows host. All methods are safe for concurrent use.
type Sim struct {
	cfg    Config
	dir    string // Config.Dir made absolute and free of symlinks
	log    klog.Logger
	faults *Faults

	counts map[string]*atomic.Int64 // fixed key set (AllOps): read without a lock

	logMu    sync.Mutex
	callLog  []string // ring buffer
	logTotal int      // ops ever logged

	mu     sync.Mutex // guards st, gen, closed and the files under dir
	st     *State
	gen    uint64
	closed bool

	p persister

	unlock func() // releases the directory lock

	// readOnly marks a Sim opened with OpenReadOnly: no lock, no
	// persister, only readOps answered; stamp is the version of
	// state.json st was read from (readonly.go).
	readOnly bool
	stamp    stateStamp
}

// resolveDir returns the absolute form of a sim directory, links resolved.
func resolveDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("sim dir %s: %w", dir, err)
	}
	return abs, nil
}

// build returns a Sim over the resolved directory dir with its logger,
// faults and call counters; the caller loads the state.
func build(cfg Config, dir string) *Sim {
	log := cfg.Logger
	if log.GetSink() == nil {
		log = klog.Background()
	}
	s := &Sim{
		cfg:    cfg,
		dir:    dir,
		log:    log.WithName("sim"),
		faults: newFaults(),
		counts: make(map[string]*atomic.Int64, len(AllOps)),
	}
	for _, op := range slices.Concat(AllOps, AdminOps) {
		s.counts[op] = new(atomic.Int64)
	}
	return s
}

// New opens the simulated host in cfg.Dir: it loads <Dir>/state.json when
// present (else initialises a host with a boot/system disk 0) and
// <Dir>/faults.json when present.
func New(cfg Config) (*Sim, error) {
	if cfg.Dir == "" {
		return nil, errors.New("sim: Config.Dir is required")
	}
	if cfg.Setup != nil {
		cfg.Windows.OfflineReadOnly = cmp.Or(cfg.Windows.OfflineReadOnly, cfg.Setup.Windows.OfflineReadOnly)
		cfg.Windows.VolumeRootACL = cmp.Or(cfg.Windows.VolumeRootACL, cfg.Setup.Windows.VolumeRootACL)
		cfg.Windows.SecondPersistentLogin = cmp.Or(cfg.Windows.SecondPersistentLogin, cfg.Setup.Windows.SecondPersistentLogin)
	}
	if err := checkWindowsAnswers(cfg.Windows); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("sim dir %s: %w", cfg.Dir, err)
	}
	dir, err := resolveDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{volumesSubdir, smbSubdir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			return nil, fmt.Errorf("sim dir %s: %w", cfg.Dir, err)
		}
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := build(cfg, dir)
	var once sync.Once
	s.unlock = func() { once.Do(unlock) }
	st, fresh, err := loadState(dir)
	if err != nil {
		unlock()
		return nil, err
	}
	s.st = st
	if err := s.faults.loadFile(filepath.Join(dir, faultsFile)); err != nil {
		unlock()
		return nil, err
	}
	if cfg.Setup != nil {
		done, err := s.applySetup(st, cfg.Setup)
		if err != nil {
			unlock()
			return nil, err
		}
		for _, line := range done {
			s.log.Info("Sim config applied", "entry", line)
		}
	}
	s.p.init()
	if fresh || cfg.Setup != nil {
		// Write the initial state (and what the setup added) synchronously
		// so that a crash before the first mutation still leaves a
		// loadable state.json that holds it.
		var buf bytes.Buffer
		data, err := encodeState(&buf, st)
		if err == nil {
			err = writeAtomic(dir, data)
		}
		if err != nil {
			unlock()
			return nil, fmt.Errorf("sim state in %s: %w", dir, err)
		}
	}
	go s.persistLoop()
	s.log.V(2).Info("simulated host opened", "dir", dir, "disks", len(st.Disks), "faultRules", len(s.faults.Rules()),
		"offlineReadOnly", cmp.Or(cfg.Windows.OfflineReadOnly, OfflineReadOnlyAccept),
		"volumeRootACL", cmp.Or(cfg.Windows.VolumeRootACL, RootACLServer),
		"secondPersistentLogin", cmp.Or(cfg.Windows.SecondPersistentLogin, SecondPersistentLoginReplace))
	return s, nil
}

// Host returns the host interfaces backed by the simulation.
func (s *Sim) Host() host.Host {
	return host.Host{
		Disks:    disks{s},
		Volumes:  volumes{s},
		Files:    files{s},
		SMB:      smbHost{s},
		ISCSI:    iscsiHost{s},
		Security: security{s},
	}
}

// Dir returns the sim directory (absolute, symlinks resolved).
func (s *Sim) Dir() string { return s.dir }

// Faults returns the fault-injection rules of this sim.
func (s *Sim) Faults() *Faults { return s.faults }

// Close flushes the state, releases hung calls and stops the persister.
// Calls made afterwards fail.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.readOnly {
		s.mu.Unlock()
		return nil
	}
	s.gen++
	g := s.gen
	s.mu.Unlock()
	s.faults.releaseAll()
	err := s.commit(g)
	s.p.shutdown()
	s.unlock()
	return err
}

// Calls returns the number of calls made per op since the sim was opened
// or ResetCounts was called. Ops never called are left out.
func (s *Sim) Calls() map[string]int {
	out := make(map[string]int)
	for op, c := range s.counts {
		if n := c.Load(); n > 0 {
			out[op] = int(n)
		}
	}
	return out
}

// Count returns the number of calls of one op.
func (s *Sim) Count(op string) int {
	if c, ok := s.counts[op]; ok {
		return int(c.Load())
	}
	return 0
}

// ResetCounts zeroes the call counters (not the call log, not fault rules).
func (s *Sim) ResetCounts() {
	for _, c := range s.counts {
		c.Store(0)
	}
}

// Mark returns the current position in the call log, for OpsSince.
func (s *Sim) Mark() int {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logTotal
}

// OpsSince returns the op names called after mark, oldest first. Only the
// last 10000 calls are kept; older ones are silently missing.
func (s *Sim) OpsSince(mark int) []string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	first := s.logTotal - len(s.callLog)
	if mark < first {
		mark = first
	}
	out := make([]string, 0, s.logTotal-mark)
	for i := mark; i < s.logTotal; i++ {
		out = append(out, s.callLog[i%callLogSize])
	}
	return out
}

// CallLog returns the retained call log, oldest first.
func (s *Sim) CallLog() []string { return s.OpsSince(0) }

func (s *Sim) record(op string) {
	if c, ok := s.counts[op]; ok {
		c.Add(1)
	}
	s.logMu.Lock()
	if len(s.callLog) < callLogSize {
		s.callLog = append(s.callLog, op)
	} else {
		s.callLog[s.logTotal%callLogSize] = op
	}
	s.logTotal++
	s.logMu.Unlock()
}

// call runs one host call through the common path: count, faults, latency,
// ctx check, work under the sim mutex, group commit for mutating ops.
func call[T any](ctx context.Context, s *Sim, op string, write bool, fn func(st *State) (T, error)) (T, error) {
	var zero T
	s.record(op)
	if s.readOnly {
		if !readOps[op] {
			return zero, fmt.Errorf("%s: %w", op, ErrReadOnly)
		}
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("%s: host call not started: %w", op, err)
		}
		if err := s.refresh(); err != nil {
			return zero, fmt.Errorf("%s: %w", op, err)
		}
	}
	act := s.faults.fire(op)
	if act.delay > 0 {
		s.log.V(2).Info("injected delay", "method", op, "delay", act.delay)
		if err := sleepCtx(ctx, act.delay); err != nil {
			return zero, fmt.Errorf("%s: %w", op, err)
		}
	}
	if act.err != nil {
		s.log.V(2).Info("injected error", "method", op, "err", act.err)
		return zero, fmt.Errorf("%s: injected fault: %w", op, act.err)
	}
	if act.crashBefore {
		s.crash(op, act.exitCode, "before")
		return zero, fmt.Errorf("%s: %w", op, errCrashed)
	}
	if act.hang != nil {
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("%s: host call not started: %w", op, err)
		}
		s.log.V(2).Info("injected hang", "method", op)
		var mu sync.Mutex
		var out T
		err := host.Detached(ctx, func(context.Context) error {
			// Registered only now, when Detached counts the call on ctx's
			// trackers: a test that sees it hung and ends ctx finds it
			// outstanding (Detached may also refuse to start it when ctx
			// ended in between; then it never hangs).
			s.faults.hangNow(op, act)
			<-act.hang
			v, err := perform(s, write, fn)
			if act.crashAfter {
				s.crash(op, act.exitCode, "after")
			}
			mu.Lock()
			out = v
			mu.Unlock()
			return err
		})
		if err != nil {
			return zero, fmt.Errorf("%s: %w", op, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return out, nil
	}

	end := host.BeginCall(ctx)
	defer end()
	if l := s.latency(op); l > 0 {
		if err := sleepCtx(ctx, l); err != nil {
			return zero, fmt.Errorf("%s: %w", op, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%s: host call not started: %w", op, err)
	}
	v, err := perform(s, write, fn)
	if act.crashAfter {
		s.crash(op, act.exitCode, "after")
	}
	if err != nil {
		s.log.V(5).Info("host call failed", "method", op, "err", err)
		// The callee names the operation (as every host does, so that
		// callers need not: pkg/winhost errors.go states the rule).
		err = fmt.Errorf("%s: %w", op, err)
	}
	return v, err
}

// win32Ops are the ops winhost carries out with Win32 calls (or the
// system resolver), not WMI: pkg/winhost files.go, volumes.go (Mount,
// Unmount, Flush, DiskNumber, FreeSpace), disks.go (DeviceIDs, SCSIAddress), smb.go
// (Check), iscsi.go (ResolvePortal, PersistentLogins,
// RemovePersistentLogin), security.go.
var win32Ops = map[string]bool{
	OpFilesStat: true, OpFilesMakeDir: true, OpFilesRemove: true, OpFilesSymlink: true, OpFilesIsEmptyDir: true, OpFilesReadDir: true,
	OpVolumesMount: true, OpVolumesUnmount: true, OpVolumesFlush: true, OpVolumesDiskNumber: true, OpVolumesFreeSpace: true,
	OpDisksDeviceIDs: true, OpDisksSCSIAddress: true, OpSMBCheck: true,
	OpISCSIResolvePortal: true, OpISCSIPersistentLogins: true, OpISCSIRemovePersistent: true,
	OpSecurityRootDACL: true, OpSecurityAddRootAllowEntries: true, OpSecurityLookupAccountName: true,
}

// latency is what is injected before op.
func (s *Sim) latency(op string) time.Duration {
	if s.cfg.Win32Latency != nil && win32Ops[op] {
		return *s.cfg.Win32Latency
	}
	return s.cfg.Latency
}

// perform does the work under the mutex and, for mutating ops, waits until
// the state that contains it is durable.
func perform[T any](s *Sim, write bool, fn func(st *State) (T, error)) (T, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		var zero T
		return zero, errClosed
	}
	v, err := fn(s.st)
	var g uint64
	if write {
		s.gen++
		g = s.gen
	}
	s.mu.Unlock()
	if write {
		if cerr := s.commit(g); cerr != nil && err == nil {
			err = cerr
		}
	}
	return v, err
}

// control runs a test/dev control operation (not a host call): no counting,
// no faults, no latency, but the same mutex and durability.
func (s *Sim) control(fn func(st *State) error) error {
	if s.readOnly {
		return ErrReadOnly
	}
	_, err := perform(s, true, func(st *State) (struct{}, error) { return struct{}{}, fn(st) })
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("host call interrupted: %w", ctx.Err())
	}
}

// Reboot simulates a node reboot (see doc.go): non-persistent iSCSI
// sessions and their disks disappear, persistent ones are logged in again
// when their portal answers and their credentials still work, SMB mappings
// stay but turn Unavailable, disks keep their online state, mount points
// stay, pending disk resizes and late LUNs become visible.
func (s *Sim) Reboot() error {
	return s.control(func(st *State) error {
		// Every session ends.
		for _, t := range st.Targets {
			s.removeTargetDisks(st, t.IQN)
		}
		st.Sessions = nil
		// Boot-time enumeration sees the real disk sizes.
		for i := range st.Disks {
			if d := &st.Disks[i]; d.PendingSize != 0 {
				d.Size, d.PendingSize = d.PendingSize, 0
			}
		}
		// Persistent logins come back when they can; a second login of a
		// target is refused next to a session unless both are multipath,
		// as Connect refuses it.
		for _, l := range st.PersistentLogins {
			err := s.checkLogin(st, l.Target, l.Portal, l.Auth, l.CHAPUser, l.CHAPSecretSHA256)
			if err == nil {
				err = st.secondLogin(l.Target, l.Portal, l.Multipath)
			}
			if err != nil {
				s.log.V(2).Info("persistent login not restored at boot", "iqn", l.Target, "portal", l.Portal, "err", err)
				continue
			}
			s.newSession(st, l.Target, l.Portal, l.InitiatorPortal, l.Auth, l.Multipath, true, true)
		}
		// csi-driver-smb PR #1219: after a restart Windows can leave a
		// mapping object with a non-OK status. (The plugin's own mappings
		// are not persistent, so real Windows drops them instead; keeping
		// a stale object is the harder case for the SMB backend, which
		// must remove it before mapping again.)
		for i := range st.Mappings {
			st.Mappings[i].Status = host.MappingUnavailable
		}
		return nil
	})
}

// Snapshot returns a deep copy of the model, for assertions.
func (s *Sim) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneState(s.st)
}

func sortDisks(st *State) {
	sort.Slice(st.Disks, func(i, j int) bool { return st.Disks[i].Number < st.Disks[j].Number })
}
