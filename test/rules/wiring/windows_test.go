package wiring

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// deps lists the packages the plugin binary links for goos, as the go
// command resolves them (build constraints included).
func deps(t *testing.T, goos string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "./cmd/csi-windows-node")
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps for GOOS=%s: %v\n%s", goos, err, stderr)
	}
	return strings.Fields(string(out))
}

// TestWindowsBinaryLinksNoSim: the simulated host and its stand-in for the
// controller are wired in cmd only off Windows (host_sim.go), so the
// Windows binary does not link them; the Linux binary does, which shows
// the listing sees them.
func TestWindowsBinaryLinksNoSim(t *testing.T) {
	isSim := func(p string) bool { return p == module+"/pkg/sim" || strings.HasPrefix(p, module+"/pkg/sim/") }
	linux := deps(t, "linux")
	if !slices.Contains(linux, module+"/pkg/sim") || !slices.Contains(linux, module+"/pkg/sim/controller") {
		t.Fatalf("the Linux binary links no simulated host; is the listing right?\n%s", strings.Join(linux, "\n"))
	}
	windows := deps(t, "windows")
	if !slices.Contains(windows, module+"/pkg/winhost/wmiexec") {
		t.Fatalf("the Windows binary does not link wmiexec; is the listing right?\n%s", strings.Join(windows, "\n"))
	}
	for _, p := range windows {
		if isSim(p) {
			t.Errorf("the Windows binary links %s; wire the simulated host in a file cmd builds only off Windows", p)
		}
	}
}
