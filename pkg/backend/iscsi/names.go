package iscsi

import (
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// resourcePrefix starts the journal ResourceKey of iSCSI volumes
// (contract.Volume.ResourceKey: "iscsi:<iqn>").
const resourcePrefix = "iscsi:"

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

// iqnOf returns the target of a journal entry, "" when the entry is not an
// iSCSI volume's.
func iqnOf(e journal.Entry) string {
	iqn, ok := strings.CutPrefix(e.ResourceKey, resourcePrefix)
	if !ok || e.Backend != string(contract.KindISCSI) {
		return ""
	}
	return iqn
}

// portalsOf returns the portals a journal entry records
// (contract.Volume.Attrs "portals"); entries it cannot parse are skipped,
// since the journal was written from a validated contract.
func portalsOf(e journal.Entry) []host.Portal {
	var out []host.Portal
	for _, s := range strings.Split(e.Attrs["portals"], ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if p, err := contract.ParsePortal(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// lunOf returns the LUN a journal entry records (contract.Volume.Attrs
// "lun").
func lunOf(e journal.Entry) (uint32, bool) {
	n, err := strconv.ParseUint(e.Attrs["lun"], 10, 32)
	return uint32(n), err == nil
}

// multipathOf returns the multipath setting a journal entry records.
func multipathOf(e journal.Entry) bool {
	v, err := strconv.ParseBool(e.Attrs["multipath"])
	return err == nil && v
}

// listsPortal reports whether the entry records portal key k.
func listsPortal(e journal.Entry, k string) bool {
	for _, p := range portalsOf(e) {
		if portalKey(p) == k {
			return true
		}
	}
	return false
}
