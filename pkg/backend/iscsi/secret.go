package iscsi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// secretNoteKey is the note holding the record of the initiator secret
// (secretRecord as JSON): "iscsi/initiator/chap-secret".
var secretNoteKey = backend.NotePrefix(contract.KindISCSI, "initiator") + "chap-secret"

// RenamedNotes are the spellings of the backend's note keys earlier
// versions wrote (backend.NoteRename): "iscsi/initiator-chap-secret" until
// the note keys were spelled one way.
var RenamedNotes = []backend.NoteRename{{From: "iscsi/initiator-chap-secret", To: secretNoteKey}}

// secretRecord says which mutual-CHAP initiator secret the backend last
// set on the node, as a MAC under the node's credential key (never the
// secret), and which targets were logged in with it.
type secretRecord struct {
	// MAC is the secret's MAC under the node's credential key
	// (host.Secret.MAC, label initiatorSecretLabel), as the backend
	// records every secret: a note copied out of the state directory
	// cannot be checked against guessed secrets without the key.
	MAC string `json:"mac,omitempty"`
	// Salt and SHA256 are the form earlier versions wrote, a salted
	// SHA-256 (hex; host.Secret.Digest), which anyone holding the note
	// can check guesses against. It is still read, and replaced by MAC
	// at the next login with the same secret.
	Salt    string   `json:"salt,omitempty"`
	SHA256  string   `json:"sha256,omitempty"`
	Targets []string `json:"targets"`
}

// initiatorSecretLabel binds the initiator secret's MAC to its use.
const initiatorSecretLabel = "iscsi-initiator-secret"

// holds reports whether the record is of secret. Without a credential
// key (a backend without one) only the earlier form can be compared.
func (b *Backend) holds(rec *secretRecord, secret host.Secret) bool {
	if rec.MAC != "" {
		return backend.SameMAC(rec.MAC, secret.MAC(b.opts.CredentialKey, initiatorSecretLabel))
	}
	salt, _ := hex.DecodeString(rec.Salt) // a corrupt salt only makes the digest differ
	return backend.SameMAC(rec.SHA256, secret.Digest(salt))
}

// record makes rec a record of secret: its MAC under the node's credential
// key, or, for a backend without a key, a salted SHA-256.
func (b *Backend) record(rec *secretRecord, secret host.Secret) error {
	if mac := secret.MAC(b.opts.CredentialKey, initiatorSecretLabel); mac != "" {
		rec.MAC, rec.Salt, rec.SHA256 = mac, "", ""
		return nil
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return fmt.Errorf("salt the initiator secret record: %w", err)
	}
	rec.MAC, rec.Salt, rec.SHA256 = "", hex.EncodeToString(salt), secret.Digest(salt)
	return nil
}

// setInitiatorSecret sets the node-wide mutual-CHAP secret for a login to
// iqn. It refuses with host.ErrConflict when a different secret was set for
// another target that still has a session: setting it would make that
// target's next login (a reconnect, a reboot) fail. The record is written
// before the secret is set, so a crash in between leaves the record ahead
// of the host, never behind. The caller holds the initiator lock.
func (b *Backend) setInitiatorSecret(ctx context.Context, iqn string, secret host.Secret) error {
	rec, err := b.secretRecord(ctx)
	if err != nil {
		return err
	}
	// Only the targets the record names can be logged in with another
	// secret: their sessions are asked for, one target at a time, rather
	// than every session of the node (this runs under the target's and
	// its portals' locks, at every login with mutual CHAP).
	var others []string
	if rec != nil {
		for _, t := range rec.Targets {
			if sameIQN(t, iqn) {
				continue
			}
			sessions, err := b.h.ISCSI.Sessions(ctx, t)
			if err != nil {
				return err
			}
			if len(sessions) > 0 {
				others = append(others, t)
			}
		}
	}
	if rec != nil && !b.holds(rec, secret) {
		if len(others) > 0 {
			return fmt.Errorf("target %s needs a different mutual-CHAP initiator secret (node.session.auth.password_in) "+
				"than target %s, which is logged in on this node; the Microsoft iSCSI initiator has one initiator secret "+
				"per node, so both cannot be used at once: %w", iqn, others[0], host.ErrConflict)
		}
		rec = nil
	}
	if rec == nil || rec.MAC == "" {
		// A new record, or one of the earlier form: recorded as a MAC.
		if rec == nil {
			rec = &secretRecord{}
		}
		if err := b.record(rec, secret); err != nil {
			return err
		}
	}
	kept := append([]string{normalizeIQN(iqn)}, others...)
	slices.Sort(kept)
	rec.Targets = kept
	if err := b.putSecretRecord(ctx, rec); err != nil {
		return err
	}
	klog.FromContext(ctx).V(4).Info("Setting the initiator's mutual-CHAP secret")
	if err := b.h.ISCSI.SetInitiatorSecret(ctx, secret); err != nil {
		return fmt.Errorf("mutual CHAP with target %s: %w", iqn, err)
	}
	return nil
}

// forgetMutualTarget drops iqn from the initiator secret record once the
// node has logged out of it.
func (b *Backend) forgetMutualTarget(ctx context.Context, iqn string) error {
	unlock, err := b.locks.Lock(ctx, initiatorLock)
	if err != nil {
		return fmt.Errorf("wait for the initiator CHAP secret record: %w", err)
	}
	defer unlock()
	rec, err := b.secretRecord(ctx)
	if err != nil || rec == nil {
		return err
	}
	n := len(rec.Targets)
	rec.Targets = slices.DeleteFunc(rec.Targets, func(t string) bool { return sameIQN(t, iqn) })
	switch {
	case len(rec.Targets) == n:
		return nil
	case len(rec.Targets) == 0:
		if err := b.store.DeleteNote(ctx, secretNoteKey); err != nil {
			return fmt.Errorf("drop the initiator secret record: %w", err)
		}
		return nil
	}
	return b.putSecretRecord(ctx, rec)
}

func (b *Backend) secretRecord(ctx context.Context) (*secretRecord, error) {
	v, ok, err := b.store.Note(ctx, secretNoteKey)
	if err != nil {
		return nil, fmt.Errorf("read the initiator secret record: %w", err)
	}
	if !ok {
		return nil, nil
	}
	var rec secretRecord
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return nil, fmt.Errorf("read the initiator secret record (journal note %q): %w", secretNoteKey, err)
	}
	return &rec, nil
}

func (b *Backend) putSecretRecord(ctx context.Context, rec *secretRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the initiator secret record: %w", err)
	}
	if err := b.store.PutNote(ctx, secretNoteKey, string(v)); err != nil {
		return fmt.Errorf("record the initiator secret: %w", err)
	}
	return nil
}
