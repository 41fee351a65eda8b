//go:build linux

// Linux only: the volumes are staged on the simulated host, which runs
// only on Linux.

package simconfig

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// TestSimConfigVolumesStage stages each volume of docs/sim-config.md's
// table, with its volume context and node-stage secrets, on a simulated
// host started with the page's complete example, as the README's csc
// lines would.
func TestSimConfigVolumesStage(t *testing.T) {
	b, err := os.ReadFile(simConfigDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, after, _ := strings.Cut(doc, "## A complete example")
	example := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(after)[1]
	network := filepath.Join(t.TempDir(), "network.yaml")
	if err := os.WriteFile(network, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := simnode.Open(simnode.Options{Base: t.TempDir(), Args: []string{"--sim-config=" + network}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })

	rows := 0
	code := regexp.MustCompile("`([^`]*)`")
	for _, line := range strings.Split(after, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 2 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| volume") || strings.HasPrefix(line, "|---") {
			continue
		}
		rows++
		vctx := keyValues(code.FindStringSubmatch(cells[1]))
		var secrets map[string]string
		if len(cells) > 2 {
			secrets = keyValues(code.FindStringSubmatch(cells[2]))
		}
		t.Run(cells[0], func(t *testing.T) {
			vol := "doc-" + strings.Fields(cells[0])[0]
			ctx := context.Background()
			if err := n.Stage(ctx, vol, vctx, secrets); err != nil {
				t.Fatalf("stage with %v: %v", vctx, err)
			}
			if err := n.Unstage(ctx, vol); err != nil {
				t.Fatalf("unstage: %v", err)
			}
		})
	}
	if rows != 6 {
		t.Fatalf("%s: %d volumes in the table after the complete example, want 6", simConfigDoc, rows)
	}
}

// keyValues reads "k=v,k=v" from the first backticked value of a cell.
func keyValues(m []string) map[string]string {
	out := map[string]string{}
	if m == nil {
		return out
	}
	for _, kv := range strings.Split(m[1], ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}
