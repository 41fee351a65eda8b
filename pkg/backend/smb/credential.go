package smb

import (
	"context"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
)

// CredentialCounts counts the staged volumes of the journal whose
// credential differs from the one their share's mapping was made with, as
// the journal records both: drift (the same user, another password) and
// other (another user: staged before the plugin refused it). Volumes of
// shares the journal records no mapping for are not counted.
func CredentialCounts(ctx context.Context, store backend.Store) (drift, other int, err error) {
	entries, err := store.ByBackend(ctx, string(contract.KindSMB))
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		rec, ok := recordOf(e)
		if !ok || !e.Staged {
			continue
		}
		user, ok, err := store.Note(ctx, notePrefix+rec.Share)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			continue
		}
		mac, _, err := store.Note(ctx, secretNotePrefix+rec.Share)
		if err != nil {
			return 0, 0, err
		}
		switch (backend.Credential{User: user, SecretMAC: mac}).Compare(rec.Credential()) {
		case backend.CredentialDrift:
			drift++
		case backend.CredentialOtherUser:
			other++
		}
	}
	return drift, other, nil
}
