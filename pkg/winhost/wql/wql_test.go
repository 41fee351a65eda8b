package wql

import (
	"errors"
	"strings"
	"testing"
)

// unquote is an independent reader of a single-quoted WQL literal at the
// start of s, per the documented escapes; it returns the value and the rest.
func unquote(s string) (string, string, bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return "", "", false
			}
			i++
			b.WriteByte(s[i])
		case '\'':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

func TestQuote(t *testing.T) {
	for _, v := range []string{"", "NTFS", `\\?\Volume{5a3b}\`, `it's`, `a"b`, `x' OR '1'='1`, `\'`, `\\server\share`, "ünïcödé"} {
		q, err := Quote(v)
		if err != nil {
			t.Fatalf("Quote(%q): %v", v, err)
		}
		got, rest, ok := unquote(q)
		if !ok || got != v || rest != "" {
			t.Errorf("Quote(%q) = %s, reads back as %q rest %q ok %v", v, q, got, rest, ok)
		}
	}
	for _, v := range []string{"a\x00b", "line\nbreak", "bad\xffutf8"} {
		if _, err := Quote(v); !errors.Is(err, ErrValue) {
			t.Errorf("Quote(%q) err = %v, want ErrValue", v, err)
		}
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		class string
		props []string
		conds []Cond
		want  string
		bad   bool
	}{
		{class: "MSFT_Disk", want: "SELECT * FROM MSFT_Disk"},
		{class: "MSFT_Disk", props: []string{"Number", "Path"}, conds: []Cond{Eq("Number", uint32(3))},
			want: "SELECT Number, Path FROM MSFT_Disk WHERE Number = 3"},
		{class: "MSFT_Volume", conds: []Cond{Eq("Path", `\\?\Volume{1}\`)},
			want: `SELECT * FROM MSFT_Volume WHERE Path = '\\\\?\\Volume{1}\\'`},
		{class: "MSFT_Partition", conds: []Cond{Eq("DiskNumber", 2), {Prop: "GptType", Op: "<>", Value: "{e3c9}"}, Eq("IsHidden", false)},
			want: "SELECT * FROM MSFT_Partition WHERE DiskNumber = 2 AND GptType <> '{e3c9}' AND IsHidden = FALSE"},
		{class: "MSFT_Disk; DROP", bad: true},
		{class: "MSFT_Disk", props: []string{"Number,Path"}, bad: true},
		{class: "MSFT_Disk", conds: []Cond{{Prop: "Number", Op: "LIKE", Value: "x"}}, bad: true},
		{class: "MSFT_Disk", conds: []Cond{Eq("Number", 1.5)}, bad: true},
		{class: "MSFT_Disk", conds: []Cond{Eq("Number OR 1", 1)}, bad: true},
	}
	for _, tt := range tests {
		got, err := Select(tt.class, tt.props, tt.conds...)
		if tt.bad {
			if !errors.Is(err, ErrValue) {
				t.Errorf("Select(%q, %v, %v) err = %v, want ErrValue", tt.class, tt.props, tt.conds, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Select = %q, %v; want %q", got, err, tt.want)
		}
	}
}

// FuzzQuote checks that no value, however hostile, escapes its literal:
// the quoted form reads back as exactly the value with nothing after it.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "'", `\`, `\'`, `'\`, `x' OR '1'='1`, `"`, `\\?\Volume{x}\`, "ü", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		q, err := Quote(v)
		if err != nil {
			if !errors.Is(err, ErrValue) {
				t.Fatalf("Quote(%q) err = %v", v, err)
			}
			return
		}
		got, rest, ok := unquote(q)
		if !ok || got != v || rest != "" {
			t.Fatalf("Quote(%q) = %s escapes its literal (read %q, rest %q)", v, q, got, rest)
		}
		sel, err := Select("MSFT_Volume", nil, Eq("Path", v))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sel, "SELECT * FROM MSFT_Volume WHERE Path = '") {
			t.Fatalf("query shape changed: %s", sel)
		}
		if got, rest, ok := unquote(strings.TrimPrefix(sel, "SELECT * FROM MSFT_Volume WHERE Path = ")); !ok || got != v || rest != "" {
			t.Fatalf("query %s does not carry exactly the value", sel)
		}
	})
}

func BenchmarkSelect(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Select("MSFT_Volume", []string{"Path", "FileSystem", "Size", "SizeRemaining"},
			Eq("Path", `\\?\Volume{5a3b2c1d-0000-4000-8000-123456789abc}\`)); err != nil {
			b.Fatal(err)
		}
	}
}
