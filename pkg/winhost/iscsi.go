package winhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
)

// ISCSI implements host.ISCSI with the Microsoft iSCSI initiator's WMI
// classes in Root\Microsoft\Windows\Storage (the classes the iSCSI cmdlets
// wrap): MSFT_iSCSITargetPortal, MSFT_iSCSITarget, MSFT_iSCSISession,
// MSFT_iSCSIConnection and their associations.
//
// Sources: the class and method pages under
// learn.microsoft.com/previous-versions/windows/desktop/iscsidisc/
// (msft-iscsitargetportal, -new, -update, -remove; msft-iscsitarget,
// -connect, -disconnect; msft-iscsisession, -unregister, -setchapsecret;
// msft-iscsiconnection), the generated class wrappers of microsoft/wmi
// (server2019/root/microsoft/windows/storage/MSFT_iSCSI*.go), which carry
// the MOF's parameter names and types where the documentation's syntax
// block is incomplete (it omits ChapUsername and ChapSecret from Connect),
// and csi-proxy's pkg/wmi/iscsi.go (kubernetes-csi/csi-proxy@eeba470).
//
// WMI round trips per operation: Portals 1; AddPortal 2 (look, New);
// RefreshPortal and RemovePortal 1 + one per registration of the portal
// (normally 1); Targets 1 + 1 per registration; Connect 1 when the method
// returns the created session, else 1 + Sessions; Sessions 1 + 1 per
// session of the target (its connection, for the portal); Disconnect 2
// (the session's target, Disconnect); Unregister 1; Register 1; SetInitiatorSecret 1;
// SessionDisks 1. A session without Ref (not from Sessions) costs one more
// query in Disconnect, Unregister and SessionDisks.
type ISCSI struct{ s storage }

var _ host.ISCSI = (*ISCSI)(nil)

// NewISCSI returns the iSCSI side of the Windows host.
func NewISCSI(e Executor) *ISCSI { return &ISCSI{s: storage{e}} }

// Class and association names of the iSCSI initiator's provider.
const (
	classTargetPortal = "MSFT_iSCSITargetPortal"
	classTarget       = "MSFT_iSCSITarget"
	classSession      = "MSFT_iSCSISession"
	classConnection   = "MSFT_iSCSIConnection"

	assocTargetToPortal     = "MSFT_iSCSITargetToiSCSITargetPortal"
	assocTargetToSession    = "MSFT_iSCSITargetToiSCSISession"
	assocSessionToConn      = "MSFT_iSCSISessionToiSCSIConnection"
	assocSessionToDisk      = "MSFT_iSCSISessionToDisk"
	outCreatedSession       = "CreatediSCSISession"
	propTargetPortalAddress = "TargetPortalAddress"
	propTargetPortalPort    = "TargetPortalPortNumber"
)

// Portals lists the registered target portals (MSFT_iSCSITargetPortal).
// A portal registered more than once (through different initiator portals)
// is listed once.
func (x *ISCSI) Portals(ctx context.Context) ([]host.Portal, error) {
	insts, err := x.s.query(ctx, classTargetPortal, []string{propTargetPortalAddress, propTargetPortalPort})
	if err != nil {
		return nil, fmt.Errorf("list iSCSI target portals: %w", err)
	}
	var out []host.Portal
	seen := map[string]bool{}
	for _, in := range insts {
		p, err := parsePortal(in)
		if err != nil {
			return nil, fmt.Errorf("list iSCSI target portals: %w", err)
		}
		if k := strings.ToLower(p.String()); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func parsePortal(in Instance) (host.Portal, error) {
	pr := propsOf(in, classTargetPortal)
	p := host.Portal{Address: pr.RequiredString(propTargetPortalAddress), Port: pr.RequiredUint16(propTargetPortalPort)}
	if err := pr.Err(); err != nil {
		return host.Portal{}, err
	}
	return p, nil
}

// withPort fills in the default port.
func withPort(p host.Portal) host.Portal {
	if p.Port == 0 {
		p.Port = host.DefaultISCSIPort
	}
	return p
}

// portalInstances returns the registrations of portal p (SELECT * so that
// their __PATH can be used for methods). Its callers name the operation.
func (x *ISCSI) portalInstances(ctx context.Context, p host.Portal) ([]Instance, error) {
	p = withPort(p)
	insts, err := x.s.query(ctx, classTargetPortal, nil,
		wql.Eq(propTargetPortalAddress, p.Address), wql.Eq(propTargetPortalPort, p.Port))
	if err != nil {
		return nil, fmt.Errorf("look up its registrations: %w", err)
	}
	for _, in := range insts {
		if in.Path == "" {
			return nil, &PropError{Class: classTargetPortal, Prop: "__PATH"}
		}
	}
	return insts, nil
}

// AddPortal registers a portal with MSFT_iSCSITargetPortal.New, which runs
// SendTargets discovery at once (docs/windows.md#iscsi-discovery-and-second-sessions);
// with chap, discovery
// uses one-way CHAP. A portal already registered fails with
// host.ErrAlreadyExists without calling New (whether New itself refuses a
// registered portal is not documented).
func (x *ISCSI) AddPortal(ctx context.Context, p host.Portal, initiatorPortal string, chap *host.CHAP) error {
	p = withPort(p)
	insts, err := x.portalInstances(ctx, p)
	if err != nil {
		return fmt.Errorf("add iSCSI target portal %s: %w", p, err)
	}
	if len(insts) > 0 {
		return fmt.Errorf("add iSCSI target portal %s: it is registered already: %w", p, host.ErrAlreadyExists)
	}
	in := []Param{
		{Name: propTargetPortalAddress, Value: p.Address},
		{Name: propTargetPortalPort, Value: p.Port},
	}
	if initiatorPortal != "" {
		in = append(in, Param{Name: "InitiatorPortalAddress", Value: initiatorPortal})
	}
	if chap != nil {
		in = append(in,
			Param{Name: "AuthenticationType", Value: host.AuthOneWay.String()},
			Param{Name: "ChapUsername", Value: chap.User},
			Param{Name: "ChapSecret", Value: chap.Secret.Reveal(), Sensitive: true})
	}
	if _, err := x.s.call(ctx, Method{Class: classTargetPortal, Name: "New", In: in}); err != nil {
		return fmt.Errorf("add iSCSI target portal %s: %w", p, err)
	}
	return nil
}

// portalMethod runs Update or Remove on every registration of the portal.
// Its callers name the operation.
// The documented parameters (msft-iscsitargetportal-update and -remove:
// InitiatorInstanceName, InitiatorPortalAddress, TargetPortalAddress,
// TargetPortalPortNumber) are passed as the registration reports them, as
// csi-proxy does for Remove; empty ones are left out.
func (x *ISCSI) portalMethod(ctx context.Context, p host.Portal, method string) error {
	insts, err := x.portalInstances(ctx, p)
	if err != nil {
		return err
	}
	if len(insts) == 0 {
		return fmt.Errorf("not registered: %w", host.ErrNotFound)
	}
	for _, inst := range insts {
		pr := propsOf(inst, classTargetPortal)
		in := []Param{
			{Name: propTargetPortalAddress, Value: pr.RequiredString(propTargetPortalAddress)},
			{Name: propTargetPortalPort, Value: pr.RequiredUint16(propTargetPortalPort)},
		}
		for _, name := range []string{"InitiatorInstanceName", "InitiatorPortalAddress"} {
			if v := pr.String(name); v != "" {
				in = append(in, Param{Name: name, Value: v})
			}
		}
		if err := pr.Err(); err != nil {
			return err
		}
		if _, err := x.s.call(ctx, Method{Class: classTargetPortal, Path: inst.Path, Name: method, In: in}); err != nil {
			return err
		}
	}
	return nil
}

// RefreshPortal re-runs discovery on a registered portal
// (MSFT_iSCSITargetPortal.Update).
func (x *ISCSI) RefreshPortal(ctx context.Context, p host.Portal) error {
	if err := x.portalMethod(ctx, p, "Update"); err != nil {
		return fmt.Errorf("refresh iSCSI target portal %s: %w", withPort(p), err)
	}
	return nil
}

// RemovePortal unregisters a portal (MSFT_iSCSITargetPortal.Remove). It
// does not log out of sessions made through it.
func (x *ISCSI) RemovePortal(ctx context.Context, p host.Portal) error {
	if err := x.portalMethod(ctx, p, "Remove"); err != nil {
		return fmt.Errorf("remove iSCSI target portal %s: %w", withPort(p), err)
	}
	return nil
}

// Targets lists the targets discovered through the portal
// (MSFT_iSCSITargetToiSCSITargetPortal, as csi-proxy does).
func (x *ISCSI) Targets(ctx context.Context, p host.Portal) ([]host.ISCSITarget, error) {
	fail := func(err error) ([]host.ISCSITarget, error) {
		return nil, fmt.Errorf("list the targets of iSCSI target portal %s: %w", withPort(p), err)
	}
	insts, err := x.portalInstances(ctx, p)
	if err != nil {
		return fail(err)
	}
	if len(insts) == 0 {
		return fail(fmt.Errorf("not registered: %w", host.ErrNotFound))
	}
	var out []host.ISCSITarget
	seen := map[string]bool{}
	for _, inst := range insts {
		targets, err := x.s.associators(ctx, inst.Path, assocTargetToPortal, classTarget)
		if err != nil {
			return fail(err)
		}
		for _, t := range targets {
			pr := propsOf(t, classTarget)
			tg := host.ISCSITarget{NodeAddress: pr.RequiredString("NodeAddress"), IsConnected: pr.Bool("IsConnected")}
			if err := pr.Err(); err != nil {
				return fail(err)
			}
			if k := strings.ToLower(tg.NodeAddress); !seen[k] {
				seen[k] = true
				out = append(out, tg)
			}
		}
	}
	return out, nil
}

// Connect logs in with the static MSFT_iSCSITarget.Connect. The
// authentication types are the strings csi-proxy sends ("NONE",
// "ONEWAYCHAP", "MUTUALCHAP"; host.AuthType.String); the cmdlet documents
// None, OneWayCHAP and MutualCHAP, and the provider is assumed to compare
// them case-insensitively, as csi-proxy's integration tests rely on.
// Mutual CHAP needs the initiator secret set first (SetInitiatorSecret).
func (x *ISCSI) Connect(ctx context.Context, r host.ConnectRequest) (host.ISCSISession, error) {
	p := withPort(r.Portal)
	in := []Param{
		{Name: "NodeAddress", Value: r.TargetIQN},
		{Name: propTargetPortalAddress, Value: p.Address},
		{Name: propTargetPortalPort, Value: p.Port},
	}
	if r.InitiatorPortal != "" {
		in = append(in, Param{Name: "InitiatorPortalAddress", Value: r.InitiatorPortal})
	}
	in = append(in, Param{Name: "AuthenticationType", Value: r.Auth.String()})
	if r.Auth != host.AuthNone {
		in = append(in,
			Param{Name: "ChapUsername", Value: r.CHAP.User},
			Param{Name: "ChapSecret", Value: r.CHAP.Secret.Reveal(), Sensitive: true})
	}
	in = append(in,
		Param{Name: "IsMultipathEnabled", Value: r.Multipath},
		Param{Name: "IsPersistent", Value: r.Persistent})
	res, err := x.s.call(ctx, Method{Class: classTarget, Name: "Connect", In: in})
	if err != nil {
		return host.ISCSISession{}, fmt.Errorf("log in to iSCSI target %s through portal %s: %w", r.TargetIQN, p, err)
	}
	// The documentation gives CreatediSCSISession as an output; the MOF
	// (microsoft/wmi) types it MSFT_iSCSISession. When it is not an
	// object with an identifier (uncertain: docs/windows.md), the login
	// is not returned as made: which session it made cannot be told from
	// a listing (the connection reports the address the target answered
	// on, not the portal, and a multipath login makes a new session next
	// to others), and a session without its identifier can never be
	// logged out. host.ErrSessionUnknown lets the caller look.
	out := OutOf(classTarget, "Connect", res)
	inst, ok := out.TryInstance(outCreatedSession)
	if err := out.Err(); err != nil {
		return host.ISCSISession{}, fmt.Errorf("log in to iSCSI target %s through portal %s: %w", r.TargetIQN, p, err)
	}
	if ok {
		pr := propsOf(inst, classSession)
		if id := pr.String("SessionIdentifier"); id != "" && pr.Err() == nil {
			// The connection's address is not in the output: the
			// session's portal is the one the login named until a
			// listing reads the connection.
			return host.ISCSISession{
				Ref: inst.Path, SessionID: id, TargetNodeAddress: r.TargetIQN, TargetPortal: p,
				InitiatorPortal: r.InitiatorPortal, IsConnected: pr.Bool("IsConnected"), IsPersistent: pr.Bool("IsPersistent"),
			}, nil
		}
	}
	klog.FromContext(ctx).V(4).Info("The login returned no session identifier", "iqn", r.TargetIQN, "portal", p.String())
	return host.ISCSISession{}, fmt.Errorf("log in to iSCSI target %s through portal %s: %w", r.TargetIQN, p, host.ErrSessionUnknown)
}

// Sessions lists the sessions to target iqn (every session when iqn is
// empty), each with the portal of its connection. The query is not
// filtered in WQL: it costs one round trip either way, and comparing in Go
// keeps the comparison case-insensitive whatever the provider does with
// WHERE (iSCSI names are case-insensitive, RFC 3722). The connections of
// the target's sessions cost one round trip each; every session's, for
// iqn empty, are read in two (allSessions).
func (x *ISCSI) Sessions(ctx context.Context, iqn string) ([]host.ISCSISession, error) {
	fail := func(err error) ([]host.ISCSISession, error) {
		if iqn == "" {
			return nil, fmt.Errorf("list iSCSI sessions: %w", err)
		}
		return nil, fmt.Errorf("list the iSCSI sessions of target %s: %w", iqn, err)
	}
	insts, err := x.s.query(ctx, classSession, nil)
	if err != nil {
		return fail(err)
	}
	if iqn == "" {
		return x.allSessions(ctx, insts)
	}
	var out []host.ISCSISession
	for _, in := range insts {
		s, err := parseSession(in)
		if err != nil {
			return fail(err)
		}
		if !strings.EqualFold(s.TargetNodeAddress, iqn) {
			continue
		}
		if in.Path == "" {
			return fail(&PropError{Class: classSession, Prop: "__PATH"})
		}
		if s.TargetPortal, err = x.sessionPortal(ctx, in.Path); err != nil {
			return fail(fmt.Errorf("read the portal of session %s: %w", s.SessionID, err))
		}
		out = append(out, s)
	}
	return out, nil
}

// parseSession reads one MSFT_iSCSISession, without its portal.
func parseSession(in Instance) (host.ISCSISession, error) {
	pr := propsOf(in, classSession)
	s := host.ISCSISession{
		Ref:               in.Path,
		SessionID:         pr.RequiredString("SessionIdentifier"),
		TargetNodeAddress: pr.RequiredString("TargetNodeAddress"),
		InitiatorPortal:   pr.String("InitiatorPortalAddress"),
		IsConnected:       pr.Bool("IsConnected"),
		IsPersistent:      pr.Bool("IsPersistent"),
	}
	if err := pr.Err(); err != nil {
		return host.ISCSISession{}, err
	}
	return s, nil
}

// connectionProps are the MSFT_iSCSIConnection properties read.
// ConnectionIdentifier is the class key: without it the partial instances
// have no usable __PATH to join on.
var connectionProps = []string{"ConnectionIdentifier", "TargetAddress", "TargetPortNumber"}

// connectionPortal reads the target address and port of a connection.
func connectionPortal(in Instance) (host.Portal, error) {
	pr := propsOf(in, classConnection)
	addr := pr.RequiredString("TargetAddress")
	port := pr.RequiredUint16("TargetPortNumber") // a CIM uint32
	if err := pr.Err(); err != nil {
		return host.Portal{}, err
	}
	// IPv6 addresses come without brackets, like host.Portal's.
	return host.Portal{Address: strings.Trim(addr, "[]"), Port: port}, nil
}

// allSessions completes every session with its connection's portal in two
// more round trips, however many sessions there are: every
// MSFT_iSCSIConnection and every instance of the association
// MSFT_iSCSISessionToiSCSIConnection, joined in memory on the object paths
// its two references hold (the association class and its references
// iSCSISession and iSCSIConnection are in the provider's MOF, microsoft/wmi
// MSFT_iSCSISessionToiSCSIConnection.go). The identifiers cannot be joined
// directly: a connection's ConnectionIdentifier shares only the adapter's
// half with its session's SessionIdentifier (kubernetes-csi/csi-proxy@eeba470
// pkg/wmi/iscsi.go shows both forms).
//
// Uncertain: whether the provider answers an enumeration of the
// association class at all (csi-proxy only walks associations from an
// object). When it fails, or leaves a session without a connection, that
// session's connection is asked for as Sessions(iqn) does, one round trip
// each: the answer is the same either way, only its cost differs.
func (x *ISCSI) allSessions(ctx context.Context, insts []Instance) ([]host.ISCSISession, error) {
	fail := func(err error) ([]host.ISCSISession, error) {
		return nil, fmt.Errorf("list iSCSI sessions: %w", err)
	}
	out := make([]host.ISCSISession, 0, len(insts))
	for _, in := range insts {
		s, err := parseSession(in)
		if err == nil && in.Path == "" {
			err = &PropError{Class: classSession, Prop: "__PATH"}
		}
		if err != nil {
			return fail(err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return out, nil
	}
	portals, err := x.connectionPortals(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fail(err)
		}
		klog.FromContext(ctx).V(4).Info("Cannot read the connections of every iSCSI session at once; reading them one session at a time", "err", err)
	}
	for i := range out {
		if p, ok := portals[objectKey(out[i].Ref)]; ok {
			out[i].TargetPortal = p
			continue
		}
		if out[i].TargetPortal, err = x.sessionPortal(ctx, out[i].Ref); err != nil {
			return fail(fmt.Errorf("read the portal of session %s: %w", out[i].SessionID, err))
		}
	}
	return out, nil
}

// connectionPortals returns the portal of the first connection of each
// session that has one, by the session's object path (objectKey).
func (x *ISCSI) connectionPortals(ctx context.Context) (map[string]host.Portal, error) {
	conns, err := x.s.query(ctx, classConnection, connectionProps)
	if err != nil {
		return nil, fmt.Errorf("list iSCSI connections: %w", err)
	}
	byPath := make(map[string]host.Portal, len(conns))
	for _, c := range conns {
		p, err := connectionPortal(c)
		if err != nil {
			return nil, err
		}
		byPath[objectKey(c.Path)] = p
	}
	links, err := x.s.query(ctx, assocSessionToConn, nil)
	if err != nil {
		return nil, fmt.Errorf("list the connections of iSCSI sessions: %w", err)
	}
	out := make(map[string]host.Portal, len(links))
	for _, l := range links {
		pr := propsOf(l, assocSessionToConn)
		sess, conn := pr.RequiredString("iSCSISession"), pr.RequiredString("iSCSIConnection")
		if err := pr.Err(); err != nil {
			return nil, err
		}
		p, ok := byPath[objectKey(conn)]
		if _, seen := out[objectKey(sess)]; ok && !seen {
			out[objectKey(sess)] = p
		}
	}
	return out, nil
}

// objectKey is the form of a WMI object path that two references to the
// same object share: without the \\server\namespace: prefix that __PATH
// carries and a reference may not, in lower case (class names and the
// keys' names are case-insensitive; the identifiers joined here are
// hexadecimal or a provider's object id, written the same in both).
func objectKey(path string) string {
	if strings.HasPrefix(path, `\\`) {
		if i := strings.IndexByte(path, ':'); i >= 0 {
			path = path[i+1:]
		}
	}
	return strings.ToLower(path)
}

// sessionPortal returns the target address and port of the session's
// first connection (MSFT_iSCSIConnection.TargetAddress, TargetPortNumber).
// A session between connections reports none: its portal is left zero.
func (x *ISCSI) sessionPortal(ctx context.Context, path string) (host.Portal, error) {
	conns, err := x.s.associators(ctx, path, assocSessionToConn, classConnection)
	if errors.Is(err, host.ErrNotFound) {
		return host.Portal{}, nil
	}
	if err != nil {
		return host.Portal{}, err
	}
	if len(conns) == 0 {
		return host.Portal{}, nil
	}
	return connectionPortal(conns[0])
}

// sessionPath returns the session's __PATH: its Ref, or, for a session not
// read by Sessions, the path found by its identifier. Its callers name the
// operation.
func (x *ISCSI) sessionPath(ctx context.Context, s host.ISCSISession) (string, error) {
	if s.Ref != "" {
		return s.Ref, nil
	}
	if s.SessionID == "" {
		return "", fmt.Errorf("the session has no identifier: %w", host.ErrInvalid)
	}
	insts, err := x.s.query(ctx, classSession, nil, wql.Eq("SessionIdentifier", s.SessionID))
	if err != nil {
		return "", fmt.Errorf("look up the session: %w", err)
	}
	if len(insts) == 0 {
		return "", fmt.Errorf("no such session: %w", host.ErrNotFound)
	}
	if insts[0].Path == "" {
		return "", &PropError{Class: classSession, Prop: "__PATH"}
	}
	return insts[0].Path, nil
}

// Disconnect logs out of one session: MSFT_iSCSITarget.Disconnect with the
// SessionIdentifier, on the session's target (MSFT_iSCSITargetToiSCSISession,
// as csi-proxy finds it).
func (x *ISCSI) Disconnect(ctx context.Context, s host.ISCSISession) error {
	fail := func(err error) error {
		return fmt.Errorf("log out of iSCSI session %s of target %s: %w", s.SessionID, s.TargetNodeAddress, err)
	}
	path, err := x.sessionPath(ctx, s)
	if err != nil {
		return fail(err)
	}
	targets, err := x.s.associators(ctx, path, assocTargetToSession, classTarget)
	if err != nil {
		return fail(fmt.Errorf("find its target: %w", err))
	}
	if len(targets) == 0 || targets[0].Path == "" {
		return fail(fmt.Errorf("no target: %w", host.ErrNotFound))
	}
	m := Method{Class: classTarget, Path: targets[0].Path, Name: "Disconnect",
		In: []Param{{Name: "SessionIdentifier", Value: s.SessionID}}}
	if _, err := x.s.call(ctx, m); err != nil {
		return fail(err)
	}
	return nil
}

// Unregister removes the persistent login of the session
// (MSFT_iSCSISession.Unregister, no parameters).
func (x *ISCSI) Unregister(ctx context.Context, s host.ISCSISession) error {
	path, err := x.sessionPath(ctx, s)
	if err == nil {
		_, err = x.s.call(ctx, Method{Class: classSession, Path: path, Name: "Unregister"})
	}
	if err != nil {
		return fmt.Errorf("remove the persistent login of iSCSI session %s of target %s: %w", s.SessionID, s.TargetNodeAddress, err)
	}
	return nil
}

// Register makes the session persistent with
// MSFT_iSCSISession.Register(IsMultipathEnabled, ChapUsername, ChapSecret)
// — the parameters of Register-IscsiSession, which wraps it
// (learn.microsoft.com/powershell/module/iscsi/register-iscsisession). The
// CHAP credentials are the ones the login at boot presents; the secret is a
// sensitive parameter.
func (x *ISCSI) Register(ctx context.Context, s host.ISCSISession, multipath bool, chap *host.CHAP) error {
	path, err := x.sessionPath(ctx, s)
	if err == nil {
		in := []Param{{Name: "IsMultipathEnabled", Value: multipath}}
		if chap != nil {
			in = append(in,
				Param{Name: "ChapUsername", Value: chap.User},
				Param{Name: "ChapSecret", Value: chap.Secret.Reveal(), Sensitive: true})
		}
		_, err = x.s.call(ctx, Method{Class: classSession, Path: path, Name: "Register", In: in})
	}
	if err != nil {
		return fmt.Errorf("make iSCSI session %s of target %s persistent: %w", s.SessionID, s.TargetNodeAddress, err)
	}
	return nil
}

// SetInitiatorSecret sets the initiator's node-wide CHAP secret with the
// static MSFT_iSCSISession.SetCHAPSecret (as kubernetes-csi/csi-proxy@eeba470 pkg/wmi/iscsi.go
// does).
func (x *ISCSI) SetInitiatorSecret(ctx context.Context, secret host.Secret) error {
	m := Method{Class: classSession, Name: "SetCHAPSecret",
		In: []Param{{Name: "ChapSecret", Value: secret.Reveal(), Sensitive: true}}}
	if _, err := x.s.call(ctx, m); err != nil {
		return fmt.Errorf("set the iSCSI initiator CHAP secret: %w", err)
	}
	return nil
}

// SessionDisks returns the numbers of the disks reached through the
// session, in one round trip through MSFT_iSCSISessionToDisk (the
// association Get-Disk -iSCSISession follows; the class exists in the
// provider's MOF, microsoft/wmi MSFT_iSCSISessionToDisk.go). csi-proxy goes
// through MSFT_iSCSITargetToiSCSIConnection and
// MSFT_iSCSIConnectionToDisk instead, one more round trip per connection.
func (x *ISCSI) SessionDisks(ctx context.Context, s host.ISCSISession) ([]uint32, error) {
	fail := func(err error) ([]uint32, error) {
		return nil, fmt.Errorf("list the disks of iSCSI session %s of target %s: %w", s.SessionID, s.TargetNodeAddress, err)
	}
	path, err := x.sessionPath(ctx, s)
	if err != nil {
		return fail(err)
	}
	disks, err := x.s.associators(ctx, path, assocSessionToDisk, classDisk)
	if err != nil {
		return fail(err)
	}
	out := make([]uint32, 0, len(disks))
	for _, d := range disks {
		pr := propsOf(d, classDisk)
		n := pr.RequiredUint32("Number")
		if err := pr.Err(); err != nil {
			return fail(err)
		}
		out = append(out, n)
	}
	return out, nil
}

// ResolvePortal implements host.ISCSI: an IP address is itself; a host
// name is resolved by the system resolver (the executor's LookupHost), as
// the initiator resolves a portal given by name.
func (x *ISCSI) ResolvePortal(ctx context.Context, p host.Portal) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(p.Address, "[]")); err == nil {
		return []netip.Addr{host.PlainAddr(a)}, nil
	}
	names, err := x.s.e.LookupHost(ctx, p.Address)
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return nil, fmt.Errorf("resolve the host name of iSCSI portal %s: %w: %w", withPort(p), err, host.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("resolve the host name of iSCSI portal %s: %w: %w", withPort(p), err, host.ErrUnreachable)
	}
	out := make([]netip.Addr, 0, len(names))
	for _, n := range names {
		if a, err := netip.ParseAddr(n); err == nil {
			out = append(out, host.PlainAddr(a))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resolve the host name of iSCSI portal %s: no address: %w", withPort(p), host.ErrNotFound)
	}
	return out, nil
}

// DisksBySession implements host.ISCSI in two round trips whatever the
// number of sessions: every instance of the association
// MSFT_iSCSISessionToDisk (references iSCSISession and Disk, in the
// provider's MOF: microsoft/wmi MSFT_iSCSISessionToDisk.go) and the number
// of every MSFT_Disk, joined on the disks' object paths. Uncertain: whether
// the provider answers an enumeration of the association class; when it
// does not, every session's disks are asked for one session at a time
// (SessionDisks), the same answer at a higher cost.
func (x *ISCSI) DisksBySession(ctx context.Context) (map[string][]uint32, error) {
	out, err := x.disksBySession(ctx)
	if err == nil || ctx.Err() != nil {
		return out, err
	}
	klog.FromContext(ctx).V(4).Info("Cannot read the disks of every iSCSI session at once; reading them one session at a time", "err", err)
	sessions, err := x.Sessions(ctx, "")
	if err != nil {
		return nil, err
	}
	out = make(map[string][]uint32, len(sessions))
	for _, s := range sessions {
		nums, err := x.SessionDisks(ctx, s)
		if err != nil {
			return nil, err
		}
		if len(nums) > 0 {
			out[s.SessionID] = nums
		}
	}
	return out, nil
}

func (x *ISCSI) disksBySession(ctx context.Context) (map[string][]uint32, error) {
	fail := func(err error) (map[string][]uint32, error) {
		return nil, fmt.Errorf("list the disks of every iSCSI session: %w", err)
	}
	links, err := x.s.query(ctx, assocSessionToDisk, nil)
	if err != nil {
		return fail(err)
	}
	if len(links) == 0 {
		return map[string][]uint32{}, nil
	}
	disks, err := x.s.query(ctx, classDisk, []string{"ObjectId", "Number"})
	if err != nil {
		return fail(err)
	}
	numbers := make(map[string]uint32, len(disks))
	for _, d := range disks {
		pr := propsOf(d, classDisk)
		n := pr.RequiredUint32("Number")
		if err := pr.Err(); err != nil {
			return fail(err)
		}
		numbers[objectKey(d.Path)] = n
	}
	sessions, err := x.s.query(ctx, classSession, []string{"SessionIdentifier"})
	if err != nil {
		return fail(err)
	}
	ids := make(map[string]string, len(sessions))
	for _, in := range sessions {
		pr := propsOf(in, classSession)
		id := pr.RequiredString("SessionIdentifier")
		if err := pr.Err(); err != nil {
			return fail(err)
		}
		ids[objectKey(in.Path)] = id
	}
	out := map[string][]uint32{}
	for _, l := range links {
		pr := propsOf(l, assocSessionToDisk)
		sess, disk := pr.RequiredString("iSCSISession"), pr.RequiredString("Disk")
		if err := pr.Err(); err != nil {
			return fail(err)
		}
		id, okS := ids[objectKey(sess)]
		n, okD := numbers[objectKey(disk)]
		if !okS || !okD {
			return fail(fmt.Errorf("an %s instance names an object the listings do not hold (%s, %s): %w",
				assocSessionToDisk, sess, disk, host.ErrNotFound))
		}
		if !slices.Contains(out[id], n) {
			out[id] = append(out[id], n)
		}
	}
	return out, nil
}

// PersistentLogins implements host.ISCSI with ReportIScsiPersistentLoginsW
// through the executor: Windows' own list of the logins it replays at
// boot (iscsicli ListPersistentTargets shows the same), whether or not a
// session of theirs is up. WMI has them too, as root\wmi
// MSiSCSIInitiator_PersistentLoginClass, but its LoginOptions carry the
// CHAP user name and secret into every reply and the class has no method
// to remove a login (RemovePersistentLogin); the executor never hands the
// login options over.
func (x *ISCSI) PersistentLogins(ctx context.Context) ([]host.PersistentLogin, error) {
	ls, err := x.persistentLogins(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]host.PersistentLogin, len(ls))
	for i, l := range ls {
		out[i] = l.PersistentLogin
	}
	return out, nil
}

func (x *ISCSI) persistentLogins(ctx context.Context) ([]persistentLogin, error) {
	n, b, err := x.s.e.ReportIScsiPersistentLogins(ctx)
	if err != nil {
		return nil, fmt.Errorf("list iSCSI persistent logins: %w", mapErr(classTarget, err))
	}
	ls, err := parsePersistentLogins(n, b)
	if err != nil {
		return nil, fmt.Errorf("list iSCSI persistent logins: %w", err)
	}
	return ls, nil
}

// RemovePersistentLogin implements host.ISCSI with
// RemoveIScsiPersistentTargetW, passing back the initiator instance, port
// and portal (its symbolic name too) as ReportIScsiPersistentLoginsW listed
// them, as hpe-storage/common-host-libs does
// (windows/iscsidsc/remove_iscsi_persistent_target.go at 55e77af). The
// login is looked up first: ErrNotFound when it is not listed.
func (x *ISCSI) RemovePersistentLogin(ctx context.Context, l host.PersistentLogin) error {
	fail := func(err error) error {
		return fmt.Errorf("remove the persistent login of iSCSI target %s through %s: %w", l.TargetNodeAddress, withPort(l.Portal), err)
	}
	ls, err := x.persistentLogins(ctx)
	if err != nil {
		return fail(err)
	}
	for _, have := range ls {
		if !strings.EqualFold(have.TargetNodeAddress, l.TargetNodeAddress) || !strings.EqualFold(have.Portal.Address, l.Portal.Address) ||
			withPort(have.Portal).Port != withPort(l.Portal).Port ||
			(l.InitiatorInstance != "" && !strings.EqualFold(have.InitiatorInstance, l.InitiatorInstance)) {
			continue
		}
		if err := x.s.e.RemoveIScsiPersistentTarget(ctx, have.InitiatorInstance, have.InitiatorPort, have.TargetNodeAddress, have.portal); err != nil {
			return fail(mapErr(classTarget, err))
		}
		return nil
	}
	return fail(fmt.Errorf("not listed: %w", host.ErrNotFound))
}
