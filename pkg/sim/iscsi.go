package sim

import (
	"context"
	"fmt"
	"net"
	"net/netip"
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
	addr := s.Address
	if addr == "" {
		addr = s.Portal
	}
	return host.ISCSISession{
		Ref:               sessionRefPrefix + s.ID,
		SessionID:         s.ID,
		TargetNodeAddress: s.Target,
		TargetPortal:      parsePortalKey(addr),
		InitiatorPortal:   s.InitiatorPortal,
		IsConnected:       st.portalReachable(s.Portal),
		IsPersistent:      s.Persistent,
	}
}

// resolve returns the IP addresses the host of a portal resolves to in the
// simulated network: an IP address itself, a name what Names lists.
func (st *State) resolve(p host.Portal) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(p.Address); err == nil {
		return []netip.Addr{host.PlainAddr(a)}, nil
	}
	var out []netip.Addr
	for _, s := range st.Names[strings.ToLower(p.Address)] {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, host.PlainAddr(a))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("host name %s: not resolved: %w", p.Address, host.ErrNotFound)
	}
	return out, nil
}

// answerAddress returns the address (IP:port) target t answers a login
// through the portal of key on: where the target redirects it, else the
// portal's address, its name resolved to the first address. A name that
// does not resolve fails as ISDSC_DNS_NAME_UNRESOLVED does.
func (st *State) answerAddress(t *TargetState, key string) (string, error) {
	if a, ok := t.Redirects[key]; ok {
		return a, nil
	}
	p := parsePortalKey(key)
	addrs, err := st.resolve(p)
	if err != nil {
		return "", fmt.Errorf("portal %s: %w", key, host.ErrUnreachable)
	}
	return portalKey(host.Portal{Address: addrs[0].String(), Port: p.Port}), nil
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
	addr, err := st.answerAddress(t, key)
	if err != nil {
		addr = key // a login replayed at boot after the name stopped resolving
	}
	st.Sessions = append(st.Sessions, SessionState{ID: id, Target: t.IQN, Portal: key, Address: addr,
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
		GUID:           l.GUID,
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
				l.PartitionStyle, l.Partitions, l.GUID = d.PartitionStyle, d.Partitions, d.GUID
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
		t := st.target(r.TargetIQN)
		if _, err := st.answerAddress(t, key); err != nil {
			return host.ISCSISession{}, fmt.Errorf("target %s via portal %s: the DNS name was not resolved: %w", r.TargetIQN, key, err)
		}
		if err := st.secondLogin(r.TargetIQN, key, r.Multipath); err != nil {
			return host.ISCSISession{}, err
		}
		sess := h.s.newSession(st, r.TargetIQN, key, r.InitiatorPortal, r.Auth, r.Multipath, r.Persistent, false)
		if r.Persistent {
			// Whether Windows keeps a second persistent login of the
			// target through the portal beside the first is uncertain
			// (WindowsAnswers.SecondPersistentLogin).
			if h.s.cfg.Windows.SecondPersistentLogin != SecondPersistentLoginAdd {
				st.PersistentLogins = slices.DeleteFunc(st.PersistentLogins, func(l LoginState) bool {
					return strings.EqualFold(l.Target, r.TargetIQN) && l.Portal == key
				})
			}
			st.PersistentLogins = append(st.PersistentLogins, LoginState{Target: sess.Target, Portal: key,
				InitiatorPortal: r.InitiatorPortal, Auth: r.Auth, CHAPUser: user, CHAPSecretSHA256: hash, Multipath: r.Multipath})
		}
		made := st.toHostSession(sess)
		if t.SecondSessionAtLogin {
			h.s.newSession(st, r.TargetIQN, key, r.InitiatorPortal, r.Auth, r.Multipath, false, false)
		}
		if t.LoginWithoutID {
			return host.ISCSISession{}, fmt.Errorf("target %s via portal %s: %w", r.TargetIQN, key, host.ErrSessionUnknown)
		}
		return made, nil
	})
}

// secondLogin refuses a login to target iqn next to a session of it unless
// both are multipath. Without MPIO a second session to the same target is
// refused (ISDSC_TARGET_ALREADY_LOGGED_IN, which democratic-csi tolerates;
// docs/windows.md#iscsi-discovery-and-second-sessions); uncertain. With
// multipath on both, Windows makes another session even through the same
// portal: "the login is allowed to proceed and create a new login session
// even if there is already a login session to the target"
// (VDS_ISCSI_LOGIN_FLAG, VDS_ILF_MULTIPATH_ENABLED, on learn.microsoft.com).
// A persistent login replayed at boot meets the same rule.
func (st *State) secondLogin(iqn, key string, multipath bool) error {
	for _, s := range st.Sessions {
		if strings.EqualFold(s.Target, iqn) && (!s.Multipath || !multipath) {
			return fmt.Errorf("target %s via portal %s: already logged in via portal %s without multipath: %w", iqn, key, s.Portal, host.ErrAlreadyExists)
		}
	}
	return nil
}

func (h iscsiHost) ResolvePortal(ctx context.Context, p host.Portal) ([]netip.Addr, error) {
	return call(ctx, h.s, OpISCSIResolvePortal, false, func(st *State) ([]netip.Addr, error) {
		return st.resolve(p)
	})
}

func (h iscsiHost) DisksBySession(ctx context.Context) (map[string][]uint32, error) {
	return call(ctx, h.s, OpISCSIDisksBySession, false, func(st *State) (map[string][]uint32, error) {
		out := map[string][]uint32{}
		for _, s := range st.Sessions {
			for _, d := range st.Disks {
				if d.Target != "" && strings.EqualFold(d.Target, s.Target) {
					out[s.ID] = append(out[s.ID], d.Number)
				}
			}
		}
		return out, nil
	})
}

// simInitiatorInstance is the initiator adapter of every simulated login:
// the Microsoft software initiator's (iscsicli ListPersistentTargets shows
// it as "Initiator Name").
const simInitiatorInstance = `ROOT\ISCSIPRT\0000_0`

func (h iscsiHost) PersistentLogins(ctx context.Context) ([]host.PersistentLogin, error) {
	return call(ctx, h.s, OpISCSIPersistentLogins, false, func(st *State) ([]host.PersistentLogin, error) {
		out := make([]host.PersistentLogin, 0, len(st.PersistentLogins))
		for _, l := range st.PersistentLogins {
			out = append(out, host.PersistentLogin{TargetNodeAddress: l.Target, Portal: parsePortalKey(l.Portal),
				InitiatorInstance: simInitiatorInstance, InitiatorPort: host.AnyInitiatorPort})
		}
		return out, nil
	})
}

// RemovePersistentLogin removes the login; the sessions made through it
// stay and are no longer persistent.
func (h iscsiHost) RemovePersistentLogin(ctx context.Context, l host.PersistentLogin) error {
	_, err := call(ctx, h.s, OpISCSIRemovePersistent, true, func(st *State) (struct{}, error) {
		key := portalKey(l.Portal)
		n := len(st.PersistentLogins)
		st.PersistentLogins = slices.DeleteFunc(st.PersistentLogins, func(p LoginState) bool {
			return strings.EqualFold(p.Target, l.TargetNodeAddress) && p.Portal == key
		})
		if n == len(st.PersistentLogins) {
			return struct{}{}, fmt.Errorf("persistent login of target %s through %s: %w", l.TargetNodeAddress, key, host.ErrNotFound)
		}
		for i := range st.Sessions {
			if strings.EqualFold(st.Sessions[i].Target, l.TargetNodeAddress) && st.Sessions[i].Portal == key {
				st.Sessions[i].Persistent = false
			}
		}
		return struct{}{}, nil
	})
	return err
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

// ReportLUNs answers SCSI REPORT LUNS: every LUN of the target, whether
// its disk has appeared on the node or not (a LUN that appears only after
// rescans is listed at once: the target has it).
func (h iscsiHost) ReportLUNs(ctx context.Context, iqn string) ([]uint32, error) {
	return call(ctx, h.s, OpISCSIReportLUNs, false, func(st *State) ([]uint32, error) {
		if !st.hasSession(iqn) {
			return nil, fmt.Errorf("target %s: no session: %w", iqn, host.ErrNotFound)
		}
		t := st.target(iqn)
		if t == nil {
			return nil, fmt.Errorf("target %s: %w", iqn, host.ErrNotFound)
		}
		out := make([]uint32, 0, len(t.LUNs))
		for _, l := range t.LUNs {
			out = append(out, l.LUN)
		}
		slices.Sort(out)
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
	// Redirects moves the logins made through a portal of the target to
	// another address (a login redirect, as arrays with a group or
	// discovery address do): their sessions' connections report that
	// address, not the portal's.
	Redirects map[host.Portal]host.Portal
	// LoginWithoutID makes Connect log in and then fail with
	// host.ErrSessionUnknown (a Connect that returns no session
	// identifier; uncertain on Windows).
	LoginWithoutID bool
	// SecondSessionAtLogin makes every login also make a second,
	// non-persistent session through the same portal, as another
	// initiator's login at the same moment would: with LoginWithoutID,
	// two new sessions appear for one login and neither can be told to be
	// the caller's.
	SecondSessionAtLogin bool
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
	for from, to := range spec.Redirects {
		if _, err := netip.ParseAddr(to.Address); err != nil {
			return fmt.Errorf("target %s: redirect of %s to %s: a redirect goes to an IP address: %w", spec.IQN, from, to, host.ErrInvalid)
		}
		if t.Redirects == nil {
			t.Redirects = map[string]string{}
		}
		t.Redirects[portalKey(from)] = portalKey(to)
	}
	t.LoginWithoutID = spec.LoginWithoutID
	t.SecondSessionAtLogin = spec.SecondSessionAtLogin
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

// SetNames sets what a host name resolves to in the simulated network (no
// address: the name no longer resolves).
func (s *Sim) SetNames(name string, addrs ...string) error {
	for _, a := range addrs {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("address %q of %s: %w", a, name, host.ErrInvalid)
		}
	}
	return s.control(func(st *State) error {
		if st.Names == nil {
			st.Names = map[string][]string{}
		}
		if len(addrs) == 0 {
			delete(st.Names, strings.ToLower(name))
			return nil
		}
		st.Names[strings.ToLower(name)] = slices.Clone(addrs)
		return nil
	})
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
