package sim

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

const sessionRefPrefix = "sim:session:"

// portalKey is the canonical "address:port" of a portal (port 0 means the
// default 3260; host names compare case-insensitively).
func portalKey(p host.Portal) string {
	if p.Port == 0 {
		p.Port = host.DefaultISCSIPort
	}
	p.Address = strings.ToLower(p.Address)
	return p.String()
}

func parsePortalKey(k string) host.Portal {
	h, port, err := net.SplitHostPort(k)
	if err != nil {
		return host.Portal{Address: k}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return host.Portal{Address: h}
	}
	return host.Portal{Address: h, Port: uint16(n)}
}

func (st *State) target(iqn string) *TargetState {
	for i := range st.Targets {
		if strings.EqualFold(st.Targets[i].IQN, iqn) {
			return &st.Targets[i]
		}
	}
	return nil
}

func (st *State) portal(key string) *PortalState {
	for i := range st.Portals {
		if st.Portals[i].Portal == key {
			return &st.Portals[i]
		}
	}
	return nil
}

func (st *State) portalReachable(key string) bool {
	return !slices.Contains(st.UnreachablePortals, key)
}

// servedAt returns the targets the storage serves on a portal.
func (st *State) servedAt(key string) []*TargetState {
	var out []*TargetState
	for i := range st.Targets {
		if slices.Contains(st.Targets[i].Portals, key) {
			out = append(out, &st.Targets[i])
		}
	}
	return out
}

func (st *State) hasSession(iqn string) bool {
	for _, s := range st.Sessions {
		if strings.EqualFold(s.Target, iqn) {
			return true
		}
	}
	return false
}

func (st *State) sessionIndex(s host.ISCSISession) int {
	id := s.SessionID
	if id == "" {
		id = strings.TrimPrefix(s.Ref, sessionRefPrefix)
	}
	for i := range st.Sessions {
		if st.Sessions[i].ID == id {
			return i
		}
	}
	return -1
}

func (st *State) toHostSession(s *SessionState) host.ISCSISession {
	return host.ISCSISession{
		Ref:               sessionRefPrefix + s.ID,
		SessionID:         s.ID,
		TargetNodeAddress: s.Target,
		TargetPortal:      parsePortalKey(s.Portal),
		InitiatorPortal:   s.InitiatorPortal,
		IsConnected:       st.portalReachable(s.Portal),
		IsPersistent:      s.Persistent,
	}
}

// discover runs SendTargets discovery on a portal with the given discovery
// CHAP user and secret hash.
func (st *State) discover(key, chapUser, chapHash string) ([]string, error) {
	served := st.servedAt(key)
	if len(served) == 0 || !st.portalReachable(key) {
		return nil, fmt.Errorf("portal %s: no answer: %w", key, host.ErrUnreachable)
	}
	var iqns []string
	for _, t := range served {
		if t.DiscoveryCHAPUser != "" && (chapUser != t.DiscoveryCHAPUser || chapHash != t.DiscoveryCHAPSecretSHA256) {
			return nil, fmt.Errorf("portal %s: discovery CHAP: %w", key, host.ErrLogonFailure)
		}
		iqns = append(iqns, t.IQN)
	}
	return iqns, nil
}

// checkLogin decides whether a login to a target through a portal with
// these credentials succeeds now.
func (s *Sim) checkLogin(st *State, iqn, key string, auth host.AuthType, chapUser, chapHash string) error {
	t := st.target(iqn)
	if t == nil {
		return fmt.Errorf("target %s: %w", iqn, host.ErrNotFound)
	}
	if !slices.Contains(t.Portals, key) || !st.portalReachable(key) {
		return fmt.Errorf("target %s via portal %s: no answer: %w", iqn, key, host.ErrUnreachable)
	}
	// Uncertain: a target without CHAP is assumed to accept an initiator
	// that offers CHAP (the target may pick AuthMethod None).
	if t.CHAPUser != "" {
		if auth == host.AuthNone {
			return fmt.Errorf("target %s requires CHAP: %w", iqn, host.ErrLogonFailure)
		}
		if chapUser != t.CHAPUser || chapHash != t.CHAPSecretSHA256 {
			return fmt.Errorf("target %s: CHAP authentication failed: %w", iqn, host.ErrLogonFailure)
		}
	}
	if auth == host.AuthMutual {
		// Mutual CHAP: the initiator checks the target with the node-wide
		// initiator secret (SetIScsiInitiatorCHAPSharedSecret on
		// learn.microsoft.com).
		if st.InitiatorSecretSHA256 == "" || t.MutualSecretSHA256 == "" || st.InitiatorSecretSHA256 != t.MutualSecretSHA256 {
			return fmt.Errorf("target %s: mutual CHAP authentication failed: %w", iqn, host.ErrLogonFailure)
		}
	}
	return nil
}

// newSession logs in. The first session of a target makes its LUNs appear
// as disks (late LUNs after their rescans unless immediate).
func (s *Sim) newSession(st *State, iqn, key, initiatorPortal string, auth host.AuthType, multipath, persistent, immediate bool) *SessionState {
	t := st.target(iqn)
	first := !st.hasSession(t.IQN)
	// Windows session identifiers look like "ffffe0001234a010-4000013700000002".
	id := fmt.Sprintf("ffffe000%08x-40000137%08x", st.NextSessionID*0x10, st.NextSessionID)
	st.NextSessionID++
	st.Sessions = append(st.Sessions, SessionState{ID: id, Target: t.IQN, Portal: key,
		InitiatorPortal: initiatorPortal, Auth: auth, Multipath: multipath, Persistent: persistent})
	if first {
		for i := range t.LUNs {
			l := &t.LUNs[i]
			if immediate || l.AppearAfterRescans == 0 {
				s.attachLUN(st, t, l)
			} else {
				l.Pending = l.AppearAfterRescans
			}
		}
	}
	return &st.Sessions[len(st.Sessions)-1]
}

// attachLUN makes a LUN appear as a disk with the contents of its backing
// store. Windows Server's SAN policy keeps it offline (docs/windows.md#san-policy);
// uncertain whether Windows remembers an earlier online state of
// the same LUN, the sim does not.
func (s *Sim) attachLUN(st *State, t *TargetState, l *LUNState) {
	for _, d := range st.Disks {
		if d.Target == t.IQN && d.LUN == l.LUN {
			return
		}
	}
	l.Pending = 0
	st.addDisk(DiskState{
		Serial:         l.Serial,
		Page83:         l.Page83,
		Location:       fmt.Sprintf("Integrated : Adapter 2 : Port 0 : Target %d : LUN %d", t.Ordinal, l.LUN),
		Size:           l.Size,
		BusType:        host.BusTypeISCSI,
		Offline:        true,
		OfflineReason:  host.OfflineReasonPolicy,
		Health:         host.HealthHealthy,
		PartitionStyle: l.PartitionStyle,
		Partitions:     l.Partitions,
		Target:         t.IQN,
		LUN:            l.LUN,
	})
	l.Partitions = nil
}

// removeTargetDisks removes the target's disks, storing their contents back
// in the LUNs' backing store.
func (s *Sim) removeTargetDisks(st *State, iqn string) {
	t := st.target(iqn)
	if t == nil {
		return
	}
	kept := st.Disks[:0]
	for _, d := range st.Disks {
		if d.Target != t.IQN {
			kept = append(kept, d)
			continue
		}
		for i := range t.LUNs {
			if l := &t.LUNs[i]; l.LUN == d.LUN {
				l.PartitionStyle, l.Partitions = d.PartitionStyle, d.Partitions
				l.Size = max(d.Size, d.PendingSize)
			}
		}
	}
	st.Disks = kept
	for i := range t.LUNs {
		t.LUNs[i].Pending = 0
	}
}

// iscsiHost implements host.ISCSI.
type iscsiHost struct{ s *Sim }

func (h iscsiHost) Portals(ctx context.Context) ([]host.Portal, error) {
	return call(ctx, h.s, OpISCSIPortals, false, func(st *State) ([]host.Portal, error) {
		out := make([]host.Portal, 0, len(st.Portals))
		for _, p := range st.Portals {
			out = append(out, parsePortalKey(p.Portal))
		}
		return out, nil
	})
}

func (h iscsiHost) AddPortal(ctx context.Context, p host.Portal, initiatorPortal string, chap *host.CHAP) error {
	_, err := call(ctx, h.s, OpISCSIAddPortal, true, func(st *State) (struct{}, error) {
		key := portalKey(p)
		if st.portal(key) != nil {
			return struct{}{}, fmt.Errorf("portal %s: %w", key, host.ErrAlreadyExists)
		}
		var user, hash string
		if chap != nil {
			user, hash = chap.User, st.hash(chap.Secret.Reveal())
		}
		// MSFT_iSCSITargetPortal.New runs SendTargets discovery at once
		// (docs/windows.md#iscsi-discovery-and-second-sessions); targets added later
		// need a refresh.
		iqns, err := st.discover(key, user, hash)
		if err != nil {
			return struct{}{}, err
		}
		st.Portals = append(st.Portals, PortalState{Portal: key, InitiatorPortal: initiatorPortal,
			DiscoveryCHAPUser: user, DiscoveryCHAPSecretSHA256: hash, Targets: iqns})
		return struct{}{}, nil
	})
	return err
}

func (h iscsiHost) RefreshPortal(ctx context.Context, p host.Portal) error {
	_, err := call(ctx, h.s, OpISCSIRefreshPortal, true, func(st *State) (struct{}, error) {
		key := portalKey(p)
		ps := st.portal(key)
		if ps == nil {
			return struct{}{}, fmt.Errorf("portal %s: %w", key, host.ErrNotFound)
		}
		iqns, err := st.discover(key, ps.DiscoveryCHAPUser, ps.DiscoveryCHAPSecretSHA256)
		if err != nil {
			return struct{}{}, err
		}
		ps.Targets = iqns
		return struct{}{}, nil
	})
	return err
}

func (h iscsiHost) RemovePortal(ctx context.Context, p host.Portal) error {
	_, err := call(ctx, h.s, OpISCSIRemovePortal, true, func(st *State) (struct{}, error) {
		key := portalKey(p)
		for i := range st.Portals {
			if st.Portals[i].Portal == key {
				// Sessions stay: removing a portal does not log out.
				st.Portals = append(st.Portals[:i], st.Portals[i+1:]...)
				return struct{}{}, nil
			}
		}
		return struct{}{}, fmt.Errorf("portal %s: %w", key, host.ErrNotFound)
	})
	return err
}

func (h iscsiHost) Targets(ctx context.Context, p host.Portal) ([]host.ISCSITarget, error) {
	return call(ctx, h.s, OpISCSITargets, false, func(st *State) ([]host.ISCSITarget, error) {
		key := portalKey(p)
		ps := st.portal(key)
		if ps == nil {
			return nil, fmt.Errorf("portal %s: %w", key, host.ErrNotFound)
		}
		out := make([]host.ISCSITarget, 0, len(ps.Targets))
		for _, iqn := range ps.Targets {
			out = append(out, host.ISCSITarget{NodeAddress: iqn, IsConnected: st.hasSession(iqn)})
		}
		return out, nil
	})
}

func (h iscsiHost) Connect(ctx context.Context, r host.ConnectRequest) (host.ISCSISession, error) {
	return call(ctx, h.s, OpISCSIConnect, true, func(st *State) (host.ISCSISession, error) {
		key := portalKey(r.Portal)
		ps := st.portal(key)
		if ps == nil || !slices.ContainsFunc(ps.Targets, func(t string) bool { return strings.EqualFold(t, r.TargetIQN) }) {
			return host.ISCSISession{}, fmt.Errorf("target %s via portal %s: not discovered: %w", r.TargetIQN, key, host.ErrNotFound)
		}
		if st.target(r.TargetIQN) == nil {
			return host.ISCSISession{}, fmt.Errorf("target %s: %w", r.TargetIQN, host.ErrNotFound)
		}
		var user, hash string
		if r.Auth != host.AuthNone {
			if n := r.CHAP.Secret.Len(); n < host.MinCHAPSecret || n > host.MaxCHAPSecret {
				return host.ISCSISession{}, fmt.Errorf("target %s: CHAP secret of %d bytes (want %d to %d): %w", r.TargetIQN, n, host.MinCHAPSecret, host.MaxCHAPSecret, host.ErrInvalid)
			}
			user, hash = r.CHAP.User, st.hash(r.CHAP.Secret.Reveal())
		}
		if err := h.s.checkLogin(st, r.TargetIQN, key, r.Auth, user, hash); err != nil {
			return host.ISCSISession{}, err
		}
		for _, s := range st.Sessions {
			if !strings.EqualFold(s.Target, r.TargetIQN) {
				continue
			}
			if s.Portal == key {
				return host.ISCSISession{}, fmt.Errorf("target %s via portal %s: already logged in: %w", r.TargetIQN, key, host.ErrAlreadyExists)
			}
			// Without MPIO a second session to the same target is refused
			// (ISDSC_TARGET_ALREADY_LOGGED_IN, which democratic-csi
			// tolerates; docs/windows.md#iscsi-discovery-and-second-sessions);
			// uncertain.
			if !s.Multipath || !r.Multipath {
				return host.ISCSISession{}, fmt.Errorf("target %s: already logged in via portal %s without multipath: %w", r.TargetIQN, s.Portal, host.ErrAlreadyExists)
			}
		}
		sess := h.s.newSession(st, r.TargetIQN, key, r.InitiatorPortal, r.Auth, r.Multipath, r.Persistent, false)
		if r.Persistent {
			st.PersistentLogins = slices.DeleteFunc(st.PersistentLogins, func(l LoginState) bool {
				return strings.EqualFold(l.Target, r.TargetIQN) && l.Portal == key
			})
			st.PersistentLogins = append(st.PersistentLogins, LoginState{Target: sess.Target, Portal: key,
				InitiatorPortal: r.InitiatorPortal, Auth: r.Auth, CHAPUser: user, CHAPSecretSHA256: hash, Multipath: r.Multipath})
		}
		return st.toHostSession(sess), nil
	})
}

func (h iscsiHost) Sessions(ctx context.Context, iqn string) ([]host.ISCSISession, error) {
	return call(ctx, h.s, OpISCSISessions, false, func(st *State) ([]host.ISCSISession, error) {
		var out []host.ISCSISession
		for i := range st.Sessions {
			if iqn == "" || strings.EqualFold(st.Sessions[i].Target, iqn) {
				out = append(out, st.toHostSession(&st.Sessions[i]))
			}
		}
		return out, nil
	})
}

func (h iscsiHost) Disconnect(ctx context.Context, sess host.ISCSISession) error {
	_, err := call(ctx, h.s, OpISCSIDisconnect, true, func(st *State) (struct{}, error) {
		i := st.sessionIndex(sess)
		if i < 0 {
			return struct{}{}, fmt.Errorf("session %s: %w", sess.SessionID, host.ErrNotFound)
		}
		iqn := st.Sessions[i].Target
		last := true
		for j, o := range st.Sessions {
			if j != i && strings.EqualFold(o.Target, iqn) {
				last = false
			}
		}
		if last {
			// Windows refuses to log out of a session whose devices are in
			// use (a mounted volume holds the disk).
			for _, d := range st.Disks {
				if d.Target != iqn {
					continue
				}
				for _, p := range d.Partitions {
					if p.Volume == nil {
						continue
					}
					if dirs := h.s.mountedDirs(st, p.Volume.GUID); len(dirs) > 0 {
						return struct{}{}, fmt.Errorf("session %s: disk %d is in use (volume %s mounted at %s): %w", sess.SessionID, d.Number, guidPath(p.Volume.GUID), dirs[0], host.ErrInUse)
					}
				}
			}
		}
		// A persistent login survives a disconnect; Unregister removes it.
		st.Sessions = append(st.Sessions[:i], st.Sessions[i+1:]...)
		if last {
			h.s.removeTargetDisks(st, iqn)
		}
		return struct{}{}, nil
	})
	return err
}

func (h iscsiHost) Unregister(ctx context.Context, sess host.ISCSISession) error {
	_, err := call(ctx, h.s, OpISCSIUnregister, true, func(st *State) (struct{}, error) {
		iqn := sess.TargetNodeAddress
		if i := st.sessionIndex(sess); i >= 0 {
			iqn = st.Sessions[i].Target
		}
		n := len(st.PersistentLogins)
		st.PersistentLogins = slices.DeleteFunc(st.PersistentLogins, func(l LoginState) bool {
			return strings.EqualFold(l.Target, iqn)
		})
		found := n != len(st.PersistentLogins)
		for i := range st.Sessions {
			if strings.EqualFold(st.Sessions[i].Target, iqn) {
				found = true
				st.Sessions[i].Persistent = false
			}
		}
		if !found {
			return struct{}{}, fmt.Errorf("session %s of target %s: %w", sess.SessionID, iqn, host.ErrNotFound)
		}
		return struct{}{}, nil
	})
	return err
}

// Register makes the target's sessions persistent, recording the login
// Reboot replays (Register-IscsiSession: "once an iSCSI session is
// registered, it automatically attempts to reconnect on restart").
func (h iscsiHost) Register(ctx context.Context, sess host.ISCSISession, multipath bool, chap *host.CHAP) error {
	_, err := call(ctx, h.s, OpISCSIRegister, true, func(st *State) (struct{}, error) {
		i := st.sessionIndex(sess)
		if i < 0 {
			return struct{}{}, fmt.Errorf("session %s of target %s: %w", sess.SessionID, sess.TargetNodeAddress, host.ErrNotFound)
		}
		s := &st.Sessions[i]
		var user, hash string
		if chap != nil {
			if n := chap.Secret.Len(); n < host.MinCHAPSecret || n > host.MaxCHAPSecret {
				return struct{}{}, fmt.Errorf("target %s: CHAP secret of %d bytes (want %d to %d): %w", s.Target, n, host.MinCHAPSecret, host.MaxCHAPSecret, host.ErrInvalid)
			}
			user, hash = chap.User, st.hash(chap.Secret.Reveal())
		}
		s.Persistent, s.Multipath = true, s.Multipath || multipath
		st.PersistentLogins = slices.DeleteFunc(st.PersistentLogins, func(l LoginState) bool {
			return strings.EqualFold(l.Target, s.Target) && l.Portal == s.Portal
		})
		st.PersistentLogins = append(st.PersistentLogins, LoginState{Target: s.Target, Portal: s.Portal,
			InitiatorPortal: s.InitiatorPortal, Auth: s.Auth, CHAPUser: user, CHAPSecretSHA256: hash, Multipath: s.Multipath})
		return struct{}{}, nil
	})
	return err
}

func (h iscsiHost) SetInitiatorSecret(ctx context.Context, secret host.Secret) error {
	_, err := call(ctx, h.s, OpISCSISetInitiatorSecret, true, func(st *State) (struct{}, error) {
		if n := secret.Len(); n < host.MinCHAPSecret || n > host.MaxCHAPSecret {
			return struct{}{}, fmt.Errorf("initiator CHAP secret of %d bytes (want %d to %d): %w", n, host.MinCHAPSecret, host.MaxCHAPSecret, host.ErrInvalid)
		}
		st.InitiatorSecretSHA256 = st.hash(secret.Reveal())
		return struct{}{}, nil
	})
	return err
}

func (h iscsiHost) SessionDisks(ctx context.Context, sess host.ISCSISession) ([]uint32, error) {
	return call(ctx, h.s, OpISCSISessionDisks, false, func(st *State) ([]uint32, error) {
		i := st.sessionIndex(sess)
		if i < 0 {
			return nil, fmt.Errorf("session %s: %w", sess.SessionID, host.ErrNotFound)
		}
		var out []uint32
		for _, d := range st.Disks {
			if d.Target == st.Sessions[i].Target {
				out = append(out, d.Number)
			}
		}
		return out, nil
	})
}

// TargetSpec describes an iSCSI target served by the simulated storage.
type TargetSpec struct {
	IQN     string
	Portals []host.Portal
	LUNs    []LUNSpec
	// CHAP, when set, is required for session login (one-way or mutual).
	CHAP *host.CHAP
	// MutualSecret is what the target expects the initiator secret to be
	// for mutual CHAP.
	MutualSecret string
	// DiscoveryCHAP, when set, is required by SendTargets discovery.
	DiscoveryCHAP *host.CHAP
}

// LUNSpec describes a LUN of a target.
type LUNSpec struct {
	LUN    uint32
	Size   uint64 // 0: 1 GiB
	Serial string // "": derived from IQN and LUN
	Page83 string // "": derived from IQN and LUN
	// AppearAfterRescans delays the LUN's disk until that many
	// Disks.Rescan calls after the target's first login.
	AppearAfterRescans int
}

// AddTarget adds a target to the simulated storage. Secrets are kept as
// salted hashes only.
func (s *Sim) AddTarget(spec TargetSpec) error {
	if spec.IQN == "" || len(spec.Portals) == 0 {
		return fmt.Errorf("target %q: IQN and portals required: %w", spec.IQN, host.ErrInvalid)
	}
	return s.control(func(st *State) error {
		if st.target(spec.IQN) != nil {
			return fmt.Errorf("target %s: %w", spec.IQN, host.ErrAlreadyExists)
		}
		return st.addTarget(spec)
	})
}

// addTarget adds a target st does not have yet.
func (st *State) addTarget(spec TargetSpec) error {
	t := TargetState{IQN: spec.IQN, Ordinal: st.NextTargetOrdinal}
	for _, p := range spec.Portals {
		if k := portalKey(p); !slices.Contains(t.Portals, k) {
			t.Portals = append(t.Portals, k)
		}
	}
	for _, l := range spec.LUNs {
		if slices.ContainsFunc(t.LUNs, func(o LUNState) bool { return o.LUN == l.LUN }) {
			return fmt.Errorf("target %s: LUN %d twice: %w", spec.IQN, l.LUN, host.ErrInvalid)
		}
		t.LUNs = append(t.LUNs, newLUN(spec.IQN, l))
	}
	if spec.CHAP != nil {
		t.CHAPUser, t.CHAPSecretSHA256 = spec.CHAP.User, st.hash(spec.CHAP.Secret.Reveal())
	}
	if spec.MutualSecret != "" {
		t.MutualSecretSHA256 = st.hash(spec.MutualSecret)
	}
	if spec.DiscoveryCHAP != nil {
		t.DiscoveryCHAPUser, t.DiscoveryCHAPSecretSHA256 = spec.DiscoveryCHAP.User, st.hash(spec.DiscoveryCHAP.Secret.Reveal())
	}
	st.NextTargetOrdinal++
	st.Targets = append(st.Targets, t)
	return nil
}

// newLUN is the backing store of a new, blank LUN of target iqn.
func newLUN(iqn string, l LUNSpec) LUNState {
	ls := LUNState{LUN: l.LUN, Size: l.Size, Serial: l.Serial, Page83: l.Page83, AppearAfterRescans: l.AppearAfterRescans}
	name := fmt.Sprintf("%s/lun/%d", strings.ToLower(iqn), l.LUN)
	if ls.Size == 0 {
		ls.Size = DefaultDiskSize
	}
	if ls.Serial == "" {
		ls.Serial = page83For(name)[:20]
	}
	if ls.Page83 == "" {
		ls.Page83 = page83For(name)
	}
	return ls
}

// SetPortalReachable makes a portal answer or not. Sessions through an
// unreachable portal report IsConnected false.
func (s *Sim) SetPortalReachable(p host.Portal, ok bool) error {
	return s.control(func(st *State) error {
		key := portalKey(p)
		st.UnreachablePortals = slices.DeleteFunc(st.UnreachablePortals, func(k string) bool { return k == key })
		if !ok {
			st.UnreachablePortals = append(st.UnreachablePortals, key)
		}
		return nil
	})
}
