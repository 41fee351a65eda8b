package iscsi

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// CredentialNotePrefix starts the key of the journal note the backend
// keeps for a target whose sessions it logs in to, from just before its
// first login until it logs out of the last session:
// "iscsi/session-credential/" and the target's IQN (lower case); the value the session CHAP credential
// the sessions were logged in with (backend.Credential, encoded: the CHAP
// user, "" without CHAP, and the MAC of the CHAP secret), never the
// secret. The Microsoft initiator shows a session's authentication type
// but not its user or secret, so the note is how a volume whose secret
// names another user or another secret is noticed, even after a restart.
// Sessions the note does not describe (logged in by an earlier version,
// or by someone else) have an unknown credential, never taken as
// different.
var CredentialNotePrefix = backend.NotePrefix(contract.KindISCSI, "session-credential")

func credentialNote(iqn string) string { return CredentialNotePrefix + normalizeIQN(iqn) }

// credentialOf is what the journal records of the volume's session
// credential: its CHAP user and the MAC of its CHAP secret, bound to the
// target and the user; none without session CHAP.
func (b *Backend) credentialOf(spec *contract.ISCSISpec) backend.Credential {
	if spec.SessionAuth == host.AuthNone {
		return backend.Credential{}
	}
	u := spec.SessionCHAP.User
	return backend.Credential{User: u, SecretMAC: spec.SessionCHAP.Secret.MAC(b.opts.CredentialKey, "iscsi", normalizeIQN(spec.IQN), u)}
}

// loggedInAs returns the credential the target's sessions were logged in
// with, when the journal knows it. A note that cannot be read counts as
// unknown.
func (b *Backend) loggedInAs(ctx context.Context, iqn string) (backend.Credential, bool) {
	v, ok, err := b.store.Note(ctx, credentialNote(iqn))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the note of a target's session credential", "iqn", iqn)
		return backend.Credential{}, false
	}
	if !ok {
		return backend.Credential{}, false
	}
	return backend.DecodeCredential(v), true
}

// recordLogin records the credential the target's sessions are about to be
// logged in with, before the first login, so that a crash right after it
// cannot leave sessions of unknown credentials.
func (b *Backend) recordLogin(ctx context.Context, spec *contract.ISCSISpec) error {
	if err := b.store.PutNote(ctx, credentialNote(spec.IQN), b.credentialOf(spec).Encode()); err != nil {
		return fmt.Errorf("record the session credential of target %s: %w", spec.IQN, err)
	}
	return nil
}

// forgetLogin drops the note of a target the node logged out of.
func (b *Backend) forgetLogin(ctx context.Context, iqn string) {
	if err := b.store.DeleteNote(ctx, credentialNote(iqn)); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot drop the note of a target's session credential", "iqn", iqn)
	}
}

// chapUser names a CHAP user in messages.
func chapUser(u string) string {
	if u == "" {
		return "(none: logged in without CHAP)"
	}
	return u
}

// checkLogin decides, as a transition of a target that has sessions,
// whether the volume may use them: sessions logged in with another CHAP
// user are refused while other volumes use the target (the volume would
// reach its LUN with another volume's credentials); with none, they are
// logged out so that the volume logs in with its own. Sessions logged in
// with the same user and another secret (a rotation, or a wrong secret)
// are kept while other volumes use them, or the volume is staged already,
// since the node cannot check the secret without a login of its own
// (docs/parameters.md); the volume's entry then records the drift.
// Otherwise they are logged out and the volume logs in again, which checks
// the secret. It reports whether it logged out.
func (b *Backend) checkLogin(ctx context.Context, t *shared.Transition[loggedIn], spec *contract.ISCSISpec, restaging bool) (bool, error) {
	made, known := b.loggedInAs(ctx, spec.IQN)
	if !known {
		return false, nil
	}
	match := made.Compare(b.credentialOf(spec), backend.CHAPNames)
	if match == backend.CredentialSame {
		return false, nil
	}
	log := klog.FromContext(ctx)
	other, err := b.otherUser(ctx, t, spec.IQN)
	if err != nil {
		return false, err
	}
	switch {
	case match == backend.CredentialOtherUser && other != "":
		return false, fmt.Errorf("target %s is logged in as CHAP user %s for other staged volumes (such as %q), and this volume's "+
			"node-stage secret names CHAP user %s: a volume reaches a target only through sessions logged in with its own "+
			"credentials, or it would use another volume's; give this volume the Secret of CHAP user %s, or unstage the volumes "+
			"of that user on this node first (csi-windows-node diagnose lists them): %w",
			spec.IQN, chapUser(made.User), other, chapUser(b.credentialOf(spec).User), chapUser(made.User), host.ErrConflict)
	case match == backend.CredentialDrift && (other != "" || restaging):
		volumes := []string{other}
		if other == "" {
			volumes = nil
		}
		log.V(2).Info("Keeping the target's sessions although they were logged in with another CHAP secret of the same user "+
			"than this volume's secret holds: other staged volumes, or this one, use them, and the node cannot check the new secret "+
			"without disturbing them; recorded as drift (csi-windows-node diagnose, csi_windows_node_credential_drift). Finish the "+
			"rotation on every volume of the target, or fix this volume's secret", "user", made.User, "volumes", volumes)
		return false, nil
	}
	why := "another CHAP user"
	if match == backend.CredentialDrift {
		why = "another CHAP secret"
	}
	log.V(2).Info("Logging out of the target's sessions, which were logged in with "+why+" and no other staged volume uses, "+
		"to log in with this volume's credentials", "user", made.User)
	if _, err := b.logout(ctx, spec.IQN, nil); err != nil {
		return false, err
	}
	b.forgetLogin(ctx, spec.IQN)
	return true, nil
}

// CredentialCounts counts the staged volumes of the journal whose session
// credential differs from the one their target's sessions were logged in
// with, as the journal records both: drift (the same CHAP user, another
// secret) and other (another user: staged before the plugin refused it).
// Volumes of targets the journal records no login for are not counted.
func CredentialCounts(ctx context.Context, store backend.Store) (drift, other int, err error) {
	return backend.CountCredentials(ctx, store, string(contract.KindISCSI), backend.CHAPNames, func(ctx context.Context, e journal.Entry) (backend.Credential, backend.Credential, bool, error) {
		rec, ok := recordOf(e)
		if !ok {
			return backend.Credential{}, backend.Credential{}, false, nil
		}
		v, ok, err := store.Note(ctx, credentialNote(rec.IQN))
		if err != nil || !ok {
			return backend.Credential{}, backend.Credential{}, false, err
		}
		return backend.DecodeCredential(v), rec.Credential(), true, nil
	})
}

// KeyedRecords counts what the journal records of CHAP secrets as MACs
// under the node's credential key: the credential notes of targets' sessions, the
// initiator's mutual-CHAP secret note and the entries of volumes. Under a
// new key they no longer compare with what is recorded under it.
func KeyedRecords(ctx context.Context, store backend.Store) (int, error) {
	n, err := backend.CountKeyed(ctx, store, string(contract.KindISCSI), CredentialNotePrefix,
		func(note string) string { return backend.DecodeCredential(note).SecretMAC },
		func(e journal.Entry) string { rec, _ := recordOf(e); return rec.Credential().SecretMAC })
	if err != nil {
		return 0, err
	}
	v, ok, err := store.Note(ctx, secretNoteKey)
	if err != nil {
		return 0, err
	}
	var rec secretRecord
	if ok && json.Unmarshal([]byte(v), &rec) == nil && rec.MAC != "" {
		n++
	}
	return n, nil
}
