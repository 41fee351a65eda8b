package host

import (
	"context"
	"net"
	"net/netip"
	"strconv"
)

// Portal is an iSCSI target portal.
type Portal struct {
	Address string // host name, IPv4 or IPv6 (without brackets)
	Port    uint16
}

// DefaultISCSIPort is the IANA iSCSI port.
const DefaultISCSIPort = 3260

func (p Portal) String() string {
	return net.JoinHostPort(p.Address, strconv.Itoa(int(p.Port)))
}

// AuthType is the iSCSI authentication method.
type AuthType int

// Authentication methods.
const (
	AuthNone   AuthType = iota
	AuthOneWay          // target authenticates the initiator (CHAP)
	AuthMutual          // and the initiator authenticates the target
)

func (a AuthType) String() string {
	switch a {
	case AuthNone:
		return "NONE"
	case AuthOneWay:
		return "ONEWAYCHAP"
	case AuthMutual:
		return "MUTUALCHAP"
	}
	return "AuthType(" + strconv.Itoa(int(a)) + ")"
}

// CHAP is a CHAP user name and secret.
type CHAP struct {
	User   string
	Secret Secret
}

// ISCSITarget is one MSFT_iSCSITarget (a discovered target).
type ISCSITarget struct {
	NodeAddress string // the target IQN
	IsConnected bool
}

// ISCSISession is one MSFT_iSCSISession together with the portal of its
// connection.
type ISCSISession struct {
	Ref               string
	SessionID         string // SessionIdentifier
	TargetNodeAddress string
	// TargetPortal is the address and port the target answered the
	// session's connection on (MSFT_iSCSIConnection.TargetAddress, "the
	// IP address of the target"): an IP address, which is not the portal
	// the login named when that portal is a host name or the target
	// redirected the login. Zero when the session has no connection.
	TargetPortal    Portal
	InitiatorPortal string // initiator portal address, empty for the default
	IsConnected     bool
	IsPersistent    bool
}

// PersistentLogin is one login Windows replays at every boot (a persistent
// target of the initiator: iscsicli ListPersistentTargets), whether or not
// a session of it is up now. It holds nothing secret: the CHAP credentials
// the login carries are never read.
type PersistentLogin struct {
	TargetNodeAddress string
	// Portal is the portal the login goes through, as it was given.
	Portal Portal
	// InitiatorInstance and InitiatorPort name the initiator adapter and
	// port the login uses (ROOT\ISCSIPRT\0000_0 and AnyInitiatorPort on
	// the Microsoft software initiator); removing the login passes them
	// back as listed.
	InitiatorInstance string
	InitiatorPort     uint32
}

// AnyInitiatorPort is the initiator port of a login that may use any port
// of its adapter (ISCSI_ANY_INITIATOR_PORT, (ULONG)-1 in iscsidsc.h).
const AnyInitiatorPort = ^uint32(0)

// ConnectRequest are the MSFT_iSCSITarget.Connect inputs the plugin uses.
type ConnectRequest struct {
	TargetIQN       string
	Portal          Portal
	InitiatorPortal string // empty: let Windows choose
	Auth            AuthType
	CHAP            CHAP
	Multipath       bool
	Persistent      bool
}

// ISCSI is the Microsoft iSCSI initiator: MSFT_iSCSITargetPortal,
// MSFT_iSCSITarget, MSFT_iSCSISession, MSFT_iSCSIConnection and their
// associations to MSFT_Disk.
type ISCSI interface {
	// Portals lists the registered target portals.
	Portals(ctx context.Context) ([]Portal, error)

	// AddPortal registers a portal and runs SendTargets discovery on it,
	// with discovery CHAP when chap is not nil. ErrAlreadyExists when it
	// is registered, ErrUnreachable when nothing answers, ErrLogonFailure
	// when discovery CHAP fails.
	AddPortal(ctx context.Context, p Portal, initiatorPortal string, chap *CHAP) error

	// RefreshPortal re-runs discovery on a registered portal.
	RefreshPortal(ctx context.Context, p Portal) error

	// RemovePortal unregisters a portal. ErrNotFound when it is not there.
	RemovePortal(ctx context.Context, p Portal) error

	// Targets lists the targets discovered through portal.
	Targets(ctx context.Context, p Portal) ([]ISCSITarget, error)

	// Connect logs in to a target through one portal and returns the
	// session the login made, with its SessionID. ErrAlreadyExists when
	// the target has a session and either login is without multipath
	// (with multipath on both, Windows makes another session: the caller
	// must not log in through a portal that already has one),
	// ErrLogonFailure on CHAP failure, ErrNotFound when the target is not
	// known, ErrUnreachable when the portal does not answer.
	// ErrSessionUnknown when the login succeeded but the host did not say
	// which session it made: a session is never returned without its
	// SessionID.
	Connect(ctx context.Context, r ConnectRequest) (ISCSISession, error)

	// Sessions lists the sessions to the target (all sessions when iqn is
	// empty). Its cost does not grow with the sessions of other targets.
	Sessions(ctx context.Context, iqn string) ([]ISCSISession, error)

	// ResolvePortal returns the IP addresses the portal's host name
	// resolves to now (an IP address resolves to itself), as PlainAddr
	// gives them, to tell through which configured portal a session whose
	// connection reports an IP address was made. ErrNotFound when the name
	// does not resolve.
	ResolvePortal(ctx context.Context, p Portal) ([]netip.Addr, error)

	// Disconnect logs out of one session. ErrInUse when Windows refuses
	// because the target's disks are in use.
	Disconnect(ctx context.Context, s ISCSISession) error

	// Register makes an existing session persistent, so that Windows logs
	// in again at boot, with the multipath setting and the CHAP
	// credentials (nil for none) that login needs
	// (MSFT_iSCSISession.Register, Register-IscsiSession).
	Register(ctx context.Context, s ISCSISession, multipath bool, chap *CHAP) error

	// Unregister removes the persistent login of the session's target, so
	// that it is not restored at boot.
	Unregister(ctx context.Context, s ISCSISession) error

	// SetInitiatorSecret sets the initiator's CHAP secret used to
	// authenticate targets in mutual CHAP (node-wide).
	SetInitiatorSecret(ctx context.Context, secret Secret) error

	// SessionDisks returns the numbers of the disks reached through the
	// session.
	SessionDisks(ctx context.Context, s ISCSISession) ([]uint32, error)

	// ReportLUNs asks the target for the LUNs it presents to this
	// initiator (SCSI REPORT LUNS, sent through one of its sessions) and
	// returns them in ascending order, whether Windows has surfaced their
	// disks yet or not. ErrNotFound when the node has no session to the
	// target; any other error means the answer is unknown (the command is
	// not available, or the target's answer could not be read).
	ReportLUNs(ctx context.Context, iqn string) ([]uint32, error)

	// DisksBySession returns the numbers of the disks reached through
	// every session, by SessionID: SessionDisks of all sessions at a cost
	// that does not grow with them. A session without disks may be left
	// out.
	DisksBySession(ctx context.Context) (map[string][]uint32, error)

	// PersistentLogins lists the logins Windows replays at boot, whether
	// or not a session of theirs is up (a target that was down at boot
	// has a persistent login and no session).
	PersistentLogins(ctx context.Context) ([]PersistentLogin, error)

	// RemovePersistentLogin removes a persistent login as PersistentLogins
	// listed it, so that Windows no longer logs in at boot; a session of
	// it stays. ErrNotFound when it is not there.
	RemovePersistentLogin(ctx context.Context, l PersistentLogin) error
}

// PlainAddr returns a as it compares with the address of a session's
// connection: an IPv4 address in IPv6 form (::ffff:a.b.c.d, as a resolver
// may answer) as IPv4, without a zone.
func PlainAddr(a netip.Addr) netip.Addr {
	if a.Is4In6() {
		return netip.AddrFrom4(a.As4())
	}
	return a.WithZone("")
}
