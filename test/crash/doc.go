// Package crash is the crash matrix: for NodeStageVolume and
// NodeUnstageVolume of every backend (a disk; two volumes on one SMB share;
// two LUNs on one iSCSI target, multipath over two portals with CHAP), it
// learns the RPC's host-call sequence in library mode (test/harness/simnode, the
// binary's wiring), checks that the plugin binary makes the same calls (its
// /metrics host-call counters), then for every step k crashes the binary
// before and after the k-th host call (the simulated host's faults.json
// exits the process), restarts it and retries the RPC as kubelet would.
// Every case must converge: the volumes end staged or unstaged as asked,
// no mount point, SMB mapping, iSCSI session, persistent login or portal is
// leaked or lost, disks are online exactly while staged, no disk is
// partitioned or formatted twice, the journal matches, and files written
// through a publication before the crash are intact.
//
// make test runs the full matrix; make test-crash runs it verbosely
// (CRASH_COUNT repeats it). CSI_CRASH_MATRIX=subset keeps only the crashes
// that differ in effect (before every step, after the steps with an effect).
package crash
