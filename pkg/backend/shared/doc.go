// Package shared keeps, for a backend whose volumes share a host resource
// (the SMB global mapping of a share root, the iSCSI sessions of a target),
// what the plugin knows of each such resource and of the volumes using it,
// so that only the resource's transitions are exclusive and the per-volume
// work around them runs in parallel.
//
// # States
//
// A resource is Unknown (nothing known in this process: after a start, or
// after a transition failed or timed out; the host decides), Connecting (a
// transition that makes it usable runs: map, log in, repair), Ready (the
// last such transition succeeded), Disconnecting (a transition that may
// remove it runs: unmap, log out) or Absent (this process removed it and
// nothing made it since).
//
// Transitions run one at a time per resource, under a key lock that is
// held until the host calls made in the transition have really ended
// (inflight.KeyMutex.LockUntilIdle), so a call hung past its deadline never
// overlaps the next transition of the same resource.
//
// # Users
//
// A volume is registered with the resource for as long as its stage or
// unstage works on it, and until the host calls made for it have ended:
//
//   - a stage (Set.Stage) registers before anything else, then Acquire
//     waits only while a transition runs. A stage that finds the resource
//     Ready checks it (the backend's verify, outside any lock) and goes on
//     to its per-volume work without waiting; otherwise it runs the
//     backend's connect as the transition, and the stages waiting behind
//     it take the result.
//   - an unstage (Set.Unstage) registers before its per-volume work; Gone
//     says its link or mount point is gone; then Set.Release decides.
//
// Set.Release removes the resource (the backend's disconnect, as a
// transition) only when no other volume is registered: the last volume
// out does it, exactly once. Within the transition the backend counts the
// remaining users from the stage journal (the backend.Store), which holds
// an entry for every volume from the intent of its stage to the end of its
// unstage: Transition.Others returns the registered volumes that use the
// resource, and the journal entries of the others that the host must
// decide on (a link into the share, a mount point of a disk of the
// target), leaving out the volumes this process saw leave. The host stays
// the source of truth; what this package remembers only spares host calls
// and orders the transitions.
//
// A release that finds another volume registered is deferred to it: when
// that volume's stage then fails (Use.Failed; a backend's Stage ends with
// Use.End, which calls the backend's undo with that answer), it releases
// the resource itself, so a failing stage never leaves a resource that an
// unstage meant to remove.
//
// A Set is typed by what a transition that made a resource ready hands to
// the stages that waited for it (Transition.Keep, the fresh argument of
// Acquire's verify): the SMB backend's mapping, the iSCSI backend's
// sessions.
//
// # Releasing what nothing uses
//
// Set.Release with no volume ID is the same decision for a caller that is
// not a volume, such as an orphan sweep: it waits for a running
// transition, keeps the resource while a volume is registered, and
// otherwise lets the backend count users and remove it, under the same
// lock as the stages and unstages.
//
// What does not belong here: host calls and their order (the backends),
// the per-volume guard of the node service (pkg/inflight.Set).
package shared
