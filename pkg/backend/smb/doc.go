// Package smb is the SMB backend: it stages a directory of an SMB share by
// making sure one healthy SMB global mapping of the share root exists and
// linking the staging directory to the volume's own directory on the share;
// it removes the link at unstage and the mapping once no other staged volume
// of this node uses the share; it reports the health of the link, the
// mapping and the share.
//
// The algorithm is OS-neutral and written against pkg/host; the same code
// runs on Windows (pkg/winhost) and on the simulated host.
//
// Rules kept here (as csi-proxy keeps them, kubernetes-csi/csi-proxy@eeba470
// pkg/server/smb/server.go and pkg/wmi/smb.go, and as csi-driver-smb's
// issues taught):
//   - Only the share root \\server\share is ever mapped, lower-cased, never a
//     sub-directory (csi-proxy PR #210, csi-driver-smb #219): every volume of
//     a share goes through that one mapping, and its own directory is reached
//     through the staging link.
//   - A mapping is reused only when its status is OK and the share answers
//     through it; a mapping whose credentials stopped working (password
//     rotated on the server, csi-proxy PRs #66/#75) or whose status is not OK
//     (after a reboot or a network outage) is removed and made again.
//   - The user a mapping was made with is recorded in the stage journal's
//     notes (never the password): MSFT_SmbGlobalMapping cannot tell it. A
//     volume whose secret names another user remaps the share only when no
//     other staged volume uses it; otherwise the working mapping is kept,
//     because removing it would break the other volumes.
//   - The users of a share are counted from host state (the staging links),
//     using the journal only as the index of where to look, so the count is
//     right after a restart or a crash.
//
// # Concurrency
//
// Each share's mapping has a state and a set of registered volumes
// (pkg/backend/shared). Only its transitions are exclusive per share, under
// a lock held until their host calls really end: making the mapping (or
// making it again when it is stale or does not suit the volume), and
// removing it. A stage registers with the share first; when the share is
// ready it checks the mapping (it exists with status OK, was made as the
// volume's user, encrypts when the volume requires it) and goes on to the
// directory check and the link beside the share's other stages, without
// waiting; a refusal of that directory check through a mapping that looked
// usable repairs the mapping as a transition and checks again. Stages that
// arrive while the mapping is being made wait for it and use it. An
// unstage is registered from before it removes its link; the mapping is
// removed only when no other volume is registered and no journal entry of
// the share still links into it on the host: the last volume out removes
// it, once. A stage that fails removes the mapping it made, or the mapping
// an unstage left to it, unless a staged volume uses it.
//
// ReleaseUnused (backend.Releaser) is the same decision for a caller that
// is not a volume, such as an orphan sweep.
//
// What does not belong here: gRPC codes (the node maps host sentinels),
// WMI or Win32 details (pkg/winhost), parsing of the volume's
// parameters (pkg/contract).
package smb
