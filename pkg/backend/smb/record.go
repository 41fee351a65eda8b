package smb

import (
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Record is what the journal keeps about an SMB volume: the share whose
// global mapping it uses (the resource the volumes of a share have in
// common, whose last unstage removes the mapping) and the volume's own
// directory on it.
type Record struct {
	// Share is the lower-cased share root \\server\share, the path of the
	// global mapping (contract.SMBSpec.MappingPath).
	Share string
	// UNC is the volume's directory, \\server\share[\dir], as given.
	UNC string
	// User is the user name of the node-stage secret the volume was
	// staged with, "" for a mapping without credentials; never a password.
	User string
	// SecretMAC is the MAC of the password the volume was staged with
	// (backend.Credential), "" when none is recorded; never the password.
	SecretMAC string
}

var _ backend.Record = Record{}

// RecordOf returns the record of an SMB volume.
func RecordOf(spec *contract.SMBSpec) Record {
	return Record{Share: spec.MappingPath(), UNC: spec.UNC(), User: spec.Credential.User}
}

// Resource implements backend.Record: "smb:" and the share root.
func (r Record) Resource() string { return resourceKey(r.Share) }

// Storage implements backend.Record: the volume's directory, lower-cased
// (SMB paths compare case-insensitively).
func (r Record) Storage() string { return strings.ToLower(r.UNC) }

// Attrs implements backend.Record. The share is the entry's ResourceKey;
// the attributes hold the directory and the user name.
func (r Record) Attrs() map[string]string {
	a := map[string]string{attrUNC: r.UNC}
	if r.User != "" {
		a[attrUser] = r.User
	}
	if r.SecretMAC != "" {
		a[attrSecretMAC] = r.SecretMAC
	}
	return a
}

// Credential is the credential the record names.
func (r Record) Credential() backend.Credential {
	return backend.Credential{User: r.User, SecretMAC: r.SecretMAC}
}

// The Entry.Attrs keys of an SMB record.
const (
	attrUNC       = "unc"
	attrUser      = "user"
	attrSecretMAC = "secretMAC"
)

// resourceKeyPrefix starts the ResourceKey of the volumes of a share.
const resourceKeyPrefix = "smb:"

// resourceKey is the ResourceKey of the volumes of the share root.
func resourceKey(root string) string { return resourceKeyPrefix + root }

// DecodeRecord reads the record of an SMB volume's journal entry.
func DecodeRecord(e journal.Entry) (Record, error) {
	share, err := backend.RecordResource(e, string(contract.KindSMB), resourceKeyPrefix)
	if err != nil {
		return Record{}, err
	}
	return Record{Share: share, UNC: e.Attrs[attrUNC], User: e.Attrs[attrUser], SecretMAC: e.Attrs[attrSecretMAC]}, nil
}

// recordOf returns the SMB record of an entry, and false when the entry
// holds none (the journal did not know the volume at this path).
func recordOf(e journal.Entry) (Record, bool) {
	r, err := DecodeRecord(e)
	return r, err == nil
}

// Record implements the node's Backend: the record of an SMB volume.
func (b *Backend) Record(vol contract.Volume) (backend.Record, error) {
	if vol.SMB == nil {
		return nil, fmt.Errorf("volume has no smb spec: %w", host.ErrInvalid)
	}
	r := RecordOf(vol.SMB)
	r.SecretMAC = b.credentialOf(vol.SMB).SecretMAC
	return r, nil
}

// DecodeRecord implements the node's Backend.
func (b *Backend) DecodeRecord(e journal.Entry) (backend.Record, error) {
	return DecodeRecord(e)
}

// MappingNotePrefix starts the key of the journal note the backend keeps
// for every global mapping it makes, from just before the mapping is made
// until it is removed; the rest of the key is the share root and the value
// the user name (never a password). A mapping with such a note is the
// plugin's; tools that take stock of a node read them (pkg/inventory).
var MappingNotePrefix = notePrefix

// MappingSecretNotePrefix starts the key of the note of the MAC of the
// password a mapping was made with (the rest is the share root; none for a
// mapping without credentials, or made by an earlier version): compare it
// with Record.SecretMAC, never show it.
var MappingSecretNotePrefix = secretNotePrefix

// ShareRoot returns the lower-cased share root \\server\share of a UNC
// path or link target, in the form of Record.Share, or false when the path
// is not on a share.
func ShareRoot(p string) (string, bool) { return shareRoot(p) }
