package host

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Secret holds a password or CHAP secret. Every way of printing it (fmt
// verbs, klog/logr values, JSON) yields a fixed placeholder; only Reveal
// returns the value, and only host implementations call it, at the moment
// they hand it to Windows.
type Secret struct{ v string }

// Redacted is what a Secret prints as.
const Redacted = "[redacted]"

// NewSecret wraps a secret value.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the secret value. Never log or wrap what it returns.
func (s Secret) Reveal() string { return s.v }

// Digest returns the hex SHA-256 of salt, a zero byte and the secret: a
// record that a secret was used, which can be stored and compared without
// storing the secret. Use a random salt per record.
func (s Secret) Digest(salt []byte) string {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte{0})
	h.Write([]byte(s.v))
	return hex.EncodeToString(h.Sum(nil))
}

// MAC returns the hex HMAC-SHA256, under key, of the labels (what the
// secret is for: a share and a user, a target and a CHAP user) and the
// secret: a record that this secret was used there, which compares equal
// to the MAC of the same secret for the same labels under the same key,
// and is of no use without the key (no offline guessing from a copied
// record). Labels bind it to one use, so one password on two shares
// gives two unrelated values. An empty key gives "": nothing to record.
func (s Secret) MAC(key []byte, labels ...string) string {
	if len(key) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, key)
	for _, l := range append(labels, s.v) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(l)))
		m.Write(n[:]) // length-prefixed: no two label lists run together
		m.Write([]byte(l))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// Len returns the length of the secret in bytes (a CHAP secret is
// MinCHAPSecret to MaxCHAPSecret bytes long).
func (s Secret) Len() int { return len(s.v) }

// Equal compares two secrets.
func (s Secret) Equal(o Secret) bool { return s.v == o.v }

func (Secret) String() string                { return Redacted }
func (Secret) GoString() string              { return Redacted }
func (Secret) MarshalLog() any               { return Redacted }
func (Secret) MarshalJSON() ([]byte, error)  { return []byte(`"` + Redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error)  { return []byte(Redacted), nil }
func (Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(Redacted)) }
