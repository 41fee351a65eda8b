// Package journal records, crash-safely, which volumes this node has staged
// and where. It is an index that tells the plugin where to look after a
// restart or crash (to count the volumes sharing an SMB share or an iSCSI
// target, to answer NodeGetVolumeHealth and NodeGetVolumeStats by volume ID,
// to recognise a repeated NodeStageVolume); the host is always the truth, and
// every entry is checked against it before it is relied on.
//
// An entry is written before the host work of NodeStageVolume starts (an
// intent) and removed only after NodeUnstageVolume has finished, so the
// journal is always a superset of the volumes that use a shared resource:
// a crash can leave a stale entry (harmless, it fails the host check) but
// never hide a user (which could tear down a mapping still in use).
//
// An entry holds the volume's staging path and capability, and its
// backend's record (backend.Record): the key of the host resource it shares
// with other volumes (ResourceKey) and the backend's own fields (Attrs),
// which only that backend's package encodes and decodes. The journal keeps
// entries in memory, indexed by volume ID, resource key and backend, so
// that ByResource costs the entries of one resource and reads never wait
// for a write. The backends see the journal through backend.Store.
//
// Each entry is one small JSON file written atomically (temporary file,
// fsync, rename, directory fsync); its format is kept across versions
// (Entry). No secret is ever stored.
//
// Next to the entries, the journal keeps notes (notes.go): small, non-secret
// facts about shared host resources that the host itself cannot tell, such
// as the user name an SMB global mapping was made with
// (MSFT_SmbGlobalMapping has no such property). Each note is one JSON file
// under <dir>/notes, written the same atomic way. Note keys are spelled
// "<backend>/<kind>/<about>" ("smb/mapping/\\srv\data",
// "disk/partitioning/<volume ID>", "iscsi/initiator/chap-secret";
// backend.NotePrefix); each backend owns the values of its notes, and an
// earlier spelling is renamed at start (pkg/plugin, upgrade.go). Never
// store a secret in either.
//
// On Windows, Open gives the directory Administrators as owner and a
// protected DACL (SYSTEM and Administrators only), and the journal refuses
// (never loads, lists in Refused) every entry or note whose file is owned
// by anyone but SYSTEM, Administrators or the plugin itself, has no owner,
// or has more than one name (acl.go): a file planted by another user is
// never acted on, and never stops Open.
//
// OpenReadOnly reads a journal without changing anything, for tools that
// inspect a node while the plugin runs.
package journal
