// Package doctable reads the tables of a Markdown page of docs/ for the
// tests that keep the page and the code in step (test/rules/docs: every
// metric and log key is documented; test/binary/logformats: every key and
// field the binary logs is).
package doctable

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// cell is a first cell holding one backticked name.
var cell = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")

// FirstColumn reads the page at path and returns the backticked first
// cells of its tables whose header starts with header, each with its line
// number. A first cell that is not a backticked name, or a name listed
// twice, fails the test; so does a page without such a table.
func FirstColumn(t testing.TB, path, header string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(strings.ReplaceAll(lines[i], " ", ""), "|"+header+"|") {
			continue
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			m := cell.FindStringSubmatch(lines[i])
			if m == nil {
				t.Errorf("%s:%d: first cell is not a backticked name", path, i+1)
				continue
			}
			if _, dup := out[m[1]]; dup {
				t.Errorf("%s:%d: %s listed twice", path, i+1, m[1])
			}
			out[m[1]] = i + 1
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table with header | %s |", path, header)
	}
	return out
}
