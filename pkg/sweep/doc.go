// Package sweep is the orphan sweep: at start and then every interval the
// plugin takes stock of its node (pkg/inventory), picks out what it made
// that no staged volume uses any more, reports each one (a log line and
// the csi_windows_node_orphans gauge, by kind) and, in clean mode, removes
// it.
//
// What is an orphan, and what the sweep may do about it (Classify):
//
//   - an SMB global mapping the plugin made (its journal note) that no
//     volume uses: released through Plugin.ReleaseUnused with the share's
//     key;
//   - an iSCSI session, or its persistent login, of a target a journal
//     entry names, that no volume uses: the target is released through
//     Plugin.ReleaseUnused with the target's key (logout, persistent
//     logins removed first, then the portals nothing else uses);
//   - a target portal a journal entry lists through which no session goes
//     and that no volume uses: released with the portal's key;
//   - a journal entry whose staging path kubelet removed: finished through
//     Plugin.ReleaseGone, which is NodeUnstageVolume's own path under the
//     volume's lock;
//   - a mount point or link in this driver's staging directory that no
//     journal entry names: reported, never removed. Nothing records which
//     volume it is or what backs it, and a pod may still use it through a
//     publication; kubelet's own NodeUnstageVolume removes it when it
//     unstages the volume;
//   - a file in the state directory the journal refused (the plugin did
//     not write it): reported, never removed. The shared resource its
//     entry names is kept while it is there (journal.Journal.ByResource).
//
// Resources that no record of the plugin names (made by an administrator
// or another driver, or by this plugin before its state directory was
// lost: the two cannot be told apart, see pkg/inventory) are never
// orphans: the round's summary counts those no volume uses as
// "unattributed", and nothing else is done with them.
//
// The inventory is a snapshot taken without locks, so every orphan is
// decided again under the locks a stage or unstage takes before anything
// is done about it, in both modes: ReleaseUnused runs the decision of the
// last unstage as the resource's transition, ReleaseGone takes the
// volume's lock without waiting (a volume in flight is left for the next
// round) and looks again. What they find in use is not an orphan (result
// "in-use"), nor is a mapping, session or portal that no record names any
// more although the host has it (the plugin's own went since the snapshot
// and someone made it again): the backends check their records inside the
// transition too. Report mode asks them with remove false, which changes
// nothing on the host.
//
// Every round runs under a deadline; a round that fails is logged and
// counted, and the next one runs as usual. What does not belong here: how
// orphans are detected (pkg/inventory), how a resource is released (the
// backends, pkg/backend/shared), the per-volume lock (pkg/node), and the
// wiring and lifecycle (pkg/plugin starts Run after the plugin is ready
// and stops it at shutdown).
package sweep
