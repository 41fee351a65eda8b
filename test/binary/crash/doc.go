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
// through a publication before the crash are intact. A scenario's starting
// point (its volumes staged and written to) is prepared once in library
// mode and copied for each of its runs (template_test.go).
//
// Concurrent scenarios run two RPCs at once, the second starting where the
// first has got to: two first stages of one share or target, and the stage
// of one volume while the last other volume of the share or target
// unstages, in both orders. Their crash points are the union of the calls
// of three learning runs; a crash point the run's interleaving does not
// reach still has the run checked.
//
// The orphan sweep's clean round (pkg/sweep) has its own matrix
// (TestSweepCrashMatrix): on a node with volumes gone and unstages failed
// half-way beside staged volumes of the same share and target, the binary
// crashes at the host calls of the round it runs at start; restarted, its
// next round must leave the node as an uninterrupted round does. The RPC
// scenarios run the binary with --orphan-sweep=off, so that their crash
// points count their RPC's calls only.
//
// make test runs the single-RPC scenarios in full and the concurrent ones
// as the subset (a crash before every step, after the steps with an
// effect); make test-crash runs everything in full, verbosely
// (CSI_CRASH_MATRIX=full; CRASH_COUNT repeats it). CSI_CRASH_MATRIX=subset
// keeps only the subset for every scenario.
package crash
