package backend

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Credential is what the journal records of a credential: the one a
// shared resource was made with (an SMB global mapping, a target's iSCSI
// sessions; in the resource's note) and the one a volume was staged with
// (in its entry). It holds the user name and the MAC of the secret under
// the node's credential key (journal.Journal.CredentialKey,
// host.Secret.MAC), never the secret: comparing two records tells whether
// their secrets are the same and nothing else.
type Credential struct {
	// User is the user name ("" for none: an SMB mapping without
	// credentials, an iSCSI login without CHAP).
	User string `json:"user"`
	// SecretMAC is the MAC of the password or CHAP secret; "" when there
	// is none, or when the record is older than the MAC.
	SecretMAC string `json:"secretMAC,omitempty"`
}

// CredentialMatch is how a volume's credential compares with the one of
// the shared resource it uses.
type CredentialMatch int

// How two credentials compare.
const (
	// CredentialSame: the same user and, as far as the records tell, the
	// same secret.
	CredentialSame CredentialMatch = iota
	// CredentialDrift: the same user with another secret: a password or
	// CHAP secret rotation not finished on every volume, or a wrong
	// secret. The resource keeps working with the secret it was made
	// with; which of the two the server takes now is not known.
	CredentialDrift
	// CredentialOtherUser: another user. A volume may not reach a shared
	// resource made with another user's credentials.
	CredentialOtherUser
)

func (m CredentialMatch) String() string {
	switch m {
	case CredentialSame:
		return "same"
	case CredentialDrift:
		return "different"
	case CredentialOtherUser:
		return "other user"
	}
	return "unknown"
}

// UserNames is how a backend's user names compare: as the server that
// checks them compares them, so that two names the server takes for two
// users are never taken for one (a volume would ride the other user's
// mapping or sessions as drift instead of being refused).
type UserNames int

const (
	// AccountNames compare case-insensitively, as Windows compares
	// account names (SMB).
	AccountNames UserNames = iota
	// CHAPNames compare byte for byte: a CHAP name is a string of octets
	// (RFC 1994 section 4.1, "Name"; RFC 7143 section 12.1.3, CHAP_N),
	// and targets compare it as such (Linux LIO: strncmp of CHAP_N with
	// the ACL's userid, torvalds/linux drivers/target/iscsi/iscsi_target_auth.c
	// chap_server_compute_hash, "CHAP_N values do not match!").
	CHAPNames
)

// Compare returns how the credential of a volume (v) compares with the one
// of the resource (c), their user names compared as names says. A record
// without a MAC (older than the MAC, or no secret) compares as the same
// secret: nothing says otherwise. The MACs compare in constant time.
func (c Credential) Compare(v Credential, names UserNames) CredentialMatch {
	sameUser := c.User == v.User
	if names == AccountNames {
		sameUser = strings.EqualFold(c.User, v.User)
	}
	switch {
	case !sameUser:
		return CredentialOtherUser
	case c.SecretMAC != "" && v.SecretMAC != "" && !SameMAC(c.SecretMAC, v.SecretMAC):
		return CredentialDrift
	}
	return CredentialSame
}

// SameMAC compares two recorded MACs in constant time (hmac.Equal's
// advice for MACs), so that how long a comparison takes says nothing of
// where they differ.
func SameMAC(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Encode returns the credential in the form a note keeps it: JSON.
func (c Credential) Encode() string {
	b, _ := json.Marshal(c) // two strings: cannot fail
	return string(b)
}

// DecodeCredential reads a note written by Encode. A note in another form
// is the bare user name earlier versions recorded (an SMB mapping's note):
// the user, without a MAC.
func DecodeCredential(note string) Credential {
	var c Credential
	if strings.HasPrefix(note, "{") && json.Unmarshal([]byte(note), &c) == nil {
		return c // fields a later version adds are skipped
	}
	return Credential{User: note}
}

// CountCredentials counts the staged entries of a backend ("smb",
// "iscsi") whose credential differs from the one of the shared resource
// they use, user names compared as names says: drift (the same user,
// another secret) and other (another user). credentials reads an entry's two credentials; false leaves the
// entry out (no record of the resource's credential, or of the volume's).
func CountCredentials(ctx context.Context, store Store, backend string, names UserNames,
	credentials func(context.Context, journal.Entry) (resource, volume Credential, ok bool, err error)) (drift, other int, err error) {
	entries, err := store.ByBackend(ctx, backend)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if !e.Staged {
			continue
		}
		res, vol, ok, err := credentials(ctx, e)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			continue
		}
		switch res.Compare(vol, names) {
		case CredentialDrift:
			drift++
		case CredentialOtherUser:
			other++
		}
	}
	return drift, other, nil
}

// CountKeyed counts what the journal records of a backend's secrets as
// MACs under the node's credential key (CredentialKey): the notes under
// notePrefix whose noteMAC is not empty, and the entries of backend
// whose entryMAC is not empty (the MAC their record holds; "" for none).
func CountKeyed(ctx context.Context, store Store, backend, notePrefix string,
	noteMAC func(note string) string, entryMAC func(journal.Entry) string) (int, error) {
	notes, err := store.Notes(ctx, notePrefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range notes {
		if noteMAC(v) != "" {
			n++
		}
	}
	entries, err := store.ByBackend(ctx, backend)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if entryMAC(e) != "" {
			n++
		}
	}
	return n, nil
}
