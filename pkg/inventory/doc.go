// Package inventory takes stock of a node as this plugin sees it: it sets
// the stage journal against the host as it is now and says, for every
// volume the journal records, what backs it and whether it is healthy;
// for every shared host resource (SMB global mapping, iSCSI session and
// target portal), whether the plugin made it and which staged volumes use
// it; and what nothing explains: resources the plugin made that no staged
// volume uses, mount points and links under the kubelet directory that no
// journal entry names, and journal entries whose staging path is gone.
//
// It only reads. Every host call it makes is one the host answers without
// changing anything (Disks.List, Files.Stat, Files.ReadDir, SMB.Mappings,
// ISCSI.Sessions, ...), and the journal it is given may be opened
// read-only, so it can run while the plugin serves. What it returns is a
// snapshot: a volume staged or unstaged while it runs may show half done.
//
// csi-windows-node diagnose renders its Report (cmd/csi-windows-node); the
// orphan sweep (pkg/sweep) acts on the same detection. The rendering is not
// here, nor is any policy about removing what it finds.
//
// # How "made by the plugin" is known
//
// The host cannot tell who made a mapping, a session or a portal, so the
// plugin's own records decide, and a resource they do not name is reported
// as foreign, never as the plugin's orphan:
//
//   - an SMB global mapping is the plugin's when the journal holds the
//     note the SMB backend writes just before it maps a share and drops
//     once the mapping is removed (smb.MappingNotePrefix). A mapping the
//     plugin only reused (made by an administrator or another driver)
//     carries no note: it is foreign, even while the plugin's volumes use
//     it;
//   - an iSCSI session is the plugin's when a journal entry names its
//     target, and a target portal when a journal entry lists it. The iSCSI
//     backend keeps no note per login: it logs in only when the target has
//     no session and otherwise reuses the one it finds, and it logs out at
//     the last unstage of the target either way. So a login an
//     administrator made to a target the plugin also uses cannot be told
//     from the plugin's own; it is reported as the plugin's, as the
//     backend treats it;
//   - a mount point or link under this driver's kubelet plugin directory
//     (<kubelet>/plugins/kubernetes.io/csi/<driver>/, where kubelet puts
//     the staging paths of this driver's volumes only) was staged for this
//     driver; one under <kubelet>/pods/*/volumes/kubernetes.io~csi/*/mount
//     is a publication of this driver's when it links to a staging path
//     the journal names or to one in that directory. Other drivers'
//     publications, and staging paths in kubelet's older shared layout
//     (.../csi/pv/<name>/globalmount) that no journal entry names, are
//     not looked at.
//
// What cannot be told apart: after the state directory was lost (wiped,
// or the plugin reinstalled with a new one) the plugin's mappings, sessions
// and portals carry no record and are reported as foreign, with a reason
// saying that they may be the plugin's from before; its staging mount
// points and links are still recognised by where they are. A mapping note
// that outlived its mapping (dropping it failed) would make a mapping made
// later of the same share by someone else look like the plugin's.
// Persistent iSCSI logins are read from Windows' own list of them, so one
// whose target did not answer at boot (it has no session) is visible too;
// it is the plugin's when a journal entry or the iSCSI backend's record of
// the target's logins (its note) names the target.
//
// # What a stock-take costs
//
// Take reads the host through a Snapshot: each class once (disks, volumes
// with their disks, SMB mappings, iSCSI sessions with their connections and
// disks, portals, persistent logins), joined in memory, and the backends'
// health checks read the same snapshot (Input.Checkers). The calls of those
// areas are the same for one volume and for five hundred; only the checks
// of the staging and publish paths grow with the volumes.
package inventory
