// Package plugin puts csi-windows-node together: from its options and a
// started host it opens the stage journal, wraps the host with host-call
// metrics, builds the disk, SMB and iSCSI backends over the host and the
// journal, and the node and identity services over them (New), and serves
// them (Serve), running the orphan sweep (pkg/sweep) beside them and, with
// --kubelet-registration, kubelet's plugin registration (pkg/registration:
// ClaimRegistration, then Serve once the CSI socket is served).
//
// It is the one place that decides how those parts are wired. The binary
// (cmd/csi-windows-node: flags, then FromConfig, then its host, then New,
// then Serve) and every test harness (test/harness/simnode, the csi-sanity
// library runs, the Windows integration suite, the benchmarks and the
// env tests of pkg/node and the backends) build the plugin with New, so
// what the tests run is what ships; test/rules/wiring keeps it so.
//
// What does not belong here: choosing and starting the host (the binary
// chooses between pkg/winhost and the simulated host; tests start
// their own), flag parsing (pkg/config), and any of the wired parts' own
// logic.
package plugin
