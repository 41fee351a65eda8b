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
// Finding the disk (find.go, identify.go, platform.go) is the most
// dangerous thing the plugin does, and its rules are kept here: the boot,
// system and known temporary disks are never selected; a selector matching
// two disks, or a disk that might match but whose identity cannot be read
// for certain (an NVMe namespace with no readable ID, a device path read
// two ways, an IOCTL that failed, a device-ID page not answered by a disk
// whose UniqueId is the value looked for), is refused naming the
// candidates; a disk that does not implement an IOCTL has no such
// identifier; the cloud presets find the disk
// by each cloud's published convention (docs/parameters.md, "Presets");
// before the first write, and before every write after the plugin changed
// the disk (grow and expand included), the disk is read again and must
// still be the one chosen, by its identity (serial number, UniqueId, size,
// GPT disk GUID) and its selector (guard.go). Preparing it: a disk with
// more than one data partition, or a partition of a type the plugin does
// not create, is never touched; a volume with a file system is never
// formatted, and a partition without one only when the partitioning note
// names this disk by its identity. Journal records of earlier releases'
// preset selectors are read as today's (record.go, upgradeSelector).
package disk
