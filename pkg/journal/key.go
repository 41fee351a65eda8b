package journal

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wincsi/csi-windows-node/internal/durable"
)

// keyFile holds the node's credential key, next to the entries and notes
// but in none of them.
const keyFile = "credential.key"

// keyLen is the length of the credential key in bytes: as long as
// HMAC-SHA256's output.
const keyLen = 32

// CredentialKey returns the node's credential key: 32 random bytes kept in
// <dir>/credential.key (hex, readable by the plugin's account only),
// created on the first call of a journal opened for writing. A read-only
// journal returns nil when there is none.
//
// Backends record the secret a shared mapping or session was made with as
// a MAC under this key (host.Secret.MAC), never the secret: one key per
// node, rather than a salt per record, so that the MAC a volume's entry
// records and the one its share's note records compare directly, and kept
// in a file of its own, so that a journal entry or note copied into a bug
// report or printed by a tool cannot be checked against guessed passwords
// without it. Losing the key (the state directory is lost with it) makes
// every recorded MAC compare as different, which is reported, never
// refused.
func (j *Journal) CredentialKey() ([]byte, error) {
	j.keyMu.Lock()
	defer j.keyMu.Unlock()
	if j.key != nil {
		return j.key, nil
	}
	p := filepath.Join(j.dir, keyFile)
	b, refused, err := j.readFile(p)
	if err == nil && refused != nil {
		// As readFile refuses an entry: a key someone else planted would
		// let them check recorded MACs against guessed passwords.
		owner := refused.Owner
		if owner == "" {
			owner = "no one"
		}
		return nil, fmt.Errorf("credential key %s is not used: %s (owner %s); remove it to make a new one",
			p, refused.Reason, owner)
	}
	switch {
	case err == nil:
		k, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) != keyLen {
			return nil, fmt.Errorf("credential key %s is damaged (want %d hex-encoded bytes); remove it to make a new one, "+
				"which makes every recorded secret compare as different until the volumes are staged again", p, keyLen)
		}
		j.key = k
		return k, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("read credential key %s: %w", p, err)
	case j.readOnly:
		return nil, nil
	}
	k := make([]byte, keyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("make credential key: %w", err)
	}
	if err := durable.WriteFile(j.dir, keyFile, []byte(hex.EncodeToString(k)+"\n")); err != nil {
		return nil, fmt.Errorf("write credential key %s: %w", p, err)
	}
	j.key, j.made = k, true
	return k, nil
}

// KeyMade reports whether CredentialKey made the node's credential key
// (there was none in the state directory) rather than read it: every MAC
// recorded before was made under another key, or under none.
func (j *Journal) KeyMade() bool {
	j.keyMu.Lock()
	defer j.keyMu.Unlock()
	return j.made
}
