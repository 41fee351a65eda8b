// Package winacl is the pure security-descriptor logic of the node plugin:
// security identifiers (SIDs), access control entries (ACEs), access
// control lists (ACLs) and self-relative security descriptors in the binary
// form the Win32 security functions read and write, and their string forms.
//
// What belongs here: parsing and building those structures byte for byte
// (an ACE the plugin does not interpret is kept as it was read, so a DACL
// written back holds every existing entry unchanged and in its order), SID
// strings, the access masks and flags the plugin uses, and the SDDL-like
// rendering of entries for logs and diagnose. The layouts are those of the
// Windows SDK headers, documented at
// https://learn.microsoft.com/en-us/windows/win32/api/winnt/ns-winnt-sid,
// .../ns-winnt-acl, .../ns-winnt-ace_header,
// .../ns-winnt-access_allowed_ace and
// .../ns-winnt-security_descriptor_relative (and in [MS-DTYP] section 2.4).
//
// What does not: any system call, x/sys/windows, build tags, or policy
// (which entries to add and where is decided by the callers, pkg/winhost for
// a volume root and pkg/journal for the state directory). Everything here
// is a pure function of its arguments, tested and fuzzed on Linux.
package winacl
