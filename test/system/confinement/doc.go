// Package confinement checks that no path from the CO leads the plugin out
// of the kubelet directory: for every path-taking RPC (NodeStageVolume,
// NodeUnstageVolume, NodePublishVolume, NodeUnpublishVolume,
// NodeGetVolumeStats, NodeExpandVolume, NodeGetVolumeHealth) and every
// hostile form (".." components, mixed separators, UNC and device paths,
// GLOBALROOT, case variations, control characters, real symlinks that point
// out of the kubelet directory) the RPC is rejected before the simulated
// host sees a single call.
//
// On Linux the node confines paths in the POSIX grammar (the simulated
// host takes Linux paths; '\' still counts as a separator). The Windows
// grammar (drive letters, case-insensitive names, junctions, volume mount
// points) is exercised at the winpath level with winpath.Windows roots and
// an in-memory file system (winpath_test.go).
package confinement
