package wmiexec

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestCOMConfinedToExecutor fails unless this package, and only this
// package, imports github.com/microsoft/wmi and go-ole: the COM layer is
// meant to be swappable (csi-proxy dropped microsoft/wmi in 2026) by
// touching one package. Imports are read with `go list` for GOOS=windows,
// with and without the integration tag, test files included.
func TestCOMConfinedToExecutor(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to list imports with: %v", err)
	}
	const self = "github.com/wincsi/csi-windows-node/pkg/winhost/wmiexec"
	confined := []string{"github.com/microsoft/wmi", "github.com/go-ole/go-ole"}
	for _, tags := range []string{"", "integration"} {
		cmd := exec.Command(gobin, "list", "-e", "-tags", tags,
			"-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`,
			"github.com/wincsi/csi-windows-node/...")
		cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (tags %q): %v\n%s", tags, err, stderr.String())
		}
		for _, root := range confined {
			var importers []string
			for line := range strings.Lines(string(out)) {
				fields := strings.Fields(line)
				if len(fields) == 0 {
					continue
				}
				for _, imp := range fields[1:] {
					if imp == root || strings.HasPrefix(imp, root+"/") {
						importers = append(importers, fields[0])
						break
					}
				}
			}
			if !slices.Equal(importers, []string{self}) {
				t.Errorf("tags %q: packages importing %s = %v, want exactly [%s]", tags, root, importers, self)
			}
		}
	}
}
