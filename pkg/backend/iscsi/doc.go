// Package iscsi is the iSCSI backend: it logs the node in to the volume's
// target through the Microsoft iSCSI initiator (portals, SendTargets
// discovery, one-way or mutual CHAP, persistent and multipath sessions),
// finds the disk behind the volume's LUN and hands it to the disk backend,
// which prepares and mounts it like any other disk. At unstage it unmounts
// the volume and logs out of the target once no other staged volume on the
// node uses a LUN of it, then removes the portals nothing uses any more.
//
// What belongs here: the order of the iSCSI steps, idempotency, the usage
// count of a target and of a portal, rollback of a failed stage, and the
// health of the sessions. What does not: WMI (pkg/winhost), disk
// preparation, formatting and mounting (pkg/backend/disk), parameter parsing
// (pkg/contract).
//
// # Lifetime of sessions and portals
//
// Sessions are shared by every volume on a LUN of the same target; they are
// created by the first stage and logged out by the unstage of the last
// volume. Each target has a state and a set of registered volumes
// (pkg/backend/shared): only logging in (with the portals and the
// initiator secret it needs) and logging out are exclusive per target,
// under a lock held until their host calls really end. A stage registers
// with the target first; when the target is ready it checks the sessions
// (one at least, one per portal with multipath, persistent when the volume
// is) and goes on to find, prepare and mount its LUN's disk beside the
// target's other stages, without waiting; stages that arrive during a
// login wait for it and use it. An unstage is registered from before its
// unmount until its disk is offline, so no logout takes the disk away
// under it. The target is logged out only when no other volume is
// registered and no journal entry of the target still has its staging
// path as a volume mount point of a disk reached through the target (or of
// a volume the host cannot place, which counts too, so that a session is
// never torn down under a volume that may still use it): the last volume
// out logs out, once. The count is therefore right after a plugin restart
// or crash. A stage that fails logs out of the sessions it created, or of
// the target an unstage left to it, unless a staged volume uses it.
//
// When the target is logged out (unless Options.KeepPortals), the portals
// its sessions went through and its volumes list are removed when no
// session of any target goes through them and no other volume being
// staged, unstaged or staged lists them. Portals are locked while a stage
// adds them and logs in through them, so a removal never falls between
// those two steps.
//
// ReleaseUnused (backend.Releaser) is the same decision, for a target or a
// portal, for a caller that is not a volume, such as an orphan sweep.
//
// # Multipath and failover
//
// With multipath the volume's target is logged in through every portal,
// each session with IsMultipathEnabled; Windows needs the Multipath-IO
// feature with iSCSI disks claimed by MSDSM (Enable-MSDSMAutomaticClaim
// -BusType iSCSI) to present one disk for all paths. Without that claim
// each path shows its own disk for the LUN, and the stage fails with
// host.ErrConflict saying so. A stage succeeds when at least one path logs
// in; paths whose portal does not answer are left out, logged, and reported
// by Health as PathDown until a later stage of a volume of the target adds
// them. Without multipath the target is logged in through the first portal
// that answers, in the order the contract lists them (failover at stage
// time only: Windows does not move a single session to another portal).
//
// # Mutual CHAP and the node-wide initiator secret
//
// The Microsoft initiator has one initiator CHAP secret for the whole node
// (MSFT_iSCSISession.SetCHAPSecret; SetIScsiInitiatorCHAPSharedSecret on
// learn.microsoft.com: "the default CHAP secret that all initiators on the
// computer use"): two targets that need
// different mutual-CHAP secrets cannot both log in. The backend records the
// MAC of the secret it set under the node's credential key, and the
// targets staged with it, in a journal note (never the secret itself), and
// refuses with host.ErrConflict
// to set a different secret while a target recorded under the old one still
// has a session.
package iscsi
