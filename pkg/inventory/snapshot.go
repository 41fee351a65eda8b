package inventory

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Snapshot returns h as one stock-take reads it: the reads of the disks,
// volumes, SMB and iSCSI areas that a stock-take makes once per volume are
// answered from one read of each class, made on first use and kept for the
// snapshot's life, and joined in memory:
//
//   - Disks.Get from Disks.List; Disks.DeviceIDs and Disks.SCSIAddress once per disk;
//   - Volumes.Get and Volumes.DiskNumber from Volumes.List (a volume it
//     could not place on a disk is asked for once, with DiskNumber);
//   - SMB.Mapping from SMB.Mappings;
//   - ISCSI.Sessions of a target from Sessions of every target,
//     ISCSI.SessionDisks from DisksBySession, ISCSI.Portals,
//     ISCSI.PersistentLogins and ISCSI.ResolvePortal once.
//
// So the calls of those areas a stock-take makes do not grow with the
// volumes staged; the file-system checks of staging and publish paths
// grow with the paths: Files.Stat and Files.ReadDir once per path,
// Volumes.FreeSpace and SMB.Check as asked. A bulk
// read that fails is not repeated: every read answered from it fails the
// same way, and the stock-take reports that part as incomplete. Calls that
// change the host pass through; a stock-take makes none.
//
// A snapshot is for one stock-take: what it answers is the host as it was
// when each class was first read.
func Snapshot(h host.Host) host.Host {
	s := &snapshot{h: h, deviceIDs: map[uint32]cached[[]host.Designator]{}, scsiAddrs: map[uint32]cached[host.SCSIAddress]{}, diskNums: map[string]cached[uint32]{},
		resolved: map[string]cached[[]netip.Addr]{}, stats: map[string]cached[host.PathInfo]{}, dirs: map[string]cached[[]string]{}}
	return host.Host{
		Disks:   snapDisks{Disks: h.Disks, s: s},
		Volumes: snapVolumes{Volumes: h.Volumes, s: s},
		Files:   snapFiles{Files: h.Files, s: s},
		SMB:     snapSMB{SMB: h.SMB, s: s},
		ISCSI:   snapISCSI{ISCSI: h.ISCSI, s: s},
		// The volumes' root ACLs are read one root at a time, as paths
		// are; they pass through.
		Security: h.Security,
	}
}

// cached is one answer of the host.
type cached[T any] struct {
	v   T
	err error
}

// once reads a class the first time it is asked for and keeps the answer.
type once[T any] struct {
	done bool
	c    cached[T]
}

func (o *once[T]) get(mu *sync.Mutex, read func() (T, error)) (T, error) {
	mu.Lock()
	defer mu.Unlock()
	if !o.done {
		v, err := read()
		// A read cut by the end of ctx is not an answer of the host:
		// it is not kept, and the next caller asks again.
		if err == nil || !isCtxErr(err) {
			o.done, o.c = true, cached[T]{v, err}
		}
		return v, err
	}
	return o.c.v, o.c.err
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

type snapshot struct {
	h  host.Host
	mu sync.Mutex // serialises the reads: one of each class at a time

	disks     once[[]host.Disk]
	volumes   once[[]host.ListedVolume]
	mappings  once[[]host.SMBMapping]
	sessions  once[[]host.ISCSISession]
	bySession once[map[string][]uint32]
	portals   once[[]host.Portal]
	logins    once[[]host.PersistentLogin]
	deviceIDs map[uint32]cached[[]host.Designator]
	scsiAddrs map[uint32]cached[host.SCSIAddress]
	diskNums  map[string]cached[uint32]
	resolved  map[string]cached[[]netip.Addr]
	stats     map[string]cached[host.PathInfo]
	dirs      map[string]cached[[]string]
}

type snapFiles struct {
	host.Files
	s *snapshot
}

func (f snapFiles) Stat(ctx context.Context, path string) (host.PathInfo, error) {
	return keyed(&f.s.mu, f.s.stats, path, func() (host.PathInfo, error) { return f.Files.Stat(ctx, path) })
}

func (f snapFiles) ReadDir(ctx context.Context, path string) ([]string, error) {
	return keyed(&f.s.mu, f.s.dirs, path, func() ([]string, error) { return f.Files.ReadDir(ctx, path) })
}

type snapDisks struct {
	host.Disks
	s *snapshot
}

func (d snapDisks) List(ctx context.Context) ([]host.Disk, error) {
	return d.s.disks.get(&d.s.mu, func() ([]host.Disk, error) { return d.Disks.List(ctx) })
}

func (d snapDisks) Get(ctx context.Context, number uint32) (host.Disk, error) {
	disks, err := d.List(ctx)
	if err != nil {
		return host.Disk{}, err
	}
	for _, dk := range disks {
		if dk.Number == number {
			return dk, nil
		}
	}
	return host.Disk{}, fmt.Errorf("disk %d: %w", number, host.ErrNotFound)
}

func (d snapDisks) DeviceIDs(ctx context.Context, dk host.Disk) ([]host.Designator, error) {
	return keyed(&d.s.mu, d.s.deviceIDs, dk.Number, func() ([]host.Designator, error) { return d.Disks.DeviceIDs(ctx, dk) })
}

func (d snapDisks) SCSIAddress(ctx context.Context, dk host.Disk) (host.SCSIAddress, error) {
	return keyed(&d.s.mu, d.s.scsiAddrs, dk.Number, func() (host.SCSIAddress, error) { return d.Disks.SCSIAddress(ctx, dk) })
}

// keyed asks read once per key.
func keyed[K comparable, T any](mu *sync.Mutex, m map[K]cached[T], k K, read func() (T, error)) (T, error) {
	mu.Lock()
	defer mu.Unlock()
	if c, ok := m[k]; ok {
		return c.v, c.err
	}
	v, err := read()
	if err == nil || !isCtxErr(err) {
		m[k] = cached[T]{v, err}
	}
	return v, err
}

type snapVolumes struct {
	host.Volumes
	s *snapshot
}

func (v snapVolumes) List(ctx context.Context) ([]host.ListedVolume, error) {
	return v.s.volumes.get(&v.s.mu, func() ([]host.ListedVolume, error) { return v.Volumes.List(ctx) })
}

func (v snapVolumes) listed(ctx context.Context, guidPath string) (host.ListedVolume, bool, error) {
	vols, err := v.List(ctx)
	if err != nil {
		return host.ListedVolume{}, false, err
	}
	for _, lv := range vols {
		if strings.EqualFold(lv.GUIDPath, guidPath) {
			return lv, true, nil
		}
	}
	return host.ListedVolume{}, false, nil
}

// Get answers from the list: a volume it does not hold is not there (the
// list and Get read the same class; an offline disk hides its volumes from
// both).
func (v snapVolumes) Get(ctx context.Context, guidPath string) (host.Volume, error) {
	lv, ok, err := v.listed(ctx, guidPath)
	switch {
	case err != nil:
		return host.Volume{}, err
	case !ok:
		return host.Volume{}, fmt.Errorf("volume %s: %w", guidPath, host.ErrNotFound)
	}
	return lv.Volume, nil
}

// DiskNumber answers from the list when it placed the volume on a disk;
// otherwise it asks the host, once per volume.
func (v snapVolumes) DiskNumber(ctx context.Context, guidPath string) (uint32, error) {
	lv, ok, err := v.listed(ctx, guidPath)
	if err == nil && ok && lv.OnDisk {
		return lv.DiskNumber, nil
	}
	return keyed(&v.s.mu, v.s.diskNums, strings.ToLower(guidPath), func() (uint32, error) {
		return v.Volumes.DiskNumber(ctx, guidPath)
	})
}

type snapSMB struct {
	host.SMB
	s *snapshot
}

func (m snapSMB) Mappings(ctx context.Context) ([]host.SMBMapping, error) {
	return m.s.mappings.get(&m.s.mu, func() ([]host.SMBMapping, error) { return m.SMB.Mappings(ctx) })
}

func (m snapSMB) Mapping(ctx context.Context, remotePath string) (host.SMBMapping, error) {
	all, err := m.Mappings(ctx)
	if err != nil {
		return host.SMBMapping{}, err
	}
	for _, mp := range all {
		if strings.EqualFold(mp.RemotePath, remotePath) {
			return mp, nil
		}
	}
	return host.SMBMapping{}, fmt.Errorf("global mapping of %s: %w", remotePath, host.ErrNotFound)
}

type snapISCSI struct {
	host.ISCSI
	s *snapshot
}

func (x snapISCSI) all(ctx context.Context) ([]host.ISCSISession, error) {
	return x.s.sessions.get(&x.s.mu, func() ([]host.ISCSISession, error) { return x.ISCSI.Sessions(ctx, "") })
}

func (x snapISCSI) Sessions(ctx context.Context, iqn string) ([]host.ISCSISession, error) {
	all, err := x.all(ctx)
	if err != nil || iqn == "" {
		return all, err
	}
	var out []host.ISCSISession
	for _, s := range all {
		if strings.EqualFold(s.TargetNodeAddress, iqn) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (x snapISCSI) DisksBySession(ctx context.Context) (map[string][]uint32, error) {
	return x.s.bySession.get(&x.s.mu, func() (map[string][]uint32, error) { return x.ISCSI.DisksBySession(ctx) })
}

// SessionDisks answers from DisksBySession; a session the listing does not
// hold is gone (ErrNotFound, as the host says of a logged-out session).
func (x snapISCSI) SessionDisks(ctx context.Context, s host.ISCSISession) ([]uint32, error) {
	all, err := x.all(ctx)
	if err != nil {
		return nil, err
	}
	known := false
	for _, o := range all {
		known = known || o.SessionID == s.SessionID
	}
	if !known {
		return nil, fmt.Errorf("iSCSI session %s: %w", s.SessionID, host.ErrNotFound)
	}
	by, err := x.DisksBySession(ctx)
	if err != nil {
		return nil, err
	}
	return by[s.SessionID], nil
}

func (x snapISCSI) Portals(ctx context.Context) ([]host.Portal, error) {
	return x.s.portals.get(&x.s.mu, func() ([]host.Portal, error) { return x.ISCSI.Portals(ctx) })
}

func (x snapISCSI) PersistentLogins(ctx context.Context) ([]host.PersistentLogin, error) {
	return x.s.logins.get(&x.s.mu, func() ([]host.PersistentLogin, error) { return x.ISCSI.PersistentLogins(ctx) })
}

func (x snapISCSI) ResolvePortal(ctx context.Context, p host.Portal) ([]netip.Addr, error) {
	return keyed(&x.s.mu, x.s.resolved, strings.ToLower(p.Address), func() ([]netip.Addr, error) {
		return x.ISCSI.ResolvePortal(ctx, p)
	})
}
