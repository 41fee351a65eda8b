package inventory

import (
	"context"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
)

// The reasons of a volume whose credential differs from the one of the
// shared resource it uses.
const (
	// ReasonCredentialMismatch: another user's mapping or sessions.
	ReasonCredentialMismatch = "CredentialMismatch"
	// ReasonCredentialDrift: the same user with another secret.
	ReasonCredentialDrift = "CredentialDrift"
)

// secretNotes returns the MACs of the SMB mappings' passwords, by share
// root (read once). They are compared, never shown.
func (t *taker) secretNotes(ctx context.Context) map[string]string {
	if t.macs == nil {
		t.macs = t.notesBy(ctx, smb.MappingSecretNotePrefix, "notes of the SMB mappings' passwords")
	}
	return t.macs
}

// sessionCredentials returns the credentials the plugin logged in to
// targets with, by lower-case IQN (read once).
func (t *taker) sessionCredentials(ctx context.Context) map[string]backend.Credential {
	if t.logins != nil {
		return t.logins
	}
	t.logins = map[string]backend.Credential{}
	for iqn, v := range t.notesBy(ctx, iscsi.CredentialNotePrefix, "notes of the iSCSI targets' session credentials") {
		t.logins[strings.ToLower(iqn)] = backend.DecodeCredential(v)
	}
	return t.logins
}

// notesBy returns the notes under prefix by the rest of their keys.
func (t *taker) notesBy(ctx context.Context, prefix, what string) map[string]string {
	out := map[string]string{}
	notes, err := t.in.Journal.Notes(ctx, prefix)
	if err != nil {
		t.incomplete(what, err)
		return out
	}
	for k, v := range notes {
		out[strings.TrimPrefix(k, prefix)] = v
	}
	return out
}

// credential compares a volume's credential (mine) with the one of the
// shared resource it uses (theirs; what names the resource: "the share's
// global mapping", "the target's sessions"; user names compared as names
// says) and records on v the problem of a difference: a volume on another
// user's credentials, or a secret that drifted. It returns "same" or "different" for the secret when both
// are known, else "".
func (v *Volume) credential(what, userKind string, names backend.UserNames, theirs, mine backend.Credential) string {
	var m string
	if theirs.SecretMAC != "" && mine.SecretMAC != "" {
		m = "same"
		if !backend.SameMAC(theirs.SecretMAC, mine.SecretMAC) {
			m = "different"
		}
	}
	switch theirs.Compare(mine, names) {
	case backend.CredentialOtherUser:
		v.problem(ReasonCredentialMismatch, what+" was made with the credentials of "+userKind+" "+userOrNone(theirs.User)+", and this volume's "+
			"node-stage secret names "+userKind+" "+userOrNone(mine.User)+": the volume reaches its storage with another volume's credentials. "+
			"A stage refuses this; the volume was staged by an earlier version, or its Secret changed since. Unstage it and stage it "+
			"again once the others are gone, or give it the Secret of "+userKind+" "+userOrNone(theirs.User))
	case backend.CredentialDrift:
		v.problem(ReasonCredentialDrift, "this volume's node-stage secret holds another secret of "+userKind+" "+userOrNone(mine.User)+" than "+
			what+" was made with: a rotation not finished on every volume that shares it, or a wrong secret. The node cannot check "+
			"it without disturbing the volumes that use it; it goes on with the one it was made with (docs/parameters.md)")
	default:
		return m
	}
	if v.State == StateHealthy {
		v.State = StateDegraded
	}
	return m
}

func userOrNone(u string) string {
	if u == "" {
		return "(none)"
	}
	return u
}
