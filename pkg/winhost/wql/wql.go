// Package wql builds WMI Query Language statements from trusted class and
// property names and untrusted values. Values are always quoted and escaped
// as the WQL documentation prescribes (WHERE Clause (WMI),
// learn.microsoft.com/windows/win32/wmisdk/where-clause: backslash, double
// quote and single quote are escaped by prefixing a backslash), so no value
// can change the shape of a query. Associations are followed with
// SWbemServices.AssociatorsOf by the executor, not with ASSOCIATORS OF text,
// because MSFT object paths carry braces and quotes. csi-proxy doubled single quotes instead
// (kubernetes-csi/csi-proxy@eeba470 pkg/wmi/wmi.go), which WQL does not document.
//
// Nothing else belongs here: no execution, no parsing of results.
package wql

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrValue is returned for a value that cannot be put in a WQL literal.
var ErrValue = errors.New("value cannot be expressed in WQL")

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Quote returns v as a single-quoted WQL string literal. It fails for values
// holding a NUL or other control character, which WQL cannot carry.
func Quote(v string) (string, error) {
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("%w: invalid UTF-8", ErrValue)
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('\'')
	for _, r := range v {
		switch {
		case r == '\\' || r == '\'' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			return "", fmt.Errorf("%w: control character %U", ErrValue, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String(), nil
}

// Cond is one comparison of a WHERE clause.
type Cond struct {
	Prop  string
	Op    string // =, <>, <, >, <=, >=
	Value any    // string, bool, any integer
}

// Eq is Cond{prop, "=", v}.
func Eq(prop string, v any) Cond { return Cond{Prop: prop, Op: "=", Value: v} }

// Select builds SELECT <props> FROM <class> [WHERE c1 AND c2 ...]. An empty
// props list selects *.
func Select(class string, props []string, conds ...Cond) (string, error) {
	if !identifier.MatchString(class) {
		return "", fmt.Errorf("%w: class %q", ErrValue, class)
	}
	sel := "*"
	if len(props) > 0 {
		for _, p := range props {
			if !identifier.MatchString(p) {
				return "", fmt.Errorf("%w: property %q", ErrValue, p)
			}
		}
		sel = strings.Join(props, ", ")
	}
	q := "SELECT " + sel + " FROM " + class
	if len(conds) == 0 {
		return q, nil
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		s, err := cond(c)
		if err != nil {
			return "", err
		}
		parts[i] = s
	}
	return q + " WHERE " + strings.Join(parts, " AND "), nil
}

func cond(c Cond) (string, error) {
	if !identifier.MatchString(c.Prop) {
		return "", fmt.Errorf("%w: property %q", ErrValue, c.Prop)
	}
	switch c.Op {
	case "=", "<>", "<", ">", "<=", ">=":
	default:
		return "", fmt.Errorf("%w: operator %q", ErrValue, c.Op)
	}
	v, err := literal(c.Value)
	if err != nil {
		return "", fmt.Errorf("property %s: %w", c.Prop, err)
	}
	return c.Prop + " " + c.Op + " " + v, nil
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return Quote(x)
	case bool:
		if x {
			return "TRUE", nil
		}
		return "FALSE", nil
	case int:
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint16:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	}
	return "", fmt.Errorf("%w: unsupported type %T", ErrValue, v)
}
