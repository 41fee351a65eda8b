package iscsi

import (
	"context"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
)

// Health reports the conditions of the staged volume's disk and volume (as
// the disk backend does) and of its sessions: no connected session is
// INACCESSIBLE (SessionLost); a multipath volume with fewer connected
// sessions than portals is DEGRADED (PathDown), naming the portals without
// one.
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
	up := map[string]bool{}
	for _, s := range sessions {
		if s.IsConnected {
			up[portalKey(s.TargetPortal)] = true
		}
	}
	if len(up) == 0 {
		return append(conds, backend.Condition{Severity: backend.Inaccessible, Reason: "SessionLost",
			Message: "no connected iSCSI session to target " + iqn}), nil
	}
	portals := rec.Portals
	if rec.Multipath && len(up) < len(portals) {
		var missing []string
		for _, p := range portals {
			if !up[portalKey(p)] {
				missing = append(missing, p.String())
			}
		}
		conds = append(conds, backend.Condition{Severity: backend.Degraded, Reason: "PathDown",
			Message: fmt.Sprintf("%d of %d paths to target %s are connected; no connected session through %s",
				len(up), len(portals), iqn, strings.Join(missing, ", "))})
	}
	return conds, nil
}

// Expand grows the staged volume to its LUN's size, as for any disk: the
// disk backend rescans, so that Windows sees the LUN's new size, and
// resizes the partition and file system.
func (b *Backend) Expand(ctx context.Context, r backend.ExpandRequest) (int64, error) {
	return b.disks.Expand(ctx, r)
}
