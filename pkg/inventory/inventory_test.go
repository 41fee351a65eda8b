//go:build linux

// Linux only: the simulated host runs only on Linux.

package inventory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/nodestates"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// take reports the node under base as diagnose does: the plugin's options
// from its flags, the simulated host opened read-only.
func take(t *testing.T, base string, args ...string) *inventory.Report {
	t.Helper()
	return takeWith(t, base, nil, args...)
}

// takeWith is take over the host wrap makes of the simulated host.
func takeWith(t *testing.T, base string, wrap func(host.Host) host.Host, args ...string) *inventory.Report {
	t.Helper()
	kubelet, simDir, _ := simnode.Dirs(base)
	cfg, err := simnode.Flags(append([]string{"--host=sim", "--sim-dir=" + simDir, "--kubelet-dir=" + kubelet,
		"--driver-name=" + simnode.DriverName}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := plugin.FromConfig(cfg, runtime.GOOS)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.OpenReadOnly(simDir, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Host()
	if wrap != nil {
		h = wrap(h)
	}
	rep, err := plugin.Inventory(context.Background(), opts, h)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestEveryState(t *testing.T) {
	base := t.TempDir()
	want := nodestates.Build(t, base)
	rep := take(t, base)
	nodestates.Check(t, rep, want)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range nodestates.Secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("the report shows a secret")
		}
	}
	if strings.Contains(string(b), want.OtherPublication) {
		t.Errorf("the report names another driver's publication %s", want.OtherPublication)
	}
}

// kinds returns the report's unexplained items and resources as
// "kind id" and "kind id owner kept" strings.
func kinds(rep *inventory.Report) (unexplained, resources map[string]bool) {
	unexplained, resources = map[string]bool{}, map[string]bool{}
	for _, it := range rep.Unexplained {
		unexplained[string(it.Kind)+" "+it.ID] = true
	}
	for _, r := range rep.Resources {
		k := string(r.Kind) + " " + r.ID + " " + string(r.Owner)
		if r.Kept {
			k += " kept"
		}
		resources[k] = true
	}
	return unexplained, resources
}

// With --smb-keep-mappings and --keep-iscsi-portals an unused mapping or
// portal of the plugin is kept on purpose: reported as kept, not
// unexplained. Sessions are never kept.
func TestKeptResources(t *testing.T) {
	base := t.TempDir()
	want := nodestates.Build(t, base)
	rep := take(t, base, "--smb-keep-mappings", "--keep-iscsi-portals")
	unexplained, resources := kinds(rep)
	for _, k := range []string{`smb-mapping \\srv3\half`, "iscsi-portal 10.0.4.1:3260"} {
		if unexplained[k] {
			t.Errorf("%s is unexplained although the flags keep it", k)
		}
		if !resources[k+" plugin kept"] {
			t.Errorf("%s is not reported as kept: %v", k, resources)
		}
	}
	n := 0
	for _, k := range want.Unexplained {
		if unexplained[k] {
			n++
		}
	}
	if n != len(want.Unexplained)-2 || len(unexplained) != n {
		t.Errorf("unexplained %v; want the scenario's but the kept two", unexplained)
	}
}

// After the state directory was lost (wiped, or the plugin reinstalled
// with a new one) nothing is recorded: every mapping, session and portal
// is foreign, never the plugin's orphan, and the staging mount points and
// links are still recognised by where they are.
func TestStateDirectoryLost(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dir        func(base string) string
		incomplete bool
	}{
		{"empty", func(base string) string { d := filepath.Join(base, "new-state"); mkdir(t, d); return d }, false},
		{"missing", func(base string) string { return filepath.Join(base, "no-such-state") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			nodestates.Build(t, base)
			rep := take(t, base, "--state-dir="+tc.dir(base))
			if len(rep.Volumes) != 0 {
				t.Errorf("volumes %+v, want none", rep.Volumes)
			}
			if got := len(rep.Incomplete) == 1 && strings.Contains(rep.Incomplete[0], "--state-dir"); got != tc.incomplete {
				t.Errorf("incomplete %q", rep.Incomplete)
			}
			for _, r := range rep.Resources {
				if r.Owner != inventory.OwnerForeign || !strings.Contains(r.Note, "state directory was lost") {
					t.Errorf("resource %s %s: owner %s (%s), want foreign", r.Kind, r.ID, r.Owner, r.Note)
				}
			}
			kubelet, _, _ := simnode.Dirs(base)
			for _, it := range rep.Unexplained {
				if (it.Kind != inventory.KindMountPoint && it.Kind != inventory.KindLink) || !strings.HasPrefix(it.ID, kubelet) {
					t.Errorf("unexplained %s %s: only paths under the kubelet directory can be told", it.Kind, it.ID)
				}
			}
			// Every volume still staged (mounted or linked) shows, and
			// the publications of the healthy ones.
			unexplained, _ := kinds(rep)
			for _, vol := range []string{nodestates.DiskOK, nodestates.DiskOffline, nodestates.SMBOK, nodestates.SMBBad,
				nodestates.ISCSIOK, nodestates.ISCSILost, nodestates.DiskForgotten, nodestates.SMBForgotten} {
				p := simnode.StagingPath(kubelet, vol)
				if !unexplained["mount-point "+p] && !unexplained["link "+p] {
					t.Errorf("the stage of %s at %s is not reported", vol, p)
				}
			}
			if !unexplained["link "+simnode.TargetPath(kubelet, "pod-a", nodestates.DiskOK)] {
				t.Errorf("the publication of %s is not reported", nodestates.DiskOK)
			}
		})
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
}

// failingMappings is an SMB host whose listing of mappings is refused.
type failingMappings struct{ host.SMB }

func (failingMappings) Mappings(context.Context) ([]host.SMBMapping, error) {
	return nil, fmt.Errorf("query MSFT_SmbGlobalMapping: %w", host.ErrAccessDenied)
}

// A host call that fails leaves its part out, says so, and the rest of the
// report stands; it never turns what it could not see into an orphan.
func TestIncomplete(t *testing.T) {
	base := t.TempDir()
	want := nodestates.Build(t, base)
	rep := takeWith(t, base, func(h host.Host) host.Host { h.SMB = failingMappings{h.SMB}; return h })
	// The stock-take reads the mappings once (Snapshot): every part that
	// needs them is incomplete for the same reason, and nothing else is.
	named := false
	for _, line := range rep.Incomplete {
		named = named || strings.Contains(line, "list SMB global mappings")
		if !strings.Contains(line, "query MSFT_SmbGlobalMapping: access denied") {
			t.Errorf("incomplete %q: only what needs the SMB mappings may be left out", line)
		}
	}
	if !named {
		t.Fatalf("incomplete %q, want the SMB mappings named", rep.Incomplete)
	}
	unexplained, resources := kinds(rep)
	for k := range resources {
		if strings.HasPrefix(k, "smb-mapping ") {
			t.Errorf("resource %s reported without the mappings", k)
		}
	}
	for _, k := range want.Unexplained {
		if !unexplained[k] && !strings.HasPrefix(k, "smb-mapping ") {
			t.Errorf("%s missing: one failing call must not hide the rest", k)
		}
	}
	if len(rep.Volumes) != len(want.Volumes) {
		t.Errorf("%d volumes, want %d", len(rep.Volumes), len(want.Volumes))
	}
}
