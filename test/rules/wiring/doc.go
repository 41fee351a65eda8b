// Package wiring fails when the plugin is put together anywhere but in
// pkg/plugin: every Go file of the module (tests, harnesses and
// build-tagged files included) is parsed, and a call of node.New or of a
// backend's constructor (disk.New, smb.New, iscsi.New) outside pkg/plugin
// is a violation. A backend's own package may construct it in its unit
// tests, and pkg/winhost may run the disk backend over its scripted
// executor; nothing else builds the node service or a backend by hand, so
// the binary and every harness run the same wiring (plugin.New).
// TestScanFindsPlantedViolations proves the scan finds what it looks for.
//
// TestWindowsBinaryLinksNoSim lists the packages the plugin binary links
// for GOOS=windows (go list -deps) and fails if the simulated host
// (pkg/sim, pkg/sim/controller) is among them: cmd wires it only in files
// built off Windows.
package wiring
