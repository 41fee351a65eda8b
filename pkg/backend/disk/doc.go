// Package disk is the disk backend: it finds the attached disk a volume's
// selector names, prepares it (clear read-only, online, GPT, one data
// partition, format a blank volume) and mounts its volume on the staging
// directory; it unmounts and offlines it at unstage, grows it on expand and
// reports its health.
//
// The algorithm is OS-neutral and written against pkg/host; the same code
// runs on Windows (through pkg/winhost) and on the simulated host. The
// iSCSI backend reuses PrepareAndMount and Unmount once it has found the
// disk behind a LUN.
//
// Safety rules kept here: the boot or system disk is never selected; a
// selector matching two disks is refused; a disk with more than one data
// partition, or a partition of a type the plugin does not create, is never
// touched; a volume with a file system is never formatted.
package disk
