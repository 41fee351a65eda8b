package iscsi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// A session's connection reports the address the target answered on
// (MSFT_iSCSIConnection.TargetAddress, "the IP address of the target"),
// which is not the configured portal when that portal is a host name or
// when the target redirects logins (RFC 7143's "target moved" login
// statuses; arrays with a group or discovery address do). And a multipath
// login makes a new session even when one exists
// (VDS_ISCSI_LOGIN_FLAG, VDS_ILF_MULTIPATH_ENABLED: "the login is allowed
// to proceed and create a new login session even if there is already a
// login session to the target"). So which configured portal a session was
// made through is recorded when the backend makes it: the target's note
// (targetRecord), by SessionIdentifier. A session the note does not know
// (made before the note existed, by someone else, or lost by a crash
// between the login and the note's write) is matched to a configured
// portal only by its connection's address and port: the portal's own
// address, one a session recorded as made through that portal was seen
// answering on (a redirect the record has watched, learned by listing the
// sessions after every login: after a reboot, Windows replays the
// persistent logins and their sessions come back with new identifiers),
// or one the portal's name resolves to now (pathsOf says in which order,
// and how a session that could be several portals' is given to one).
// Nothing else is assumed: an unknown session
// that matches no portal covers none, and the stage logs in through the
// portal (making one session more, which the note then knows) rather than
// guess.

// targetNotePrefix starts the key of a target's note: "iscsi/target/" and
// the target's IQN in lower case.
var targetNotePrefix = backend.NotePrefix(contract.KindISCSI, "target")

// TargetNotePrefix starts the keys of the notes the backend keeps about
// its targets' sessions, for tools that take stock of a node.
var TargetNotePrefix = targetNotePrefix

func targetNoteKey(iqn string) string { return targetNotePrefix + normalizeIQN(iqn) }

// targetRecord is the note the backend keeps about a target: the sessions
// it made or adopted, by SessionIdentifier. It holds no CHAP user or
// secret.
type targetRecord struct {
	Sessions map[string]sessionRecord `json:"sessions"`
	// Answers holds, by configured portal (portalKey), the addresses
	// (portalKey of the connection's address and port) its recorded
	// sessions were seen answering on when that is not the portal itself:
	// a redirect, or a host name's address.
	Answers map[string][]string `json:"answers,omitempty"`
}

// maxAnswers bounds the addresses remembered per portal (an array that
// moves logins around its ports would otherwise grow the note for ever).
const maxAnswers = 8

// sessionRecord is what the note says about one session.
type sessionRecord struct {
	// Portal is the configured portal the session was made through
	// (portalKey).
	Portal string `json:"portal"`
}

// targetRecordOf reads the target's note; a target without one has an
// empty record. A note that does not decode is an error: dropping it would
// forget which portals the target's sessions cover, and the next stage
// would log in again through all of them.
func (b *Backend) targetRecordOf(ctx context.Context, iqn string) (targetRecord, error) {
	rec := targetRecord{Sessions: map[string]sessionRecord{}}
	v, ok, err := b.store.Note(ctx, targetNoteKey(iqn))
	if err != nil {
		return rec, fmt.Errorf("read the sessions record of target %s (journal note %q): %w", iqn, targetNoteKey(iqn), err)
	}
	if !ok {
		return rec, nil
	}
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return rec, fmt.Errorf("the sessions record of target %s (journal note %q) does not decode: %w", iqn, targetNoteKey(iqn), err)
	}
	if rec.Sessions == nil {
		rec.Sessions = map[string]sessionRecord{}
	}
	return rec, nil
}

// putTargetRecord writes the target's note, keeping only the sessions
// still live (when live is not nil); an empty record removes the note.
func (b *Backend) putTargetRecord(ctx context.Context, iqn string, rec targetRecord, live []host.ISCSISession) error {
	if live != nil {
		ids := make(map[string]bool, len(live))
		for _, s := range live {
			ids[s.SessionID] = true
		}
		maps.DeleteFunc(rec.Sessions, func(id string, _ sessionRecord) bool { return !ids[id] })
	}
	key := targetNoteKey(iqn)
	if len(rec.Sessions) == 0 {
		if err := b.store.DeleteNote(ctx, key); err != nil {
			return fmt.Errorf("remove the sessions record of target %s (journal note %q): %w", iqn, key, err)
		}
		return nil
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the sessions record of target %s: %w", iqn, err)
	}
	if err := b.store.PutNote(ctx, key, string(v)); err != nil {
		return fmt.Errorf("write the sessions record of target %s (journal note %q): %w", iqn, key, err)
	}
	return nil
}

// paths says which configured portals a target's sessions go through.
type paths struct {
	// through maps each live session to the configured portal (portalKey)
	// it goes through: from the record, or matched by its address. A
	// session in neither is absent.
	through map[string]string
	// adopted are the sessions matched by address that the record did not
	// know, and learned the addresses recorded sessions answer on that
	// the record does not hold yet: a transition records both.
	adopted map[string]string
	learned map[string][]string
}

// pending reports whether the record has something to add (a transition
// writes it).
func (p paths) pending() bool { return len(p.adopted) > 0 || len(p.learned) > 0 }

// record adds what p found to rec.
func (p paths) record(rec *targetRecord) {
	for id, k := range p.adopted {
		rec.Sessions[id] = sessionRecord{Portal: k}
	}
	for k, addrs := range p.learned {
		if rec.Answers == nil {
			rec.Answers = map[string][]string{}
		}
		for _, a := range addrs {
			if !slices.Contains(rec.Answers[k], a) {
				rec.Answers[k] = append(rec.Answers[k], a)
			}
		}
		if n := len(rec.Answers[k]); n > maxAnswers {
			rec.Answers[k] = rec.Answers[k][n-maxAnswers:]
		}
	}
}

// covers reports whether a session goes through the portal with key k;
// with connected, only a connected one counts.
func (p paths) covers(k string, sessions []host.ISCSISession, connected bool) bool {
	for _, s := range sessions {
		if p.through[s.SessionID] == k && (s.IsConnected || !connected) {
			return true
		}
	}
	return false
}

// unknown returns the sessions that go through no configured portal the
// backend can tell.
func (p paths) unknown(sessions []host.ISCSISession) []host.ISCSISession {
	var out []host.ISCSISession
	for _, s := range sessions {
		if _, ok := p.through[s.SessionID]; !ok {
			out = append(out, s)
		}
	}
	return out
}

// pathsOf tells through which of portals the target's sessions go. The
// record decides for the sessions it knows. A session it does not know is
// matched by its connection's address and port, by the strongest evidence
// first: (1) a portal whose own address it is, (2) a portal whose recorded
// sessions were seen answering on it, (3) a portal whose name resolves to
// it now (an IP portal resolves to itself without asking the host; names
// are resolved only when the first two leave a session without a portal
// of its own). Evidence can name several portals (a name that resolves to
// another portal's address; a redirect to where another portal's sessions
// answer), and a portal has one session of the target's: an unknown
// session goes to a candidate that no session covers yet, and to a covered
// one only when every candidate is covered (match). A name that does not
// resolve matches nothing; any other failure to resolve is returned.
func (b *Backend) pathsOf(ctx context.Context, rec targetRecord, portals []host.Portal, sessions []host.ISCSISession) (paths, error) {
	p := paths{through: map[string]string{}, adopted: map[string]string{}, learned: map[string][]string{}}
	covered := map[string]bool{}
	var unknown []host.ISCSISession
	for _, s := range sessions {
		if r, ok := rec.Sessions[s.SessionID]; ok {
			p.through[s.SessionID] = r.Portal
			covered[r.Portal] = true
			if a := portalKey(s.TargetPortal); s.TargetPortal.Address != "" && a != r.Portal &&
				!slices.Contains(rec.Answers[r.Portal], a) && !slices.Contains(p.learned[r.Portal], a) {
				p.learned[r.Portal] = append(p.learned[r.Portal], a)
			}
			continue
		}
		if s.TargetPortal.Address != "" {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) == 0 {
		return p, nil
	}
	byEvidence := func(resolved map[string][]netip.Addr) func(s host.ISCSISession) []string {
		return func(s host.ISCSISession) []string {
			var out []string
			add := func(k string) {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
			a, isAddr := sessionAddr(s)
			port := withDefaultPort(s.TargetPortal).Port
			for _, pt := range portals {
				if pa, ok := literalAddr(pt); ok && isAddr && pa == a && withDefaultPort(pt).Port == port {
					add(portalKey(pt))
				}
			}
			for _, pt := range portals {
				if slices.Contains(rec.Answers[portalKey(pt)], portalKey(s.TargetPortal)) {
					add(portalKey(pt))
				}
			}
			for _, pt := range portals {
				if isAddr && withDefaultPort(pt).Port == port && slices.Contains(resolved[portalKey(pt)], a) {
					add(portalKey(pt))
				}
			}
			return out
		}
	}
	if m, ok := match(unknown, maps.Clone(covered), byEvidence(nil)); ok {
		p.adopt(m)
		return p, nil
	}
	resolved := map[string][]netip.Addr{}
	for _, pt := range portals {
		k := portalKey(pt)
		if _, done := resolved[k]; done {
			continue
		}
		addrs, err := b.resolve(ctx, pt)
		if err != nil {
			return p, err
		}
		resolved[k] = addrs
	}
	m, _ := match(unknown, covered, byEvidence(resolved))
	p.adopt(m)
	return p, nil
}

// match gives each of the unknown sessions one of its candidate portals
// (candidates, strongest evidence first): the first candidate no session
// covers yet, else its first candidate. Sessions with fewer candidates
// choose first, so that a session that can only be one portal's is not
// left without it by one that could be another's. ok reports whether
// every session found an uncovered candidate. covered gains the portals
// given.
func match(unknown []host.ISCSISession, covered map[string]bool, candidates func(host.ISCSISession) []string) (map[string]string, bool) {
	type choice struct {
		id    string
		cands []string
	}
	cs := make([]choice, 0, len(unknown))
	for _, s := range unknown {
		cs = append(cs, choice{id: s.SessionID, cands: candidates(s)})
	}
	slices.SortStableFunc(cs, func(a, b choice) int { return len(a.cands) - len(b.cands) })
	out := map[string]string{}
	ok := true
	for _, c := range cs {
		if len(c.cands) == 0 {
			ok = false
			continue
		}
		k := c.cands[0]
		if i := slices.IndexFunc(c.cands, func(k string) bool { return !covered[k] }); i >= 0 {
			k = c.cands[i]
		} else {
			ok = false
		}
		out[c.id] = k
		covered[k] = true
	}
	return out, ok
}

// adopt records the portals match gave to sessions the record did not
// know.
func (p paths) adopt(m map[string]string) {
	for id, k := range m {
		p.through[id], p.adopted[id] = k, k
	}
}

// sessionAddr is the IP address a session's connection answered on.
func sessionAddr(s host.ISCSISession) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.Trim(s.TargetPortal.Address, "[]"))
	if err != nil {
		return netip.Addr{}, false // not an address: nothing to compare
	}
	return host.PlainAddr(a), true
}

// literalAddr is the IP address a portal is given as, if it is one.
func literalAddr(pt host.Portal) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.Trim(pt.Address, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return host.PlainAddr(a), true
}

// resolve returns the addresses portal pt's name resolves to: an IP
// address itself, without asking the host; a name that does not resolve,
// none.
func (b *Backend) resolve(ctx context.Context, pt host.Portal) ([]netip.Addr, error) {
	if a, ok := literalAddr(pt); ok {
		return []netip.Addr{a}, nil
	}
	addrs, err := b.h.ISCSI.ResolvePortal(ctx, pt)
	if errors.Is(err, host.ErrNotFound) {
		klog.FromContext(ctx).V(4).Info("Portal's host name does not resolve; no session is matched to it", "portal", pt.String(), "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = host.PlainAddr(a)
	}
	return out, nil
}

func withDefaultPort(p host.Portal) host.Portal {
	if p.Port == 0 {
		p.Port = host.DefaultISCSIPort
	}
	return p
}

// adoptLogin finds the session a login through portal made when Connect
// could not say which (host.ErrSessionUnknown): the target's sessions now,
// less those listed before the login (before) and those the record knows.
// Exactly one new session is the login's; none or several leave loginErr
// as the stage's error (retryable), never a guess. The caller holds the
// target's transition and the portal's lock, so no login of this plugin
// runs in between.
//
// Sessions that appeared beside the login's (another initiator, or a tool,
// logging in to the target at the same moment) are neither recorded nor
// logged out: a session can be told to be this login's only by the
// identifier Connect did not give, and logging out the wrong one would cut
// another initiator's path (under multipath Windows refuses no logout but
// the last). They are named in the error and the log instead; the retry
// matches them to the portals by their addresses (pathsOf) or logs in
// again, and the stock-take lists every session of the target.
func (b *Backend) adoptLogin(ctx context.Context, iqn string, before []host.ISCSISession, rec targetRecord, loginErr error) (host.ISCSISession, error) {
	now, err := b.h.ISCSI.Sessions(ctx, iqn)
	if err != nil {
		return host.ISCSISession{}, errors.Join(loginErr, err)
	}
	var fresh []host.ISCSISession
	for _, s := range now {
		_, known := rec.Sessions[s.SessionID]
		if !known && !slices.ContainsFunc(before, func(o host.ISCSISession) bool { return o.SessionID == s.SessionID }) {
			fresh = append(fresh, s)
		}
	}
	if len(fresh) == 1 {
		return fresh[0], nil
	}
	names := make([]string, len(fresh))
	for i, s := range fresh {
		names[i] = s.SessionID + " at " + s.TargetPortal.String()
	}
	klog.FromContext(ctx).Info("Cannot tell which session the login made; leaving the target's new sessions as they are and failing the stage for a retry",
		"iqn", iqn, "sessions", names)
	if len(fresh) == 0 {
		return host.ISCSISession{}, loginErr
	}
	return host.ISCSISession{}, fmt.Errorf("%w; %d sessions of the target appeared meanwhile (%s) and which is this login's cannot be told: "+
		"none is recorded or logged out (all but one are another initiator's), the retry matches them to the portals by their addresses",
		loginErr, len(fresh), strings.Join(names, ", "))
}
