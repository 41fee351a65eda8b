package sweep

import (
	"cmp"
	"slices"

	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
)

// Action is what the sweep may do about an orphan.
type Action string

// Actions.
const (
	// ActionRelease: a shared resource, released with Plugin.ReleaseUnused
	// of Orphan.Key.
	ActionRelease Action = "release"
	// ActionFinish: a journal entry, finished with Plugin.ReleaseGone of
	// Orphan.Key (the volume ID).
	ActionFinish Action = "finish"
	// ActionReport: reported only, never removed.
	ActionReport Action = "report"
)

// Orphan is one thing the plugin made that nothing uses.
type Orphan struct {
	Kind inventory.Kind
	ID   string
	// Key is the resource key (ActionRelease) or the volume ID
	// (ActionFinish); "" with ActionReport. Orphans with one key are
	// decided together: the sessions and persistent logins of a target.
	Key    string
	Action Action
	// Reason is the inventory's explanation.
	Reason string
}

// Kinds lists the kinds of orphans, in the order a round acts on them:
// journal entries first (finishing one releases the shared resources it
// was the last user of), then targets before portals (a target's release
// removes the portals only it used).
var Kinds = []inventory.Kind{
	inventory.KindJournalEntry,
	inventory.KindISCSISession,
	inventory.KindISCSIPersistentLogin,
	inventory.KindSMBMapping,
	inventory.KindISCSIPortal,
	inventory.KindMountPoint,
	inventory.KindLink,
	inventory.KindRefusedFile,
}

// Classify returns the orphans of a report, in the order of Kinds, then
// by ID, and how many resources no record of the plugin names and no
// recorded volume uses (unattributed: never orphans).
func Classify(rep *inventory.Report) (orphans []Orphan, unattributed int) {
	// The target of each session, by session ID and by the ID of its
	// persistent login ("<target>@<portal>").
	targets := map[string]string{}
	for _, r := range rep.Resources {
		switch r.Kind {
		case inventory.KindISCSISession:
			targets[r.ID] = r.Target
			targets[inventory.PersistentLoginID(r.Target, r.Portal)] = r.Target
		case inventory.KindISCSIPersistentLogin:
			targets[r.ID] = r.Target
		}
		if r.Owner == inventory.OwnerForeign && len(r.UsedBy) == 0 {
			unattributed++
		}
	}
	for _, it := range rep.Unexplained {
		o := Orphan{Kind: it.Kind, ID: it.ID, Reason: it.Reason, Action: ActionReport}
		switch it.Kind {
		case inventory.KindJournalEntry:
			o.Action, o.Key = ActionFinish, it.ID
		case inventory.KindSMBMapping:
			if k, ok := smb.ShareKey(it.ID); ok {
				o.Action, o.Key = ActionRelease, k
			}
		case inventory.KindISCSISession, inventory.KindISCSIPersistentLogin:
			if tg := targets[it.ID]; tg != "" {
				o.Action, o.Key = ActionRelease, iscsi.TargetKey(tg)
			}
		case inventory.KindISCSIPortal:
			if p, err := contract.ParsePortal(it.ID); err == nil {
				o.Action, o.Key = ActionRelease, iscsi.PortalKey(p)
			}
		}
		orphans = append(orphans, o)
	}
	slices.SortStableFunc(orphans, func(a, b Orphan) int {
		return cmp.Or(cmp.Compare(slices.Index(Kinds, a.Kind), slices.Index(Kinds, b.Kind)), cmp.Compare(a.ID, b.ID))
	})
	return orphans, unattributed
}
