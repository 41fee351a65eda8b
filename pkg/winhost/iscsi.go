package winhost

import (
	"context"
	"errors"
	"fmt"
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
	// object with an identifier, the session is looked up instead.
	out := OutOf(classTarget, "Connect", res)
	inst, ok := out.TryInstance(outCreatedSession)
	if err := out.Err(); err != nil {
		return host.ISCSISession{}, fmt.Errorf("log in to iSCSI target %s through portal %s: %w", r.TargetIQN, p, err)
	}
	if ok {
		pr := propsOf(inst, classSession)
		if id := pr.String("SessionIdentifier"); id != "" && pr.Err() == nil {
			return host.ISCSISession{
				Ref: inst.Path, SessionID: id, TargetNodeAddress: r.TargetIQN, TargetPortal: p,
				InitiatorPortal: r.InitiatorPortal, IsConnected: pr.Bool("IsConnected"), IsPersistent: pr.Bool("IsPersistent"),
			}, nil
		}
	}
	sessions, err := x.Sessions(ctx, r.TargetIQN)
	if err != nil {
		return host.ISCSISession{}, fmt.Errorf("log in to iSCSI target %s through portal %s: find the session it made: %w", r.TargetIQN, p, err)
	}
	for _, s := range sessions {
		if strings.EqualFold(s.TargetPortal.Address, p.Address) && s.TargetPortal.Port == p.Port {
			return s, nil
		}
	}
	// Logged in, but the connection reports another address (a portal
	// given by host name connects to an IP).
	klog.FromContext(ctx).V(4).Info("Cannot tell which session the login made", "iqn", r.TargetIQN, "portal", p.String())
	return host.ISCSISession{TargetNodeAddress: r.TargetIQN, TargetPortal: p, InitiatorPortal: r.InitiatorPortal,
		IsConnected: true, IsPersistent: r.Persistent}, nil
}

// Sessions lists the sessions to target iqn (every session when iqn is
// empty), each with the portal of its connection. The query is not
// filtered in WQL: it costs one round trip either way, and comparing in Go
// keeps the comparison case-insensitive whatever the provider does with
// WHERE (iSCSI names are case-insensitive, RFC 3722).
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
	var out []host.ISCSISession
	for _, in := range insts {
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
			return fail(err)
		}
		if iqn != "" && !strings.EqualFold(s.TargetNodeAddress, iqn) {
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
	pr := propsOf(conns[0], classConnection)
	addr := pr.RequiredString("TargetAddress")
	port := pr.RequiredUint16("TargetPortNumber") // a CIM uint32
	if err := pr.Err(); err != nil {
		return host.Portal{}, err
	}
	// IPv6 addresses come without brackets, like host.Portal's.
	return host.Portal{Address: strings.Trim(addr, "[]"), Port: port}, nil
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
