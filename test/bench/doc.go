// Command bench measures the plugin the way kubelet uses it: it builds the
// real binary (or takes -bin), starts it on the simulated Windows host
// (pkg/sim, --host=sim) with a configurable latency injected before
// every host call (--sim-latency), and drives it over its unix socket with
// a gRPC CSI client. It prints a table and, with -json, writes the same
// numbers as JSON. docs/performance.md explains the method and holds the
// latest numbers.
//
// What it measures:
//
//   - the physical floor: p50/p99 of NodeGetCapabilities on a bare grpc-go
//     server (this binary run with -serve-floor: no interceptors, logging
//     or metrics) in a process of its own, over a unix socket and one
//     connection, as the plugin is called;
//   - the plugin's floor: p50/p99 of its NodeGetCapabilities round trip on
//     the same kind of socket and connection;
//   - per backend (disk, smb, iscsi): p50/p99 of NodeStageVolume,
//     NodePublishVolume, NodeGetVolumeStats, NodeExpandVolume (disk, where
//     it grows the volume, and iscsi, where it finds nothing to grow),
//     NodeUnpublishVolume and NodeUnstageVolume, one RPC at a time, their
//     throughput with -concurrency clients, and a
//     NodePublishVolume+NodeUnpublishVolume cycle against the floor;
//   - host calls per RPC and the time spent in them, read from the
//     plugin's own metrics csi_windows_node_host_calls_total and
//     csi_windows_node_host_call_duration_seconds on /metrics
//     (pkg/hostmetrics) before and after each RPC, so that the host's work
//     can be told from the plugin's overhead;
//   - scaling: the wall time of staging N volumes at once, then of
//     unstaging them at once, with 50 ms (-scale-latency) per host call,
//     the median of -scale-runs runs on fresh hosts, for disks (N = 1, 10,
//     100), SMB volumes spread over 10 shares (1 on 1, 10 on 10, 100 on
//     10), SMB volumes on one share (1, 100) and the LUNs of one iSCSI
//     target (1, 32); -short uses smaller sets. Each SMB and iSCSI set has
//     shares or a target of its own, and the bench checks from /metrics
//     that each share was mapped and unmapped once, each target logged in
//     to and out of once and its portal added and removed once;
//   - the plugin process's peak (VmHWM) and current (VmRSS) resident set
//     idle and with 500 (-short: 50) staged disk volumes, and the time from
//     process start to the first Probe that answers ready.
//
// The simulated host runs inside the plugin process, so its work (the
// model, the durable state.json write of every mutating call, the real
// directories and symbolic links that stand for mount points and links)
// is part of every figure; with --sim-latency it stands for the latency of
// the real host's calls. Before each run the bench opens the sim directory
// itself (sim.New) to attach the disks, add the shares and targets the
// volumes need, as a controller and a storage admin would have, and closes
// it again: the sim locks its directory, so it is never opened while the
// plugin runs. Like kubelet, the bench creates the staging directory and
// the parent of the publish path before calling the plugin.
//
// It runs on Linux only (the simulated host does). Nothing is enforced:
// the goals of issues 7 and 13 are reported as PASS or MISS; the exit
// status is non-zero only when the bench itself fails.
//
// Usage:
//
//	go run ./test/bench [-short] [-iterations N] [-concurrency C] [-latency D]
//	    [-scale-latency D] [-scale-runs R] [-backends disk,smb,iscsi]
//	    [-phases rpc,scale,memory] [-json FILE] [-bin FILE] [-v LEVEL]
//	    [-work DIR] [-keep] [-pprof DIR]
//
// With -pprof the plugin runs with --enable-pprof, and the bench writes CPU
// profiles of a NodeGetCapabilities loop and of a publish/unpublish loop
// per backend, and an execution trace and a CPU profile of the largest set
// of each scaling group (go tool trace -pprof=sync shows what the stages
// waited for).
package main
