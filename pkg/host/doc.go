// Package host declares the OS-neutral contracts between the storage
// algorithms (pkg/backend/...) and whatever carries them out on a machine:
// the Windows host (pkg/winhost over a WMI/Win32 executor) or the
// simulated Windows host (pkg/sim).
//
// What belongs here: small ctx-first interfaces named after Windows storage
// concepts (disks, partitions, volumes, mount points and links, SMB global
// mappings, iSCSI portals, targets and sessions, the DACL of a volume's
// root and the accounts it names), the value types they exchange, the
// sentinel errors every implementation wraps, the grammar of the names and
// secrets they take (names.go: portals, iSCSI names, SMB share paths, CHAP
// secret lengths; pkg/contract and pkg/sim both check with it), and the
// bookkeeping of outstanding host calls (calls.go).
//
// What does not: gRPC codes, CSI types, WQL, build-tagged code, policy.
// Deciding what to do (which disk, whether to format, when a mapping may be
// removed) is the job of the backends; this package only says what can be
// asked of a host and what the answers mean.
//
// Every method honours ctx: when ctx ends before the host answers, the
// method returns an error wrapping ctx.Err(). A host call that cannot be
// interrupted keeps running in the background; it is tracked (see
// BeginCall) so that callers can hold their locks until it really ends.
package host
