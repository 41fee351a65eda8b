// Package preflight checks that a Windows node can serve the plugin: the
// Windows release, the process's rights, the kubelet and state
// directories, the storage provider, the SMB client and iSCSI initiator
// services, Multipath-IO, the SAN policy and Windows Server 2025's native
// NVMe stack. Each check says pass, warn, fail or info (reported, not
// judged), what it found, and a one-line fix.
//
// What belongs here: the checks' logic and verdicts, the one fix (Fix:
// MSiSCSI set to start automatically and started), the gauge the plugin
// exports. It is OS-neutral: it reads the node through host.Host and
// host.System (pkg/winhost on Windows, pkg/sim anywhere) and is tested on
// Linux over the scripted executor. What does not: how a fact is read from
// Windows (pkg/winhost), printing (cmd/csi-windows-node).
//
// Run only reads; the plugin runs it at start (pkg/plugin), and so does
// csi-windows-node diagnose. Fix is called only by
// csi-windows-node preflight --fix.
package preflight
