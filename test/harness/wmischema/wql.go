package wmischema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// query is a parsed WQL SELECT of the shape pkg/winhost/wql builds:
// SELECT * | p1, p2 FROM Class [WHERE p op literal [AND ...]].
type query struct {
	props []string // nil for *
	class string
	conds []cond
}

type cond struct {
	prop, op string
	lit      any // string, int64 or bool
}

func parseWQL(s string) (query, error) {
	var q query
	rest, ok := cutWord(s, "SELECT")
	if !ok {
		return q, errors.New("not a SELECT")
	}
	from := strings.Index(strings.ToUpper(rest), " FROM ")
	if from < 0 {
		return q, errors.New("no FROM")
	}
	sel := strings.TrimSpace(rest[:from])
	rest = strings.TrimSpace(rest[from+len(" FROM "):])
	if sel != "*" {
		for _, p := range strings.Split(sel, ",") {
			p = strings.TrimSpace(p)
			if !isIdent(p) {
				return q, fmt.Errorf("bad property %q", p)
			}
			q.props = append(q.props, p)
		}
	}
	class, rest := splitWord(rest)
	if !isIdent(class) {
		return q, fmt.Errorf("bad class %q", class)
	}
	q.class = class
	if rest == "" {
		return q, nil
	}
	rest, ok = cutWord(rest, "WHERE")
	if !ok {
		return q, fmt.Errorf("unexpected %q", rest)
	}
	for {
		var c cond
		var err error
		c.prop, rest = splitWord(rest)
		if !isIdent(c.prop) {
			return q, fmt.Errorf("bad property %q in WHERE", c.prop)
		}
		c.op, rest = splitOp(rest)
		if c.op == "" {
			return q, fmt.Errorf("no operator after %s", c.prop)
		}
		c.lit, rest, err = splitLiteral(rest)
		if err != nil {
			return q, err
		}
		q.conds = append(q.conds, c)
		if rest == "" {
			return q, nil
		}
		if rest, ok = cutWord(rest, "AND"); !ok {
			return q, fmt.Errorf("unexpected %q", rest)
		}
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func cutWord(s, w string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) > len(w) && strings.EqualFold(s[:len(w)], w) && s[len(w)] == ' ' {
		return strings.TrimSpace(s[len(w):]), true
	}
	return s, false
}

func splitWord(s string) (string, string) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " =<>")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func splitOp(s string) (string, string) {
	s = strings.TrimSpace(s)
	for _, op := range []string{"<>", "<=", ">=", "=", "<", ">"} {
		if strings.HasPrefix(s, op) {
			return op, strings.TrimSpace(s[len(op):])
		}
	}
	return "", s
}

// splitLiteral reads a quoted string (with the backslash escapes
// pkg/winhost/wql writes), TRUE, FALSE or an integer.
func splitLiteral(s string) (any, string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", errors.New("no literal")
	}
	if q := s[0]; q == '\'' || q == '"' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case c == q:
				return b.String(), strings.TrimSpace(s[i+1:]), nil
			default:
				b.WriteByte(c)
			}
		}
		return nil, "", errors.New("unterminated string literal")
	}
	w, rest := splitWord(s)
	switch strings.ToUpper(w) {
	case "TRUE":
		return true, rest, nil
	case "FALSE":
		return false, rest, nil
	}
	n, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		return nil, "", fmt.Errorf("bad literal %q", w)
	}
	return n, rest, nil
}
