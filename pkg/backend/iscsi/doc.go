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
// health of the sessions. What does not: WMI (pkg/host/winhost), disk
// preparation, formatting and mounting (pkg/backend/disk), parameter parsing
// (pkg/contract).
//
// # Lifetime of sessions and portals
//
// Sessions are shared by every volume on a LUN of the same target; they are
// created by the first stage and logged out by the unstage of the last
// volume. That count is derived from host state at the time of the
// decision, with the stage journal as the index: a journal entry of the same
// target counts only while its staging path is a volume mount point of a
// disk reached through the target (or of a volume the host cannot place,
// which counts too, so that a session is never torn down under a volume that
// may still use it). It is therefore right after a plugin restart or crash.
// Stages and unstages of one target are serialised by a per-target lock, so
// a count is never taken while another volume of the target is half staged.
//
// A portal is removed at unstage (unless Options.KeepPortals) when no
// session of any target goes through it and no other staged volume lists
// it. Portals are locked while a stage adds them and logs in through them,
// so an unstage never removes a portal between those two steps.
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
// (MSFT_iSCSISession.SetCHAPSecret, csi-proxy.md §5): two targets that need
// different mutual-CHAP secrets cannot both log in. The backend records a
// salted SHA-256 of the secret it set, and the targets staged with it, in a
// journal note (never the secret itself), and refuses with host.ErrConflict
// to set a different secret while a target recorded under the old one still
// has a session.
package iscsi
