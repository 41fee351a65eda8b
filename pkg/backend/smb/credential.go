package smb

import (
	"context"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// CredentialCounts counts the staged volumes of the journal whose
// credential differs from the one their share's mapping was made with, as
// the journal records both: drift (the same user, another password) and
// other (another user: staged before the plugin refused it). Volumes of
// shares the journal records no mapping for are not counted.
func CredentialCounts(ctx context.Context, store backend.Store) (drift, other int, err error) {
	return backend.CountCredentials(ctx, store, string(contract.KindSMB), backend.AccountNames, func(ctx context.Context, e journal.Entry) (backend.Credential, backend.Credential, bool, error) {
		rec, ok := recordOf(e)
		if !ok {
			return backend.Credential{}, backend.Credential{}, false, nil
		}
		user, ok, err := store.Note(ctx, notePrefix+rec.Share)
		if err != nil || !ok {
			return backend.Credential{}, backend.Credential{}, false, err
		}
		mac, _, err := store.Note(ctx, secretNotePrefix+rec.Share)
		return backend.Credential{User: user, SecretMAC: mac}, rec.Credential(), true, err
	})
}
