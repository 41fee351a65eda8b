package contract

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// entry is one key/value pair as the user wrote the key.
type entry struct {
	key string // original spelling (the vendor key when aliased)
	val string
	// published is true for an entry read from publish_context, which the
	// vendor's controller writes, not the user.
	published bool
	// preset names the preset whose alias moved the entry onto its key
	// ("" when the user wrote the key, or aliased it with --context-alias).
	preset string
}

// params holds one map's entries by folded key.
type params map[string]entry

func (p params) get(key string) (entry, bool) {
	e, ok := p[fold(key)]
	return e, ok
}

// has reports whether any of the keys is present.
func (p params) has(keys ...string) bool {
	for _, k := range keys {
		if _, ok := p.get(k); ok {
			return true
		}
	}
	return false
}

// foldMap folds the keys of m. Values are trimmed of surrounding white
// space unless raw (secrets are kept byte for byte); an empty value counts
// as absent. Two keys that fold to the same key must carry the same value;
// the error never quotes values.
func foldMap(m map[string]string, raw bool, what string) (params, *Error) {
	p := make(params, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		if !raw {
			v = strings.TrimSpace(v)
		}
		if v == "" {
			continue
		}
		f := fold(k)
		if prev, ok := p[f]; ok {
			if prev.val != v {
				return nil, errorf(k, "conflicts with %q in %s: the keys differ only in case and their values differ", prev.key, what)
			}
			continue
		}
		p[f] = entry{key: k, val: v}
	}
	return p, nil
}

func errorf(key, format string, args ...any) *Error {
	return &Error{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// asError turns a possibly nil *Error into an error without the typed-nil
// trap.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// parseBool accepts true, false, 1 and 0, case-insensitively.
func parseBool(e entry) (bool, *Error) {
	switch strings.ToLower(e.val) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, errorf(e.key, "%q is not a boolean (true, false, 1 or 0)", e.val)
}

// boolOr returns the key's boolean value, or def when it is absent.
func (p params) boolOr(key string, def bool) (bool, *Error) {
	e, ok := p.get(key)
	if !ok {
		return def, nil
	}
	return parseBool(e)
}

// parseUint parses a decimal unsigned integer no larger than max.
func parseUint(e entry, max uint64) (uint64, *Error) {
	for i := 0; i < len(e.val); i++ {
		if e.val[i] < '0' || e.val[i] > '9' {
			return 0, errorf(e.key, "%q is not an unsigned integer", e.val)
		}
	}
	n, err := strconv.ParseUint(e.val, 10, 64)
	if err != nil || n > max {
		return 0, errorf(e.key, "%q is out of range (at most %d)", e.val, max)
	}
	return n, nil
}

// uint32Ptr returns the key's uint32 value, or nil when it is absent.
func (p params) uint32Ptr(key string) (*uint32, *Error) {
	e, ok := p.get(key)
	if !ok {
		return nil, nil
	}
	n, err := parseUint(e, 1<<32-1)
	if err != nil {
		return nil, err
	}
	v := uint32(n)
	return &v, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
