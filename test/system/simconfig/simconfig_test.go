package simconfig

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

const (
	repoRoot         = "../../.."
	simConfigDoc     = repoRoot + "/docs/sim-config.md"
	simConfigExample = repoRoot + "/docs/sim-config.yaml"
)

// TestSimConfigExamples: the file make run and make demo use, and the
// complete example of docs/sim-config.md, parse; the example uses every key
// the page's tables document.
func TestSimConfigExamples(t *testing.T) {
	b, err := os.ReadFile(simConfigExample)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.ParseSetup(b)
	if err != nil {
		t.Fatalf("%s: %v", simConfigExample, err)
	}
	// make run's network, as the README describes it.
	if len(s.Shares) != 1 || len(s.Targets) != 1 || len(s.Targets[0].LUNs) != 2 {
		t.Errorf("%s declares %d shares and %d targets, want one share and one target with two LUNs", simConfigExample, len(s.Shares), len(s.Targets))
	}

	b, err = os.ReadFile(simConfigDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	example := yamlBlock(t, doc, "## A complete example")
	if _, err := sim.ParseSetup([]byte(example)); err != nil {
		t.Fatalf("%s: the complete example does not parse: %v", simConfigDoc, err)
	}
	// Keys only a disk table has are in the disk table's example.
	table := yamlBlock(t, doc, "## A disk table")
	if ts, err := sim.ParseSetup([]byte(table)); err != nil || !ts.Table() {
		t.Fatalf("%s: the disk table example does not parse as a table: %v", simConfigDoc, err)
	}
	example += table
	keys, _, _ := strings.Cut(doc[strings.Index(doc, "## Keys"):], "## A complete example")
	documented := regexp.MustCompile("(?m)^### `([a-zA-Z0-9]+)`|^\\| `([a-zA-Z0-9]+)` \\|").FindAllStringSubmatch(keys, -1)
	if len(documented) < 17 { // disks, shares, targets and their keys
		t.Fatalf("%s: found only %d documented keys", simConfigDoc, len(documented))
	}
	for _, k := range documented {
		key := k[1] + k[2]
		if !regexp.MustCompile(`(?m)^[ -]*` + key + `:`).MatchString(example) {
			t.Errorf("%s: key %q is documented but not in the complete example", simConfigDoc, key)
		}
	}
}

// yamlBlock returns the first yaml block of docs/sim-config.md after the
// heading.
func yamlBlock(t *testing.T, doc, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("%s has no section %q", simConfigDoc, heading)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("%s: no yaml block under %q", simConfigDoc, heading)
	}
	return m[1]
}
