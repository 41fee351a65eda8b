package iscsi

import (
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// portalKey is the canonical "address:port" of a portal: port 0 means the
// default 3260 and host names compare case-insensitively. Uncertain: a
// session's portal comes from MSFT_iSCSIConnection.TargetAddress, which is
// an IP address even when the portal was registered by host name, so a
// host-name portal never matches its own session's portal; the backend
// tolerates that (Connect then reports the existing login).
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
