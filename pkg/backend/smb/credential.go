package smb

import (
	"context"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// CredentialCounts counts the staged volumes of the journal whose
// credential differs from the one their share's mapping was made with, as
// the journal records both: drift (the same user, another password) and
// other (another user: staged before the plugin refused it). A volume
// whose share's mapping was made with its own password, while another
// mapping of the server was made by its user with another one, is drift
// too (ServerDrift). Volumes of shares the journal records no mapping for
// are not counted.
func CredentialCounts(ctx context.Context, store backend.Store) (drift, other int, err error) {
	var users, macs map[string]string // read once, when needed
	var used map[string]bool
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
		if err != nil {
			return backend.Credential{}, backend.Credential{}, false, err
		}
		made := backend.Credential{User: user, SecretMAC: mac}
		if made.Compare(rec.Credential(), backend.AccountNames) == backend.CredentialSame {
			// Another mapping of the server by the same user, with
			// another password, is drift too (ServerDrift).
			if users == nil {
				if users, macs, used, err = mappingNotes(ctx, store, ""); err != nil {
					return backend.Credential{}, backend.Credential{}, false, err
				}
			}
			if other := ServerDrift(rec.Share, rec.User, rec.SecretMAC, users, macs, used); other != "" {
				made.SecretMAC = macs[other]
			}
		}
		return made, rec.Credential(), true, nil
	})
}

// mappingNotes returns the notes of the global mappings' users and
// passwords, by share root, of the shares whose roots start with prefix
// ("" for all, serverPrefix for one server's), and the shares staged
// volumes use.
func mappingNotes(ctx context.Context, store backend.Store, prefix string) (users, macs map[string]string, used map[string]bool, err error) {
	u, err := store.Notes(ctx, notePrefix+prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := store.Notes(ctx, secretNotePrefix+prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	entries, err := store.ByBackend(ctx, string(contract.KindSMB))
	if err != nil {
		return nil, nil, nil, err
	}
	return trimKeys(u, notePrefix), trimKeys(m, secretNotePrefix), UsedShares(entries), nil
}

// ServerDrift returns a share root of the same server as share whose
// global mapping was made by user (compared as Windows compares account
// names) with another password than mac, or "" when there is none (or
// mac is ""). users and macs are the notes of the mappings' users and
// passwords by share root; only the shares in used (UsedShares) count: a
// note can outlive its mapping (forgetMaker), and a share no staged
// volume uses shares no session with this one that matters.
//
// The records of one share cannot see it: Windows keeps one set of
// credentials per server name and logon session ("Multiple connections to
// a server or shared resource by the same user, using more than one user
// name, are not allowed", ERROR_SESSION_CREDENTIAL_CONFLICT 1219,
// https://learn.microsoft.com/windows/win32/debug/system-error-codes--1000-1299-),
// so a mapping of a second share of the server under the same user name
// may be served by the session the first mapping authenticated, with the
// first password, whatever password the second was given (not verified
// on Windows; docs/windows.md#credential-checks). The same user with
// two passwords on one server is therefore drift, as it is on one share.
// Share roots are compared by the server name as given: a server named
// two ways (an IP address, a NetBIOS name, an FQDN) is two servers here,
// as it is to the rule of error 1219, by the common account of that
// error's workaround (not verified on Windows), and each name's session
// authenticates for itself.
func ServerDrift(share, user, mac string, users, macs map[string]string, used map[string]bool) string {
	if mac == "" {
		return ""
	}
	server := serverPrefix(share)
	var out string
	for root, u := range users {
		if root == share || !used[root] || !strings.HasPrefix(root, server) || !strings.EqualFold(u, user) {
			continue
		}
		if m := macs[root]; m != "" && !backend.SameMAC(m, mac) && (out == "" || root < out) {
			out = root
		}
	}
	return out
}

// UsedShares returns the share roots of the staged SMB volumes among
// entries.
func UsedShares(entries []journal.Entry) map[string]bool {
	out := map[string]bool{}
	for _, e := range entries {
		if rec, ok := recordOf(e); ok && e.Staged {
			out[rec.Share] = true
		}
	}
	return out
}

// serverPrefix returns the \\server\ that starts a share root
// \\server\share.
func serverPrefix(root string) string {
	return root[:strings.LastIndex(root, `\`)+1]
}

// serverDrift is ServerDrift for a volume of spec with credential cred,
// from the journal's notes: "" when the notes cannot be read (logged).
func (b *Backend) serverDrift(ctx context.Context, spec *contract.SMBSpec, cred backend.Credential) string {
	users, macs, used, err := mappingNotes(ctx, b.store, serverPrefix(spec.MappingPath()))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the notes of the server's global mappings", "remotePath", spec.MappingPath())
		return ""
	}
	return ServerDrift(spec.MappingPath(), cred.User, cred.SecretMAC, users, macs, used)
}

// trimKeys returns notes keyed by what follows prefix.
func trimKeys(notes map[string]string, prefix string) map[string]string {
	out := make(map[string]string, len(notes))
	for k, v := range notes {
		out[strings.TrimPrefix(k, prefix)] = v
	}
	return out
}

// KeyedRecords counts what the journal records of SMB passwords as MACs
// under the node's credential key: the secret notes of global mappings
// and the entries of volumes. Under a new key they no longer compare
// with what is recorded under it.
func KeyedRecords(ctx context.Context, store backend.Store) (int, error) {
	return backend.CountKeyed(ctx, store, string(contract.KindSMB), secretNotePrefix,
		func(mac string) string { return mac }, entryMAC)
}

// entryMAC is the MAC of the password an entry's record holds.
func entryMAC(e journal.Entry) string {
	rec, _ := recordOf(e)
	return rec.Credential().SecretMAC
}
