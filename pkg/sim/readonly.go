package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// ErrReadOnly is returned by every host call that would change the host,
// and by every control operation, on a Sim opened with OpenReadOnly. It
// wraps host.ErrNotImplemented: such a host cannot change anything.
var ErrReadOnly = fmt.Errorf("the simulated host is open read-only: %w", host.ErrNotImplemented)

// readOps are the host calls a read-only Sim answers: those that change
// neither the model nor a file.
var readOps = map[string]bool{
	OpDisksList: true, OpDisksGet: true, OpDisksDeviceIDs: true, OpDisksSCSIAddress: true, OpDisksPartitions: true, OpDisksMaxPartitionSize: true,
	OpVolumesOfPartition: true, OpVolumesGet: true, OpVolumesList: true, OpVolumesDiskNumber: true, OpVolumesFreeSpace: true,
	OpFilesStat: true, OpFilesIsEmptyDir: true, OpFilesReadDir: true,
	OpSMBMapping: true, OpSMBMappings: true, OpSMBCheck: true,
	OpISCSIPortals: true, OpISCSITargets: true, OpISCSISessions: true, OpISCSISessionDisks: true, OpISCSIReportLUNs: true,
	OpISCSIResolvePortal: true, OpISCSIDisksBySession: true, OpISCSIPersistentLogins: true,
	OpSecurityRootDACL: true, OpSecurityLookupAccountName: true,
}

// ReadsOnly reports whether op changes nothing on the host: the ops a
// read-only host (OpenReadOnly) answers, and all an orphan sweep's report
// round or a stock-take may call.
func ReadsOnly(op string) bool { return readOps[op] }

// OpenReadOnly opens the simulated host in dir to look at it while another
// process (the plugin) may be simulating it: csi-windows-node diagnose
// --host=sim uses it. It is the simulated counterpart of reading a Windows
// node's state while the plugin runs there.
//
// It never blocks and never changes anything in dir: it does not take the
// directory lock (New's exclusive flock, held by the running plugin), does
// not remove leftover temporary files (they may be a write in progress),
// does not read faults.json, creates no directory and starts no persister.
// Every host call that would change the host, and every control operation,
// fails with ErrReadOnly before it has any effect.
//
// Each host call reads <dir>/state.json again when the file changed since
// the last call, so it sees the model as the running plugin last made it
// durable (the plugin's calls return only once their state is written, and
// the file is replaced atomically by rename, so a read never sees a half
// written model). Files under the kubelet directory are read live, as on
// Windows. A state.json that does not exist fails with os.ErrNotExist: no
// simulated host was ever opened there.
func OpenReadOnly(dir string, logger klog.Logger) (*Sim, error) {
	if dir == "" {
		return nil, errors.New("sim: no directory")
	}
	resolved, err := resolveDir(dir)
	if err != nil {
		return nil, err
	}
	s := build(Config{Dir: dir, Logger: logger}, resolved)
	s.readOnly = true
	s.unlock = func() {}
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// refresh reloads state.json on a read-only Sim when it changed since it
// was last read (by size and modification time; the plugin replaces the
// file with a new inode on every write, which changes at least the
// modification time or the size in practice, and a missed reload only
// shows the model as it was a moment earlier).
func (s *Sim) refresh() error {
	p := filepath.Join(s.dir, stateFile)
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("sim state %s: %w", p, err)
	}
	stamp := stateStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil && stamp == s.stamp {
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("sim state %s: %w", p, err)
	}
	st, err := decodeState(p, data)
	if err != nil {
		return err
	}
	s.st, s.stamp = st, stamp
	return nil
}

// stateStamp identifies a version of state.json for refresh.
type stateStamp struct {
	size  int64
	mtime int64
}
