// Package winhost is the Windows host: it implements the pkg/host interfaces
// with WMI (Storage, SMB and iSCSI providers) and Win32 calls, expressed as
// requests to an Executor.
//
// Everything here is OS-neutral and unit-tested on Linux against a scripted
// executor whose replies follow documented Windows behaviour: which WQL is
// sent (with values escaped for WQL), which method is invoked with which
// parameters and types, how replies are parsed (including uint64 properties
// that arrive as strings through IDispatch, and non-zero return values),
// the order of steps, retries and idempotency.
//
// New assembles the host: Disks (disks.go: MSFT_Disk, MSFT_Partition,
// the page 83 IOCTL), Volumes (volumes.go: MSFT_Volume and the Win32 volume
// calls), Files (files.go: attributes, reparse points, directories, links),
// the SMB and iSCSI parts, and Security (security.go: a volume root's DACL
// through GetSecurityInfo and SetSecurityInfo on one handle, account
// names; the descriptors are parsed and built in pkg/winacl). The binary structures the executor hands back
// raw (STORAGE_DEVICE_ID_DESCRIPTOR, VOLUME_DISK_EXTENTS,
// REPARSE_DATA_BUFFER) are parsed here, bounds-checked and fuzzed.
// errors.go is the one place where a Windows code (a return value, an
// HRESULT, a Win32 code, an iSCSI status, WMI's extended error object) gets
// its host sentinel, and states the rule every message follows: the callee
// names the operation, the caller adds only what it alone knows.
//
// The executor itself — the only code that touches COM or Win32 — lives in
// pkg/winhost/wmiexec (the one package that imports
// github.com/microsoft/wmi). It does one thing per call and nothing else.
package winhost
