package host

import (
	"crypto/sha256"
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
