package iscsi

import (
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// portalKey is the canonical "address:port" of a portal: port 0 means the
// default 3260 and host names compare case-insensitively. A session's
// portal comes from MSFT_iSCSIConnection.TargetAddress, an IP address even
// when the portal was registered by host name, so a host-name portal's key
// never equals its own session's: which portal a session goes through is
// the record's to say, or its address's (paths.go).
func portalKey(p host.Portal) string {
	if p.Port == 0 {
		p.Port = host.DefaultISCSIPort
	}
	p.Address = strings.ToLower(p.Address)
	return p.String()
}

func normalizeIQN(iqn string) string { return strings.ToLower(iqn) }

// sameIQN compares iSCSI names, which are case-insensitive (RFC 3722 maps
// them to lower case).
func sameIQN(a, b string) bool { return strings.EqualFold(a, b) }
