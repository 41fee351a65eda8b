// Package sim is a simulated Windows host: it implements every interface of
// pkg/host (Disks, Volumes, Files, SMB, ISCSI, Security) over an in-memory
// model of disks, partitions, volumes (with their root's DACL), SMB global
// mappings, iSCSI sessions and account names, kept
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
// pick, when to format), which belongs to the backends; the controller's
// part of sim mode (attaching a volume's disk), which is
// pkg/sim/controller's; and anything above pkg/host: the package imports
// only pkg/host and internal/, and the Windows binary does not link it.
//
// # Every host call
//
// Each call of a host method (1) is counted and appended to the call log
// (Calls, Count, Mark and OpsSince list the host steps of one RPC), (2)
// applies the fault rules of its op, (3) sleeps Config.Latency, giving up
// with an error wrapping ctx.Err() when ctx ends, (4) checks ctx once
// more, (5) does its work under one mutex and (6), for mutating ops,
// returns only once the state holding its effect is durable. Errors wrap
// the host sentinels and name the object ("disk 3 is offline: conflict").
// Op names are the Op* constants ("disks.List", "volumes.Mount", ...).
//
// # Its directory
//
// Config.Dir holds state.json (the model, State, replaced atomically by one
// persister that lets concurrent mutations share a write; no plaintext
// password or secret, only salted hashes), faults.json (fault rules read
// by New), volumes/<guid>/ (the contents of each volume, kept after the
// volume is gone) and smb/<server>/<share>/ (the contents of each share).
// Only one process opens a directory at a time; OpenReadOnly takes no lock
// and changes nothing, so that csi-windows-node diagnose can look at the
// host while the plugin simulates it, as on a Windows node.
//
// # Faults, control and setup
//
// Faults().Add(Rule) and <Dir>/faults.json (WriteFaultsFile) make an op
// fail, wait, hang until released, or crash the process before or after
// its effect (Rule); a crash first writes what the other calls did, so
// that the links, directories and state.json agree after the restart.
// The control API changes the host behind the plugin's back as a cloud,
// an administrator or a reboot would (AttachDisk, AttachVolumeDisk,
// ResizeDisk, GrowVolumeDisk, DetachDisk, AddShare, AddTarget, Reboot,
// ...); the stand-in for a controller in sim mode uses it
// (pkg/sim/controller). Config.Setup (the plugin's --sim-config,
// docs/sim-config.md) adds disks, shares and targets to the state New
// opens: additively and idempotently, and ErrSetupConflict, changing
// nothing, for an entry that contradicts the state.
// A setup whose disks set number is a disk table (setupdisk.go): the
// node's whole disk table as Windows reports it, every identification
// property and what the per-disk IOCTLs answer (DiskIdentity), copied from
// a real node. It replaces a fresh host's built-in boot disk; serials and
// page 83 identifiers may repeat in it, as on real nodes, and the simulated
// host reports them as given. It decides no Windows fact: an undeclared
// SCSI address is derived only from a SCSI location (whose path, target
// and LUN Windows takes from IOCTL_SCSI_GET_ADDRESS), never from an NVMe
// device path.
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
//     is still accepted); a second persistent iSCSI login of a target
//     through one portal replaces the first (SecondPersistentLoginReplace,
//     the default) or is stored beside it and replayed too
//     (SecondPersistentLoginAdd).
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
//   - Security (security.go): Format gives a volume's root one of two
//     DACLs from public dumps of real machines, Windows Server's (the
//     default) or Windows 11's (WindowsAnswers.VolumeRootACL), because Windows does
//     not document which; AddRootAllowEntries adds what is missing after
//     the last explicit entry and leaves every entry as it was, refuses a
//     NULL DACL (ErrConflict) and a read-only disk (ErrReadOnly; assumed:
//     ERROR_WRITE_PROTECT); LookupAccountName resolves the built-in names
//     in English and the accounts Setup declares, never ContainerUser or
//     ContainerAdministrator (they exist only inside a container).
//
// Known simplifications: access control is enforced at the host API only
// (a process can read a share's directory through a link without a
// mapping, or a volume's directory while its disk is offline); write
// protection of read-only disks is not enforced on file contents; the free
// space overhead of file systems is illustrative; a root's DACL is kept as
// a model and never checked against the files below it.
package sim
