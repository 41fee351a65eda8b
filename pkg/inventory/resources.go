package inventory

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// foreignNote says why a resource is not counted as the plugin's.
const foreignNote = "no record of this plugin names it: made by an administrator or another driver, " +
	"or by this plugin before its state directory was lost (the two cannot be told apart)"

// smbResources reports every global mapping, whether the plugin made it
// (its note) and which recorded volumes use it (their staging link points
// into its share, or their stage is in progress).
func (t *taker) smbResources(ctx context.Context) {
	mappings, err := t.h.SMB.Mappings(ctx)
	if err != nil {
		t.incomplete("list SMB global mappings", err)
		return
	}
	users := map[string][]string{}
	for i, e := range t.entries {
		if e.Backend != string(contract.KindSMB) || !t.readable[i] {
			continue
		}
		root, ok := "", false
		switch {
		case t.infos[i].Kind == host.PathSymlink:
			root, ok = smb.ShareRoot(t.infos[i].Target)
		case t.inProgress(i):
			if rec, err := smb.DecodeRecord(e); err == nil {
				root, ok = rec.Share, true
			}
		}
		if ok {
			users[root] = append(users[root], e.VolumeID)
		}
	}
	notes := t.mappingNotes(ctx)
	for _, m := range mappings {
		root, ok := smb.ShareRoot(m.RemotePath)
		if !ok {
			root = m.RemotePath
		}
		r := Resource{Kind: KindSMBMapping, ID: root, Status: m.Status.String(), UsedBy: nonNil(users[root])}
		user, mine := notes[root]
		if !mine {
			r.Owner, r.Note = OwnerForeign, foreignNote
			t.rep.Resources = append(t.rep.Resources, r)
			continue
		}
		as := "without credentials"
		if user != "" {
			as = "as user " + user
		}
		r.User = userOrNone(user)
		r.Owner, r.Note = OwnerPlugin, "mapped by this plugin "+as+" (its journal note)"
		if len(r.UsedBy) == 0 {
			if t.in.KeepSMBMappings {
				r.Kept, r.Note = true, r.Note+"; no staged volume uses it, kept by --smb-keep-mappings"
			} else {
				t.unexplained(KindSMBMapping, root, "this plugin mapped the share "+as+" and no staged volume uses it: "+
					"its volumes were unstaged without removing it (an unstage that failed half-way), or kubelet never unstaged them")
			}
		}
		t.rep.Resources = append(t.rep.Resources, r)
	}
}

// iscsiResources reports every session and target portal, whether the
// plugin made it (a journal entry names its target, or lists the portal)
// and which recorded volumes use it, by the rule the iSCSI backend counts
// the users of a target with: a volume of the target whose staging path is
// a mount point of a disk reached through the target, or of a volume the
// host cannot place; or whose stage is in progress.
func (t *taker) iscsiResources(ctx context.Context) {
	sessions, err := t.h.ISCSI.Sessions(ctx, "")
	if err != nil {
		t.incomplete("list iSCSI sessions", err)
		return
	}
	byTarget := map[string][]host.ISCSISession{}
	for _, s := range sessions {
		iqn := strings.ToLower(s.TargetNodeAddress)
		byTarget[iqn] = append(byTarget[iqn], s)
	}
	named := map[string]bool{}           // targets a journal entry names
	listed := map[string]bool{}          // portals a journal entry lists
	users := map[string][]string{}       // target -> volumes using it
	portalUsers := map[string][]string{} // portal -> volumes using it
	for i, e := range t.entries {
		rec, err := iscsi.DecodeRecord(e)
		if err != nil {
			continue
		}
		named[rec.IQN] = true
		for _, p := range rec.Portals {
			listed[iscsi.PortalID(p)] = true
		}
		if !t.targetUser(ctx, i, rec.IQN, byTarget[rec.IQN]) {
			continue
		}
		users[rec.IQN] = append(users[rec.IQN], e.VolumeID)
		for _, p := range rec.Portals {
			portalUsers[iscsi.PortalID(p)] = append(portalUsers[iscsi.PortalID(p)], e.VolumeID)
		}
	}

	// The persistent logins themselves, whether or not a session of
	// theirs is up (a target that was down at boot has a login and no
	// session). When they cannot be listed, those of the persistent
	// sessions are reported instead.
	logins, loginsErr := t.h.ISCSI.PersistentLogins(ctx)
	if loginsErr != nil {
		t.incomplete("list iSCSI persistent logins", loginsErr)
	}
	noted := t.targetNotes(ctx)

	through := map[string]int{} // portal -> sessions through it
	for _, s := range sessions {
		iqn := strings.ToLower(s.TargetNodeAddress)
		portal := iscsi.PortalID(s.TargetPortal)
		through[portal]++
		status := "disconnected"
		if s.IsConnected {
			status = "connected"
		}
		if s.IsPersistent {
			status += ", persistent"
		}
		r := Resource{Kind: KindISCSISession, ID: s.SessionID, Target: s.TargetNodeAddress, Portal: portal,
			Status: status, UsedBy: nonNil(users[iqn])}
		if !named[iqn] {
			r.Owner, r.Note = OwnerForeign, foreignNote
			t.rep.Resources = append(t.rep.Resources, r)
			continue
		}
		r.Owner, r.Note = OwnerPlugin, "a journal entry names its target (this plugin logged in, or reused a login it found)"
		if made, ok := t.sessionCredentials(ctx)[iqn]; ok {
			r.User = userOrNone(made.User)
			as := "without CHAP"
			if made.User != "" {
				as = "as CHAP user " + made.User
			}
			r.Note += "; logged in " + as + " (its journal note)"
		}
		t.rep.Resources = append(t.rep.Resources, r)
		if len(r.UsedBy) > 0 {
			continue
		}
		t.unexplained(KindISCSISession, s.SessionID, "session to target "+s.TargetNodeAddress+" through portal "+portal+
			", a target of this plugin's, and no staged volume uses a LUN of it: its volumes were unstaged without logging out "+
			"(an unstage that failed half-way), or kubelet never unstaged them")
		if s.IsPersistent && loginsErr != nil {
			t.unexplained(KindISCSIPersistentLogin, PersistentLoginID(s.TargetNodeAddress, portal), "persistent login of an unused session "+
				"of this plugin's (session "+s.SessionID+"): Windows logs in again at every boot until it is removed")
		}
	}
	for _, l := range logins {
		iqn := strings.ToLower(l.TargetNodeAddress)
		portal := iscsi.PortalID(l.Portal)
		r := Resource{Kind: KindISCSIPersistentLogin, ID: PersistentLoginID(l.TargetNodeAddress, portal), Target: l.TargetNodeAddress,
			Portal: portal, Status: "no session", UsedBy: nonNil(users[iqn])}
		if slices.ContainsFunc(byTarget[iqn], func(s host.ISCSISession) bool { return s.IsConnected }) {
			r.Status = "target logged in"
		}
		if !named[iqn] && !noted[iqn] {
			r.Owner, r.Note = OwnerForeign, foreignNote
			t.rep.Resources = append(t.rep.Resources, r)
			continue
		}
		r.Owner, r.Note = OwnerPlugin, "a journal entry or this plugin's record of the target's logins names its target"
		t.rep.Resources = append(t.rep.Resources, r)
		if len(r.UsedBy) > 0 {
			continue
		}
		why := "persistent login of target " + l.TargetNodeAddress + " through portal " + portal + ", a target of this plugin's " +
			"that no staged volume uses: Windows logs in again at every boot until it is removed"
		if r.Status == "no session" {
			why += " (no session of it is up: the target did not answer at the last boot, which also hides the login from Get-IscsiSession; " +
				"iscsicli ListPersistentTargets shows it)"
		}
		t.unexplained(KindISCSIPersistentLogin, r.ID, why)
	}

	portals, err := t.h.ISCSI.Portals(ctx)
	if err != nil {
		t.incomplete("list iSCSI target portals", err)
		return
	}
	for _, p := range portals {
		id := iscsi.PortalID(p)
		r := Resource{Kind: KindISCSIPortal, ID: id, UsedBy: nonNil(portalUsers[id])}
		if through[id] > 0 {
			r.Status = itoa(uint32(through[id])) + " session(s) through it"
		}
		if !listed[id] {
			r.Owner, r.Note = OwnerForeign, foreignNote
			t.rep.Resources = append(t.rep.Resources, r)
			continue
		}
		r.Owner, r.Note = OwnerPlugin, "a journal entry lists it (this plugin added it, or reused it)"
		if len(r.UsedBy) == 0 && through[id] == 0 {
			if t.in.KeepISCSIPortals {
				r.Kept, r.Note = true, r.Note+"; nothing uses it, kept by --keep-iscsi-portals"
			} else {
				t.unexplained(KindISCSIPortal, id, "target portal of this plugin's through which no session goes and "+
					"which no staged volume lists: its volumes were unstaged without removing it, or kubelet never unstaged them")
			}
		}
		t.rep.Resources = append(t.rep.Resources, r)
	}
}

// targetNotes returns the targets (lower case) the iSCSI backend's
// records of logins name: targets it logged in to and has not logged out
// of, whether or not a journal entry still names them.
func (t *taker) targetNotes(ctx context.Context) map[string]bool {
	notes, err := t.in.Journal.Notes(ctx, iscsi.TargetNotePrefix)
	if err != nil {
		t.incomplete("notes of the iSCSI targets", err)
		return nil
	}
	out := make(map[string]bool, len(notes))
	for k := range notes {
		out[strings.ToLower(strings.TrimPrefix(k, iscsi.TargetNotePrefix))] = true
	}
	return out
}

// targetUser reports whether entry i uses its target iqn now (see
// iscsiResources); sessions are the target's.
func (t *taker) targetUser(ctx context.Context, i int, iqn string, sessions []host.ISCSISession) bool {
	if t.inProgress(i) {
		return true
	}
	info := t.infos[i]
	if !t.readable[i] || info.Kind != host.PathMountPoint {
		return false
	}
	num, err := t.diskNumber(ctx, info.Target)
	switch {
	case errors.Is(err, host.ErrNotFound):
		return true // cannot be placed: it may still use the target
	case err != nil:
		t.incomplete("disk of volume "+info.Target, err)
		return true // unknown: never call a resource unused on a guess
	}
	return t.disksOfTarget(ctx, iqn, sessions)[num]
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PersistentLoginID is the ID of a persistent iSCSI login in a Report:
// its target and portal (iscsi.PortalID), "<target>@<portal>".
func PersistentLoginID(target, portal string) string { return target + "@" + portal }
