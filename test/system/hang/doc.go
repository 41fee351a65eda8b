// Package hang checks the plugin's behaviour while a host call never
// returns (the simulated host's Hang rule): the RPC fails with
// DeadlineExceeded at its deadline, a retry of the same volume gets
// Aborted while the call runs, volumes that share nothing keep working;
// when the hung call is a transition of an SMB share or iSCSI target (map,
// unmap, log in, log out), a volume sharing it waits for the transition's
// lock (and fails at its own deadline without touching the resource); when
// it is a volume's own work (its link, its format, its unmount), a volume
// sharing the share or target proceeds, and the unstage of that volume
// keeps the mapping or session the hung volume still uses; once the hang
// clears the retry succeeds without doing the hung work again. The lock
// policy is documented in docs/reliability.md.
package hang
