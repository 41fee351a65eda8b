//go:build linux

// Linux only: the disks, volumes and paths of these tests are the
// simulated host's, which runs only on Linux (pkg/sim doc.go).

package winhost_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// initiator is the Microsoft iSCSI initiator of one node as the scripted
// executor serves it (scripted.Executor.Serve): the WMI classes and the
// iscsidsc calls winhost's ISCSI makes, answered from a model of one
// target behind two portals that are not the addresses it answers on. The
// replies have the shapes the other tests of this package use, which the
// schema check verifies. Connect's output carries the session without its
// connection, as the provider's does, so winhost reports the portal the
// login named until a listing reads the connection.
type initiator struct {
	iqn     string
	portals []host.Portal
	// answer is the address (IP:port) the target answers a login through
	// a portal on, by the portal's key (a redirect, or the address the
	// portal's name resolves to first); names is the resolver.
	answer map[string]string
	names  map[string][]string
	disks  []uint32 // the LUNs' disks (on the simulated host)

	mu         sync.Mutex
	registered map[string]bool
	sessions   []modelSession
	logins     []string // persistent logins, by portal key
	next       int
}

type modelSession struct {
	id, portal, answer string
	multipath          bool
	persistent         bool
}

func modelKey(addr string, port uint16) string {
	return strings.ToLower(net.JoinHostPort(addr, strconv.Itoa(int(port))))
}

func portalPathOf(p host.Portal) string {
	return `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSITargetPortal.TargetPortalAddress="` + p.Address +
		`",TargetPortalPortNumber=` + strconv.Itoa(int(p.Port))
}

func sessionPathOf(id string) string {
	return `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSISession.SessionIdentifier="` + id + `"`
}

func (m *initiator) target() winhost.Instance {
	return winhost.Instance{Path: `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSITarget.NodeAddress="` + m.iqn + `"`,
		Class: "MSFT_iSCSITarget", Props: map[string]any{"NodeAddress": m.iqn, "IsConnected": len(m.sessions) > 0}}
}

func (m *initiator) session(id string) *modelSession {
	for i := range m.sessions {
		if m.sessions[i].id == id || sessionPathOf(m.sessions[i].id) == id {
			return &m.sessions[i]
		}
	}
	return nil
}

// login makes a session through the portal of key.
func (m *initiator) login(key string, multipath, persistent bool) modelSession {
	m.next++
	s := modelSession{id: fmt.Sprintf("ffffe0001234a010-40000137%08x", m.next), portal: key, answer: m.answer[key],
		multipath: multipath, persistent: persistent}
	m.sessions = append(m.sessions, s)
	return s
}

// reboot ends every session and replays the persistent logins: their
// sessions come back with new identifiers.
func (m *initiator) reboot() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions = nil
	for _, k := range m.logins {
		m.login(k, true, true)
	}
}

func param(m winhost.Method, name string) any {
	for _, p := range m.In {
		if p.Name == name {
			return p.Value
		}
	}
	return nil
}

func (m *initiator) serve(c scripted.Call) (scripted.Reply, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch c.Kind {
	case scripted.KindQuery:
		switch c.WQL {
		case wqlSessions:
			var out []winhost.Instance
			for _, s := range m.sessions {
				out = append(out, iscSessionInst(sessionPathOf(s.id), s.id, m.iqn, s.persistent))
			}
			return scripted.Reply{Instances: out}, true
		case wqlPortalList:
			var out []winhost.Instance
			for _, p := range m.portals {
				if m.registered[modelKey(p.Address, p.Port)] {
					in := iscPortalInst(portalPathOf(p), p.Address, int64(p.Port))
					in.Props["IsDataDigest"], in.Props["IsHeaderDigest"] = nil, nil
					out = append(out, in)
				}
			}
			return scripted.Reply{Instances: out}, true
		}
		for _, p := range m.portals {
			if c.WQL == wqlPortalOf(p) {
				var out []winhost.Instance
				if m.registered[modelKey(p.Address, p.Port)] {
					out = append(out, iscPortalInst(portalPathOf(p), p.Address, int64(p.Port)))
				}
				return scripted.Reply{Instances: out}, true
			}
		}
	case scripted.KindAssociators:
		switch c.Assoc {
		case "MSFT_iSCSITargetToiSCSITargetPortal":
			return scripted.Reply{Instances: []winhost.Instance{m.target()}}, true
		case "MSFT_iSCSISessionToiSCSIConnection":
			if s := m.session(c.Path); s != nil {
				h, port, _ := net.SplitHostPort(s.answer)
				n, _ := strconv.Atoi(port)
				return scripted.Reply{Instances: []winhost.Instance{iscConnInst(h, int64(n))}}, true
			}
		case "MSFT_iSCSITargetToiSCSISession":
			if m.session(c.Path) != nil {
				return scripted.Reply{Instances: []winhost.Instance{m.target()}}, true
			}
		case "MSFT_iSCSISessionToDisk":
			if m.session(c.Path) != nil {
				var out []winhost.Instance
				for _, n := range m.disks {
					out = append(out, diskInst(diskSpec{Number: n}))
				}
				return scripted.Reply{Instances: out}, true
			}
		}
	case scripted.KindCall:
		return m.call(c.Method)
	case "LookupHost":
		if addrs, ok := m.names[c.Args[0].(string)]; ok {
			return scripted.Reply{Strings: addrs}, true
		}
		return scripted.Reply{Err: &net.DNSError{Err: "no such host", Name: c.Args[0].(string), IsNotFound: true}}, true
	case "ReportIScsiPersistentLogins":
		var b []byte
		for _, k := range m.logins {
			h, port, _ := net.SplitHostPort(k)
			n, _ := strconv.Atoi(port)
			b = append(b, loginRecord(m.iqn, swInitiator, host.AnyInitiatorPort, h, uint16(n))...)
		}
		return scripted.Reply{Count: uint32(len(m.logins)), Bytes: b}, true
	case "RemoveIScsiPersistentTarget":
		p := c.Args[3].(winhost.PortalW)
		k := modelKey(p.Address, p.Socket)
		if i := slices.Index(m.logins, k); i >= 0 {
			m.logins = slices.Delete(m.logins, i, i+1)
			return scripted.Reply{}, true
		}
		return scripted.Reply{Err: iscCOM("RemoveIScsiPersistentTarget", 0xEFFF0043).Err}, true
	}
	return scripted.Reply{}, false
}

// call answers a WMI method of the initiator's classes.
func (m *initiator) call(meth winhost.Method) (scripted.Reply, bool) {
	key := func() string {
		return modelKey(param(meth, "TargetPortalAddress").(string), param(meth, "TargetPortalPortNumber").(uint16))
	}
	switch meth.Class + "." + meth.Name {
	case "MSFT_iSCSITargetPortal.New":
		m.registered[key()] = true
		return iscRV(0), true
	case "MSFT_iSCSITargetPortal.Update":
		return iscRV(0), true
	case "MSFT_iSCSITargetPortal.Remove":
		delete(m.registered, key())
		return iscRV(0), true
	case "MSFT_iSCSITarget.Connect":
		k, multipath, persistent := key(), param(meth, "IsMultipathEnabled").(bool), param(meth, "IsPersistent").(bool)
		for _, s := range m.sessions {
			if !s.multipath || !multipath {
				return iscCOM("ExecMethod MSFT_iSCSITarget.Connect", isdscAlreadyLoggedIn), true
			}
		}
		s := m.login(k, multipath, persistent)
		if persistent && !slices.Contains(m.logins, k) {
			m.logins = append(m.logins, k)
		}
		return scripted.Reply{Result: winhost.Result{Out: map[string]any{
			"CreatediSCSISession": iscSessionInst(sessionPathOf(s.id), s.id, m.iqn, persistent)}}}, true
	case "MSFT_iSCSITarget.Disconnect":
		id := param(meth, "SessionIdentifier").(string)
		m.sessions = slices.DeleteFunc(m.sessions, func(s modelSession) bool { return s.id == id })
		return iscRV(0), true
	case "MSFT_iSCSISession.Unregister":
		if s := m.session(meth.Path); s != nil {
			s.persistent = false
			m.logins = slices.DeleteFunc(m.logins, func(k string) bool { return k == s.portal })
			return iscRV(0), true
		}
	case "MSFT_iSCSISession.Register":
		if s := m.session(meth.Path); s != nil {
			s.persistent = true
			if !slices.Contains(m.logins, s.portal) {
				m.logins = append(m.logins, s.portal)
			}
			return iscRV(0), true
		}
	}
	return scripted.Reply{}, false
}

// byPortal counts the sessions by the portal their login went through.
func (m *initiator) byPortal() (map[string]int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, s := range m.sessions {
		out[s.portal]++
	}
	return out, len(m.logins)
}

// TestISCSIStageLoopOfATargetAnsweringElsewhere: the iSCSI backend over
// winhost and the scripted executor (the initiator above; disks, volumes
// and paths from the simulated host), for a persistent multipath target
// whose portals are not where it answers: a redirecting array (group
// addresses whose logins go to other addresses) and host names. Ten
// rounds stage a LUN and unstage the one before, with a node reboot after
// the first stage (what the record knows of where the sessions answer
// comes from the login alone then) and another half way (the sessions
// come back with new identifiers; the plugin restarts and its volume is
// staged again): one session and one persistent login per portal while a
// LUN is staged, nothing after the last unstage.
func TestISCSIStageLoopOfATargetAnsweringElsewhere(t *testing.T) {
	const iqn = "iqn.2024-01.test.array:elsewhere"
	for _, c := range []struct {
		name    string
		portals []host.Portal
		answer  map[string]string
		names   map[string][]string
	}{
		{name: "redirect", portals: []host.Portal{{Address: "10.0.6.1", Port: 3260}, {Address: "10.0.6.2", Port: 3260}},
			answer: map[string]string{"10.0.6.1:3260": "10.0.6.11:3260", "10.0.6.2:3260": "10.0.6.12:3260"}},
		{name: "host names", portals: []host.Portal{{Address: "array-a.example.com", Port: 3260}, {Address: "array-b.example.com", Port: 3260}},
			answer: map[string]string{"array-a.example.com:3260": "10.0.5.1:3260", "array-b.example.com:3260": "10.0.5.2:3260"},
			names:  map[string][]string{"array-a.example.com": {"10.0.5.1"}, "array-b.example.com": {"10.0.5.2", "fd00::5:2"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			s, err := sim.New(sim.Config{Dir: filepath.Join(base, "sim")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			})
			m := &initiator{iqn: iqn, portals: c.portals, answer: c.answer, names: c.names, registered: map[string]bool{}}
			const luns = 3
			for lun := range luns {
				n, err := s.AttachDisk(sim.DiskSpec{Serial: fmt.Sprintf("elsewhere-%d", lun), BusType: host.BusTypeISCSI,
					Adapter: 2, LUN: uint32(lun), Offline: true})
				if err != nil {
					t.Fatal(err)
				}
				m.disks = append(m.disks, n)
			}
			h := s.Host()
			h.ISCSI = winhost.NewISCSI(scripted.New(t).Serve(m.serve))
			jr, err := journal.Open(filepath.Join(base, "state"))
			if err != nil {
				t.Fatal(err)
			}
			fast := backend.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Attempts: 20}
			var b *iscsi.Backend
			start := func() {
				b = iscsi.New(h, disk.New(h, jr, disk.Options{OfflineOnUnstage: true, Backoff: fast}), jr, iscsi.Options{Backoff: fast})
			}
			start()
			staged := map[int]journal.Entry{}
			stage := func(round int) {
				t.Helper()
				id := fmt.Sprintf("pv-%d", round)
				vol, err := contract.Parse(contract.Request{VolumeID: id, VolumeContext: map[string]string{
					"targetPortal": c.portals[0].String(), "portals": c.portals[1].String(), "iqn": iqn,
					"lun": strconv.Itoa(round % luns), "persistent": "true"}}, contract.Options{})
				if err != nil {
					t.Fatal(err)
				}
				rec, err := b.Record(vol)
				if err != nil {
					t.Fatal(err)
				}
				e, ok := staged[round]
				if !ok {
					e = journal.Entry{VolumeID: id, StagingPath: filepath.Join(base, "kubelet", id, "globalmount"),
						Backend: string(contract.KindISCSI), ResourceKey: rec.Resource(), Attrs: rec.Attrs()}
					must(t, "record the stage", jr.Put(ctx, e))
				}
				must(t, fmt.Sprintf("round %d: stage", round), b.Stage(ctx, backend.StageRequest{VolumeID: id, StagingPath: e.StagingPath, Volume: vol}))
				e.Staged = true
				must(t, "record the stage", jr.Put(ctx, e))
				staged[round] = e
			}
			unstage := func(round int) {
				t.Helper()
				e := staged[round]
				must(t, fmt.Sprintf("round %d: unstage", round), b.Unstage(ctx, backend.UnstageRequest{VolumeID: e.VolumeID, StagingPath: e.StagingPath, Entry: e}))
				must(t, "forget the stage", jr.Delete(ctx, e.VolumeID))
				delete(staged, round)
			}
			check := func(when string, want int) {
				t.Helper()
				by, logins := m.byPortal()
				n := 0
				for k, c := range by {
					if c != 1 {
						t.Fatalf("%s: %d sessions through %s, want one per portal (%v)", when, c, k, by)
					}
					n += c
				}
				if n != want || logins != want {
					t.Fatalf("%s: %d sessions (%v) and %d persistent logins, want %d of each", when, n, by, logins, want)
				}
			}
			const rounds = 10
			for i := range rounds {
				stage(i)
				check(fmt.Sprintf("round %d, staged", i), len(c.portals))
				if i > 0 {
					unstage(i - 1)
					check(fmt.Sprintf("round %d, after the unstage of the round before", i), len(c.portals))
				}
				if i == 0 || i == rounds/2 {
					m.reboot()
					start()
					stage(i)
					check(fmt.Sprintf("round %d, after a reboot and the restage", i), len(c.portals))
				}
			}
			unstage(rounds - 1)
			check("after the last unstage", 0)
			if ps, err := h.ISCSI.Portals(ctx); err != nil || len(ps) != 0 {
				t.Fatalf("portals after the last unstage: %v, %v", ps, err)
			}
		})
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
