// Package hang checks the plugin's behaviour while a host call never
// returns (the simulated host's Hang rule): the RPC fails with
// DeadlineExceeded at its deadline, a retry of the same volume gets
// Aborted while the call runs, volumes that share nothing keep working, a
// volume sharing the SMB share or iSCSI target waits for that resource's
// lock (and fails at its own deadline without touching it), and once the
// hang clears the retry succeeds without doing the hung work again. The
// lock policy is documented in docs/reliability.md.
package hang
