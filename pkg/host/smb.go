package host

import "context"

// MappingStatus is MSFT_SmbGlobalMapping.Status.
type MappingStatus uint32

// Mapping states, with MSFT_SmbGlobalMapping's numeric values.
const (
	MappingOK           MappingStatus = 0
	MappingPaused       MappingStatus = 1
	MappingDisconnected MappingStatus = 2
	MappingNetworkError MappingStatus = 3
	MappingConnecting   MappingStatus = 4
	MappingReconnecting MappingStatus = 5
	MappingUnavailable  MappingStatus = 6
)

func (s MappingStatus) String() string {
	switch s {
	case MappingOK:
		return "OK"
	case MappingPaused:
		return "Paused"
	case MappingDisconnected:
		return "Disconnected"
	case MappingNetworkError:
		return "NetworkError"
	case MappingConnecting:
		return "Connecting"
	case MappingReconnecting:
		return "Reconnecting"
	case MappingUnavailable:
		return "Unavailable"
	}
	return "MappingStatus(" + itoa(uint64(s)) + ")"
}

// SMBMapping is one MSFT_SmbGlobalMapping.
type SMBMapping struct {
	RemotePath     string // \\server\share as stored
	LocalPath      string // drive letter or empty
	Status         MappingStatus
	RequirePrivacy bool
}

// Credential is what a global mapping is made with. User is in the form
// Windows expects (DOMAIN\user, user@domain or user); the contract builds
// it from the node-stage secret. An empty User means anonymous access.
type Credential struct {
	User     string
	Password Secret
}

// SMB is the SMB client's global mappings (MSFT_SmbGlobalMapping) plus the
// reachability check the plugin runs through them.
type SMB interface {
	// Mapping returns the global mapping of remotePath (compared
	// case-insensitively), or ErrNotFound.
	Mapping(ctx context.Context, remotePath string) (SMBMapping, error)
	// Mappings returns every global mapping of the node, whoever made it,
	// in no particular order.
	Mappings(ctx context.Context) ([]SMBMapping, error)

	// Map creates a global mapping of remotePath with the credential.
	// Errors: ErrLogonFailure (wrong user or password), ErrAccessDenied,
	// ErrUnreachable (server down or unknown), ErrNotFound (no such
	// share), ErrCredentialConflict (1219: the server is already
	// connected under another user name), ErrGuestLogonBlocked (1272: a
	// mapping without credentials would be a guest logon, which the
	// node's policy forbids), ErrAlreadyExists (mapped).
	Map(ctx context.Context, remotePath string, cred Credential, requirePrivacy bool) error

	// Unmap removes the global mapping of remotePath, forcing open handles
	// closed. ErrNotFound when there is none.
	Unmap(ctx context.Context, remotePath string) error

	// Check reads the attributes of a UNC path through the mappings
	// (GetFileAttributes): nil when reachable, else ErrNotFound,
	// ErrLogonFailure, ErrAccessDenied or ErrUnreachable.
	Check(ctx context.Context, uncPath string) error
}
