package iscsi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Health reports the conditions of the staged volume's disk and volume (as
// the disk backend does) and of its sessions: no connected session is
// INACCESSIBLE (SessionLost); a multipath volume with a portal no
// connected session goes through is DEGRADED (PathDown), naming those
// portals. Which portal a session goes through is what the target's
// record says, or what the portal's name resolves to (paths.go), never
// the address the connection reports alone: a portal given by host name,
// or whose target redirects logins, is never reported down for it.
func (b *Backend) Health(ctx context.Context, r backend.HealthRequest) ([]backend.Condition, error) {
	conds, err := b.disks.Health(ctx, r)
	if err != nil {
		return nil, err
	}
	rec, ok := recordOf(r.Entry)
	if !ok {
		return conds, nil
	}
	iqn := rec.IQN
	sessions, err := b.h.ISCSI.Sessions(ctx, iqn)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(sessions, func(s host.ISCSISession) bool { return s.IsConnected }) {
		return append(conds, backend.Condition{Severity: backend.Inaccessible, Reason: "SessionLost",
			Message: "no connected iSCSI session to target " + iqn}), nil
	}
	if !rec.Multipath {
		return conds, nil
	}
	tr, err := b.targetRecordOf(ctx, iqn)
	if err != nil {
		return nil, err
	}
	p, err := b.pathsOf(ctx, tr, rec.Portals, sessions)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, pt := range rec.Portals {
		if !p.covers(portalKey(pt), sessions, true) {
			missing = append(missing, pt.String())
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%d of %d paths to target %s are connected; no connected session through %s",
			len(rec.Portals)-len(missing), len(rec.Portals), iqn, strings.Join(missing, ", "))
		if n := len(p.unknown(sessions)); n > 0 {
			msg += fmt.Sprintf(" (%d session(s) of the target go through a portal this plugin cannot tell: "+
				"not in its record, and their addresses are not what the portals' names resolve to)", n)
		}
		conds = append(conds, backend.Condition{Severity: backend.Degraded, Reason: "PathDown", Message: msg})
	}
	return conds, nil
}

// Expand grows the staged volume to its LUN's size, as for any disk: the
// disk backend rescans, so that Windows sees the LUN's new size, and
// resizes the partition and file system.
func (b *Backend) Expand(ctx context.Context, r backend.ExpandRequest) (int64, error) {
	return b.disks.Expand(ctx, r)
}
