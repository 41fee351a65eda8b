// Package sweep tests the orphan sweep (pkg/sweep) end to end on the
// simulated host, through the plugin as the binary wires it
// (test/harness/simnode), rounds triggered with Plugin.Sweep:
//
//   - kubelet never sent NodeUnstageVolume (a pod deleted while the node
//     was down, then kubelet's state cleaned): journal entries whose
//     staging paths are gone, some on a share or target a staged volume
//     still uses;
//   - unstages that failed half-way and were never retried: a mapping, a
//     target's session and persistent login, a portal, left with no user;
//   - the plugin reinstalled with an empty state directory while mappings
//     and sessions remain: nothing is the plugin's any more, nothing is
//     removed;
//   - the sweep in clean mode racing stages and unstages of the same share
//     and target (run with -race).
//
// Each checks that report mode makes no host call that changes anything,
// that clean mode removes exactly the orphans, that what an administrator
// made is left alone, and that staged volumes keep what they use. The
// crash matrix (test/binary/crash) crashes the binary at the host calls of a
// clean round.
package sweep
