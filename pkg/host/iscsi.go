package host

import (
	"context"
	"net"
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
	TargetPortal      Portal
	InitiatorPortal   string // initiator portal address, empty for the default
	IsConnected       bool
	IsPersistent      bool
}

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

	// Connect logs in to a target through one portal. ErrAlreadyExists
	// when a session to that target through that portal exists,
	// ErrLogonFailure on CHAP failure, ErrNotFound when the target is not
	// known, ErrUnreachable when the portal does not answer.
	Connect(ctx context.Context, r ConnectRequest) (ISCSISession, error)

	// Sessions lists the sessions to the target (all sessions when iqn is
	// empty).
	Sessions(ctx context.Context, iqn string) ([]ISCSISession, error)

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
}
