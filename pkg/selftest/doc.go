// Package selftest proves the plugin on a node end to end, with nothing
// from a controller: it makes what a controller and kubelet would (a VHDX
// attached as a disk, a local SMB share and user, the kubelet's
// directories) and drives the real node service, built by plugin.New over
// the node's real host, through NodeStageVolume, NodePublishVolume, I/O
// through the published path, stats, expansion, health, unpublish,
// unstage and a second stage, for the disk, SMB and iSCSI backends.
//
// What belongs here: the steps, their order and what each checks; the
// names everything carries (Prefix and the run's ID); removing what a run
// made, even when a step fails or the run is interrupted, and what an
// earlier, killed run left. It is OS-neutral: the host and the scratch
// objects come through host.Host and host.Admin, so the same steps run on
// Windows (pkg/winhost over wmiexec), on the simulated host in make test,
// and over a scripted or replayed executor in the recording tests. What
// does not: flags and printing (cmd/csi-windows-node), how a scratch
// object is made on Windows (pkg/winhost).
package selftest
