package disk

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
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
//
// The SIDs the names resolved to go to r.Learned, which the volume's
// journal entry keeps (backend.AttrRootAccessSIDs). When the domain that
// would resolve a name cannot be reached (ErrUnreachable), the SID an
// earlier stage of the volume recorded (r.Recorded) is used instead, and a
// log line says so: a restage while a domain controller is down does not
// fail for a grant the root already carries. Without one it fails, to be
// retried.
func (b *Backend) ResolveRootAccess(ctx context.Context, a contract.RootAccess, r backend.StageRequest) (contract.RootAccess, error) {
	if len(a.Grants) == 0 {
		return contract.RootAccess{}, nil
	}
	if r.ReadOnly {
		klog.FromContext(ctx).V(4).Info("Read-only volume: the root's ACL is left as it is", "rootAccess", a.String())
		return contract.RootAccess{}, nil
	}
	recorded := backend.RootAccessSIDs(r.Recorded)
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
		case errors.Is(err, host.ErrUnreachable) && recorded[g.Principal] != "":
			sid = recorded[g.Principal]
			klog.FromContext(ctx).Info("Cannot reach the domain that resolves an account name; using the SID the volume's earlier stage recorded",
				"account", g.Principal, "sid", sid, "err", err)
		case err != nil:
			return contract.RootAccess{}, fmt.Errorf("resolve account \"%s\" of %s: %w", g.Principal, a.Key, err)
		}
		sids[g.Principal] = sid
	}
	resolved, err := a.Resolved(sids)
	if err != nil {
		return contract.RootAccess{}, err
	}
	if r.Learned != nil {
		backend.PutRootAccessSIDs(r.Learned, sids)
	}
	return resolved, nil
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
