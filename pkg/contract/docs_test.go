package contract

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

const docPath = "../../docs/parameters.md"

// docKeyRow is one row of a key table in docs/parameters.md.
type docKeyRow struct {
	line     int
	key      string
	readFrom string
}

// splitRow splits a markdown table row on pipes not escaped with '\'.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var separatorCell = regexp.MustCompile(`^:?-+:?$`)

// docKeyRows returns the rows of every table whose first header cell is
// "key".
func docKeyRows(t *testing.T, doc string) []docKeyRow {
	t.Helper()
	lines := strings.Split(doc, "\n")
	var rows []docKeyRow
	wantHeader := []string{"key", "read from", "type", "default", "meaning", "example"}
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		header, sep := splitRow(lines[i]), splitRow(lines[i+1])
		if !strings.HasPrefix(lines[i+1], "|") || !separatorCell.MatchString(sep[0]) {
			continue
		}
		if header[0] != "key" {
			i++
			continue
		}
		if strings.Join(header, "|") != strings.Join(wantHeader, "|") {
			t.Errorf("line %d: key table header %q, want %q", i+1, header, wantHeader)
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			cells := splitRow(lines[i])
			if len(cells) != len(wantHeader) {
				t.Errorf("line %d: %d cells, want %d", i+1, len(cells), len(wantHeader))
				continue
			}
			rows = append(rows, docKeyRow{line: i + 1, key: cells[0], readFrom: cells[1]})
		}
	}
	return rows
}

// TestDocsListEveryKey keeps docs/parameters.md and the parser in
// agreement: every key the parser understands is a row of a key table,
// every row names a real key, and the "read from" column matches.
func TestDocsListEveryKey(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	rows := docKeyRows(t, string(b))
	if len(rows) == 0 {
		t.Fatal("no key tables found")
	}
	keys := map[string]KeyDoc{}
	for _, k := range Keys() {
		keys[k.Name] = k
	}
	documented := map[string]bool{}
	backticked := regexp.MustCompile("^`([^`]+)`$")
	for _, r := range rows {
		sub := backticked.FindStringSubmatch(r.key)
		if sub == nil {
			t.Errorf("line %d: first cell %q is not a backticked key", r.line, r.key)
			continue
		}
		name := sub[1]
		k, ok := keys[name]
		if !ok {
			t.Errorf("line %d: %q is documented but the parser does not know it", r.line, name)
			continue
		}
		documented[name] = true
		want := "volume_context/publish_context"
		if k.Source == SourceSecret {
			want = "node-stage secret"
		}
		if r.readFrom != want {
			t.Errorf("line %d: %q read from %q, want %q", r.line, name, r.readFrom, want)
		}
	}
	for name := range keys {
		if !documented[name] {
			t.Errorf("key %q is not documented in a key table of %s", name, docPath)
		}
	}
}

func TestSplitRow(t *testing.T) {
	got := splitRow("| `a` | x \\| y | `*?/\\|,` |")
	want := []string{"`a`", "x | y", "`*?/|,`"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("splitRow = %q, want %q", got, want)
	}
}
