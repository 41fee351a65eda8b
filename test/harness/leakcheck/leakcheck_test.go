package leakcheck

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// TestLeakCheckerFindsEveryForm: the checker finds a secret printed raw,
// quoted, JSON-escaped or partly (a test that cannot fail proves nothing).
func TestLeakCheckerFindsEveryForm(t *testing.T) {
	for _, s := range All {
		for _, text := range []string{"x " + s.Value, strconv.Quote(s.Value), "{\"p\":" + mustJSON(s.Value) + "}", "prefix " + s.Marker + " suffix"} {
			if len(Leaks(text)) == 0 {
				t.Errorf("leak of %s not found in %q", s.Marker, text)
			}
		}
	}
	if found := Leaks("user alice, password [redacted], " + host.Redacted); len(found) != 0 {
		t.Errorf("false positive: %v", found)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
