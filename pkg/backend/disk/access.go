package disk

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// ResolveRootAccess returns the grants of volumeRootAccess with every SID
// known, resolving account names on the host (LookupAccountName, which
// changes nothing): the disk and iSCSI backends call it first in a stage,
// so that a name Windows cannot resolve, or two entries that turn out to
// name one account with different rights, fail the stage with
// InvalidArgument before anything is changed. A read-only stage never
// changes the root's ACL: it gets no grants (and says so at --v=4).
func (b *Backend) ResolveRootAccess(ctx context.Context, a contract.RootAccess, readOnly bool) (contract.RootAccess, error) {
	if len(a.Grants) == 0 {
		return contract.RootAccess{}, nil
	}
	if readOnly {
		klog.FromContext(ctx).V(4).Info("Read-only volume: the root's ACL is left as it is", "rootAccess", a.String())
		return contract.RootAccess{}, nil
	}
	sids := map[string]string{}
	for _, g := range a.Grants {
		if g.SID != "" {
			continue
		}
		sid, err := b.h.Security.LookupAccountName(ctx, g.Principal)
		switch {
		case errors.Is(err, host.ErrNotFound):
			return contract.RootAccess{}, a.Errorf(g, "Windows cannot resolve the account name on this node; use its SID, or a name the node knows")
		case errors.Is(err, host.ErrInvalid):
			return contract.RootAccess{}, a.Errorf(g, "%v", err)
		case err != nil:
			return contract.RootAccess{}, fmt.Errorf("resolve account \"%s\" of %s: %w", g.Principal, a.Key, err)
		}
		sids[g.Principal] = sid
	}
	return a.Resolved(sids)
}

// GrantRootAccess adds the resolved grants a to the DACL of the root of
// the volume guid, mounted at the staging path: each as an allow entry
// inherited by everything created below, added only when the root does not
// have it already, so a restage changes nothing and a volume staged before
// the grant was asked for gets it at its next stage.
func (b *Backend) GrantRootAccess(ctx context.Context, guid string, a contract.RootAccess) error {
	if len(a.Grants) == 0 {
		return nil
	}
	entries := make([]host.ACE, len(a.Grants))
	for i, g := range a.Grants {
		entries[i] = g.ACE()
	}
	added, err := b.h.Security.AddRootAllowEntries(ctx, guid, entries)
	if err != nil {
		return fmt.Errorf("grant %s on the root of volume %s: %w", a.String(), guid, err)
	}
	log := klog.FromContext(ctx)
	if len(added) == 0 {
		log.V(4).Info("The volume's root grants the access already", "volumeGUID", guid, "rootAccess", a.String())
		return nil
	}
	log.V(2).Info("Granted access to the volume's root", "volumeGUID", guid, "rootAccess", a.String(), "added", len(added))
	return nil
}
