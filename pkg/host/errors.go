package host

import (
	"errors"
	"fmt"
)

// Sentinel errors. Implementations wrap them with %w and the identity of the
// object involved; the node service maps them onto gRPC codes in one place.
// Comparisons use errors.Is, never error text.
var (
	// ErrNotFound: the disk, partition, volume, path, mapping, share,
	// portal, target or session does not exist.
	ErrNotFound = errors.New("not found")

	// ErrAlreadyExists: the object exists in a state incompatible with the
	// request (for example another volume is mounted on the directory).
	ErrAlreadyExists = errors.New("already exists")

	// ErrDirNotEmpty: a mount point or link cannot replace a directory
	// that has entries (ERROR_DIR_NOT_EMPTY).
	ErrDirNotEmpty = errors.New("directory not empty")

	// ErrInUse: the object is busy and refuses the operation (a target
	// with open handles refusing disconnect, a volume locked by another
	// process).
	ErrInUse = errors.New("in use")

	// ErrConflict: the host is in a state the plugin must not resolve on
	// its own (two disks match one selector, a disk holds unexpected data,
	// a cloned disk's signature collides with an online disk).
	ErrConflict = errors.New("conflict")

	// ErrCredentialConflict: Windows refuses a second connection to the
	// same server under a different user name (ERROR_SESSION_CREDENTIAL_CONFLICT, 1219).
	ErrCredentialConflict = errors.New("credential conflict")

	// ErrLogonFailure: the server rejected the credentials
	// (ERROR_LOGON_FAILURE 1326, iSCSI CHAP authentication failure).
	ErrLogonFailure = errors.New("logon failure")

	// ErrAccessDenied: the credentials were accepted but the operation is
	// not permitted (ERROR_ACCESS_DENIED 5).
	ErrAccessDenied = errors.New("access denied")

	// ErrGuestLogonBlocked: the node's SMB client refused to connect as
	// guest, which its policy forbids (ERROR_SMB_GUEST_LOGON_BLOCKED 1272;
	// the default since Windows Server 2019).
	ErrGuestLogonBlocked = errors.New("guest logon blocked by the node's policy")

	// ErrUnreachable: the server or portal cannot be reached
	// (ERROR_BAD_NETPATH 53, connection timeouts).
	ErrUnreachable = errors.New("unreachable")

	// ErrNotReady: the device is not ready yet (ERROR_NOT_READY 21): a disk
	// still offline, a grown disk whose new size the host has not seen.
	// Retrying later may succeed.
	ErrNotReady = errors.New("not ready")

	// ErrReadOnly: the disk or volume is write-protected.
	ErrReadOnly = errors.New("read-only")

	// ErrOutOfRange: a requested size lies outside what the host supports.
	ErrOutOfRange = errors.New("out of range")

	// ErrInvalid: the host rejected a parameter as invalid.
	ErrInvalid = errors.New("invalid parameter")

	// ErrBusy: the host executor cannot accept more work right now
	// (bounded queue full); retrying later may succeed.
	ErrBusy = errors.New("host busy")

	// ErrSchema: the host lacks a class, method or parameter the plugin
	// asked for (on Windows: a WMI schema lookup answered
	// WBEM_E_NOT_FOUND, or WMI answered WBEM_E_INVALID_CLASS). It means a
	// Windows version the plugin does not support, or a plugin bug; it
	// never means that the object asked for is gone, so callers must not
	// read it as ErrNotFound.
	ErrSchema = errors.New("the host lacks a class, method or parameter the plugin uses")

	// ErrSessionUnknown: an iSCSI login succeeded but the host did not
	// say which session it made. It wraps ErrNotReady: the caller finds
	// the session by listing, or tries again later; a session is never
	// returned without its identifier, which logging out needs.
	ErrSessionUnknown = fmt.Errorf("logged in, but the host did not say which session the login made: %w", ErrNotReady)

	// ErrNotImplemented: this host does not implement the operation. On
	// Windows it means the executor for that area has not been built; it
	// is never returned as a stand-in for success.
	ErrNotImplemented = errors.New("not implemented by this host")
)
