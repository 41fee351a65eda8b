// Package sim is a simulated Windows host: it implements every interface of
// pkg/host (Disks, Volumes, Files, SMB, ISCSI) over an in-memory model of
// disks, partitions, volumes, SMB global mappings and iSCSI sessions, kept
// durable in a directory, with volume and share contents stored as real
// directories. It lets the plugin's OS-neutral backends, csi-sanity,
// benchmarks and crash tests run on Linux.
//
// # What it is for, and not for
//
// It is a test and development tool. It follows documented Windows
// behaviour (sources below) so that algorithms tested against it behave the
// same against pkg/winhost; where the behaviour is uncertain the code
// says so next to the model. It is never a stand-in for unfinished Windows
// code, and the plugin must not select it on a Windows node.
//
// The package compiles for every GOOS (go vet runs for windows too) but is
// only supported at run time on Linux: mount points are Linux symlinks and
// paths are host-native absolute paths ("/var/lib/kubelet/...").
//
// What belongs here: the model, its persistence, fault injection, the
// operator's calls of host.Admin (admin.go: the node's services and
// settings as preflight reads them, the VHDX files, local users and shares
// selftest makes), the control API tests use to set up and disturb the host (AttachDisk,
// AddShare, AddTarget, Reboot, ...) and the setup file a user declares a
// simulated network in (Setup). What does not: policy (which disk to
// pick, when to format), which belongs to the backends.
//
// # Every host call
//
// Each call of a host method (1) is counted and appended to the call log,
// (2) applies the fault rules of its op, (3) sleeps Config.Latency, giving
// up with an error wrapping ctx.Err() when ctx ends, (4) checks ctx once
// more, (5) does its work under one mutex and (6), for mutating ops,
// returns only once the state holding its effect is durable. Errors wrap
// the host sentinels and name the object ("disk 3 is offline: conflict").
// Op names are the Op* constants ("disks.List", "volumes.Mount", ...).
//
// # Files in Config.Dir
//
//	state.json        the model (below), replaced atomically
//	state.json.*.tmp  transient (removed at open after a crash)
//	faults.json       optional fault rules, read by New
//	volumes/<guid>/   contents of the volume {guid}, created by Format (or a
//	                  pre-formatted AttachDisk, or Mount of a RAW volume)
//	                  and never deleted
//	smb/<server>/<share>/  contents of \\server\share (names lower case)
//
// Only one process may open a directory at a time; a test that sets up a
// host with the Go API closes its Sim before the plugin binary opens the
// same directory with --sim-dir. OpenReadOnly is the exception: it takes no
// lock and changes nothing (only the host calls that read are answered,
// every other fails with ErrReadOnly), so csi-windows-node diagnose can look
// at the host while the plugin simulates it, as on a Windows node.
//
// state.json is written by a single persister: a mutation bumps a
// generation number, the persister writes the newest model (temporary
// file, fsync, rename, fsync of the directory) and wakes every call whose
// generation it covers, so concurrent mutations share writes (group
// commit). It is compact JSON on one line (jq . indents it) with these
// fields (enums are the numeric values of the host package types):
//
//	version                 1
//	salt                    random; secrets are kept as hex SHA-256 of salt, 0x00, secret
//	nextDiskID, nextSessionID, nextAutoLUN, nextTargetOrdinal, rescans
//	disks[]                 id, number, serial, page83, location, size, pendingSize
//	                        (visible after the next rescan), busType, boot, system,
//	                        readOnly, offline, offlineReason, health, collision,
//	                        partitionStyle, target+lun (iSCSI LUN disks), partitions[]:
//	                        offset, size, gptType | mbrType, driveLetter, volume:
//	                        guid, fileSystem, label, size, allocationUnit, health
//	detached[]              disks detached with DetachDisk, by serial, same fields
//	mounts[]                dir, volume (GUID) for each Volumes.Mount
//	shares[]                server, share, users[] (name, passwordSHA256, generation),
//	                        capacity, noEncryption, reachable
//	mappings[]              remotePath, user, requirePrivacy, status, userGeneration
//	                        (the user's password generation when mapped; never a password)
//	targets[]               iqn, ordinal, portals ("host:port"), luns[] (lun, size,
//	                        serial, page83, appearAfterRescans, pending, and the LUN's
//	                        backing store: partitionStyle, partitions), chapUser,
//	                        chapSecretSHA256, mutualSecretSHA256, discoveryCHAPUser,
//	                        discoveryCHAPSecretSHA256
//	portals[]               portal, initiatorPortal, discoveryCHAPUser,
//	                        discoveryCHAPSecretSHA256, targets (discovered IQNs)
//	sessions[]              id, target, portal, initiatorPortal, auth, multipath, persistent
//	persistentLogins[]      target, portal, initiatorPortal, auth, chapUser,
//	                        chapSecretSHA256, multipath
//	unreachablePortals[]    "host:port"
//	initiatorSecretSHA256   the mutual-CHAP initiator secret's hash
//	services[]              name, state, startType: services changed from the
//	                        defaults of admin.go (preflight --fix)
//	virtualDisks[]          path, size, diskID (while attached), partitionStyle and
//	                        partitions (while detached): selftest's VHDX files,
//	                        each also a small marker file at its path
//	localUsers[]            name, passwordSHA256: local accounts of the node
//	localShares[]           name, dir: shares of the node itself (server SIMNODE)
//
// No plaintext password or secret is ever written.
//
// # Faults
//
// Faults().Add(Rule) and <Dir>/faults.json inject faults per op. A rule
// fires on the Nth call of its op counted from when it was added (Nth 0:
// every call); Op "*" matches every op. The JSON form, used by crash-matrix
// tests that run the real plugin binary (WriteFaultsFile writes it):
//
//	{"rules": [
//	  {"op": "volumes.Format", "nth": 1, "crashBefore": true, "exitCode": 86},
//	  {"op": "disks.SetOnline", "nth": 2, "crashAfter": true},
//	  {"op": "smb.Map", "err": "credentialconflict"},
//	  {"op": "disks.Rescan", "delay": "1.5s"},
//	  {"op": "iscsi.Connect", "hang": true}
//	]}
//
// Fields: op (required), nth, err ("notfound", "alreadyexists",
// "dirnotempty", "conflict", "inuse", "logonfailure", "accessdenied",
// "unreachable", "readonly", "outofrange", "busy", "invalid",
// "credentialconflict", "notimplemented": the host sentinels; "internal":
// an error that is none of them), delay (Go duration, slept ctx-aware),
// hang (block until Faults().Release(op), Faults().Clear() or Close; the
// caller gets ctx.Err() at its deadline through host.Detached, the call
// stays outstanding on its host.Tracker and completes its effect once
// released; Faults().Hung(op) counts it from the moment it blocks, when it
// is already outstanding), crashBefore (exit before the call has any effect), crashAfter
// (exit once the call's effect is durable), exitCode (default 86). Unknown
// fields are rejected. A crash stands for the plugin's process dying, not
// the host: it first stops the other calls at the sim's mutex and writes
// the model with what they did so far, so the real links and directories
// and state.json agree after the restart; then it flushes klog and calls
// the package variable exit (os.Exit; tests replace it). The file is read once, by New: remove
// or rewrite it before restarting a crashed process.
//
// Calls, Count and ResetCounts expose per-op counters; Mark and OpsSince
// return the ops called since a mark (the last 10000 are kept), so a test
// can list the host steps of one RPC and crash at each in turn.
//
// # Auto-attach
//
// With Config.AutoAttach, Disks.Rescan called with a ctx carrying a volume
// ID V (WithVolume) attaches a disk for V when no disk has serial V:
// the disk detached earlier with serial V if any (its contents come back),
// else a blank one of Config.AutoAttachSize (default 1 GiB): RAW, writable,
// offline with OfflineReason Policy, BusType SCSI, serial V, page 83 the
// hex of the first 16 bytes of SHA-1(V), Location "Integrated : Adapter 1 :
// Port 0 : Target 0 : LUN n" with n the next LUN (counting up from the last
// one picked) that no disk on adapter 1 has. It stands in for a
// controller's ControllerPublish in csi-sanity runs. Likewise, with
// Config.AutoAttach, Disks.Rescan under a ctx from WithExpansion(V, n)
// first grows the disk with serial V to n bytes (rounded up to whole MiB)
// when it is smaller, and logs it: the stand-in for ControllerExpandVolume,
// so that NodeExpandVolume works with a controller that knows nothing of
// the sim. It never shrinks a disk, and leaves iSCSI LUNs alone.
//
// # Setup
//
// Config.Setup (the plugin's --sim-config file, parsed by ParseSetup; its
// keys are in docs/sim-config.md) adds disks, SMB shares and iSCSI targets
// to the state New opens. It is additive and idempotent: an entry the state
// has with the same attributes is kept as it is (a disk or LUN larger than
// declared counts as the same, grown since), what the state lacks (a disk,
// a share, a user of a share, a target, a portal or LUN of a target) is
// added, and nothing is removed. An entry that contradicts the state fails
// New with ErrSetupConflict, naming the entry, before anything is changed.
// Declared disks are blank, offline by SAN policy, on adapter 1 like
// auto-attached ones. Passwords and secrets are hashed as by AddShare and
// AddTarget.
//
// # Modelled Windows behaviour
//
// Sources: Microsoft's documentation of each call, and where it is silent the
// behaviour other drivers met, summarised with its sources in docs/windows.md
// ("Where the Windows facts come from"; "wf" below names its subsections).
//
//   - Disk 0 is the boot and system disk (GPT: EFI, MSR, C: NTFS). Taking
//     it offline, making it read-only, initialising, partitioning,
//     formatting or detaching it fails with ErrConflict.
//   - Disk numbers: a new disk gets the lowest free number (Windows numbers
//     disks in enumeration order and reuses freed numbers; "lowest free" is
//     a simplification). A Disk handle (Ref) of a detached disk does not
//     reach another disk that got its number.
//   - Where Windows' answer is uncertain, Config.Windows (or the setup
//     file's windows section) picks one of the documented answers, and the
//     host contract accepts each: SetReadOnly on an offline disk changes
//     the attribute (OfflineReadOnlyAccept, the default) or fails with
//     ErrNotReady (OfflineReadOnlyRefuse; a clone whose signature collides
//     is still accepted).
//   - New disks on shared buses come up offline by SAN policy (wf SAN policy).
//     Clones whose signature collides with an online disk are offline
//     (reason Collision) and read-only; SetOnline fails with ErrConflict
//     until read-only is cleared, then Windows writes a new signature and
//     the disk comes online (csi-proxy#287; wf Signature collisions).
//   - Initialize needs an online, writable RAW disk; GPT gets the MSR
//     partition at 17408, 16759808 bytes long (aws-ebs-csi-driver#1001; wf GPT layout).
//     Partitions start on 1 MiB boundaries and take the largest free
//     extent (the CreatePartition default); the sim rounds sizes to 512-byte sectors (uncertain
//     whether Windows also rounds the end of a maximum-size partition).
//   - ResizePartition: same size is a no-op; a change below 1 MiB fails
//     with ErrOutOfRange (StorageWMI 4097, csi-proxy PR #364); the volume follows.
//     ResizeDisk's new size shows after the next Rescan (drivers rescan
//     before expanding; whether Windows notices by itself is uncertain:
//     wf Growing a disk).
//   - Volumes of an offline or detached disk are not visible (Get,
//     OfPartition, Mount, DiskNumber, FreeSpace: ErrNotFound, "device not
//     ready"); their partitions still are, without access paths
//     (uncertain). Format refuses a volume with a file system
//     (ErrAlreadyExists; the plugin never forces), accepts NTFS (clusters
//     512 B to 2 MB) and ReFS (4 KB or 64 KB).
//   - Mount points (SetVolumeMountPoint, DeleteVolumeMountPoint pages) need an existing empty
//     directory (ErrDirNotEmpty when it has entries or is already a mount
//     point or link); Unmount (DeleteVolumeMountPoint) leaves the empty
//     directory. Stat reports mount points as PathMountPoint with the
//     volume GUID path, links to shares in \\server\share\dir\ form (the
//     trailing '\', as winpath.UNCLinkTarget explains). Remove refuses a mount point (ErrInUse). Symlinks may
//     dangle, as on Windows.
//   - SMB global mappings: one user name per server (error 1219); a
//     server that is unknown or down is unreachable (ERROR_BAD_NETPATH)
//     and a share it lacks not found (ERROR_BAD_NET_NAME), for Map and
//     Check alike;
//     RequirePrivacy against a server without encryption is "network
//     access is denied" (csi-driver-smb #655); after a server password
//     change a mapping keeps status OK but access fails with
//     ErrAccessDenied (csi-proxy PRs #66/#75); an unreachable
//     server turns mappings Disconnected; after a reboot mappings turn
//     Unavailable (csi-driver-smb PR #1219; wf SMB mappings).
//   - iSCSI: adding a portal runs SendTargets discovery once; later targets
//     need RefreshPortal. CHAP secrets are 12 to 16 bytes; mutual CHAP
//     uses the node-wide initiator secret. A second session to a target
//     needs multipath on both sessions (uncertain; wf iSCSI discovery).
//     A target's first session makes its LUNs appear as offline iSCSI disks
//     (late LUNs after AppearAfterRescans rescans); logging out of the last
//     session is refused while a volume of the target is mounted (ErrInUse)
//     and otherwise removes the disks, keeping their contents in the LUN's
//     backing store. Disconnect keeps a persistent login; Unregister
//     removes it. Reboot restores persistent logins whose portal answers
//     and whose credentials still work; the others are gone (democratic-csi
//     #342).
//
// Known simplifications: access control is enforced at the host API only
// (a process can read a share's directory through a link without a
// mapping, or a volume's directory while its disk is offline); write
// protection of read-only disks is not enforced on file contents; the free
// space overhead of file systems is illustrative.
package sim
