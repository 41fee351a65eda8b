//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package smb_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// TestAnotherPasswordOnAnotherShareOfTheServer: Windows keeps one set of
// credentials per server name, so two shares of one server mapped by one
// user with two passwords may both be served with either password. Each
// share's own records agree with its volume; the node reports the drift
// all the same (csi_windows_node_credential_drift, diagnose) for the
// volumes of both shares. A share of another server is not part of it.
func TestAnotherPasswordOnAnotherShareOfTheServer(t *testing.T) {
	var buf syncBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&buf)))
	e := newEnvCtx(t, klog.NewContext(context.Background(), logger), logger)
	// A share of srv that takes alice's second password: a server in the
	// middle of a rotation, which accepts the new password beside the old.
	if err := e.sim.AddShare(sim.ShareSpec{Server: "srv", Share: "rot", Users: map[string]string{"alice": alicePW2}}); err != nil {
		t.Fatal(err)
	}
	e.mkShareDir("srv", "rot", "v2")
	e.mustStage(vol{id: "v1"})
	e.mustStage(vol{id: "v2", source: "//srv/rot", secrets: secret("alice", alicePW2)})
	e.mustStage(vol{id: "v3", source: "//far/x", subDir: "v1"})

	if n := strings.Count(buf.String(), `"Another global mapping of the share's server was made by the same user with another password`); n != 1 {
		t.Errorf("%d -v=2 lines of the drift at v2's stage, want 1:\n%s", n, buf.String())
	}

	drift, other, err := smb.CredentialCounts(context.Background(), e.journal())
	if err != nil || drift != 2 || other != 0 {
		t.Fatalf("CredentialCounts = %d drift, %d other, %v; want v1 and v2 drifted", drift, other, err)
	}
	rep, err := e.plugin.TakeStock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Volumes {
		drifted := slices.ContainsFunc(v.Problems, func(p inventory.Problem) bool { return p.Reason == inventory.ReasonCredentialDrift })
		if want := v.VolumeID != "v3"; drifted != want {
			t.Errorf("diagnose: volume %s drifted %v, want %v: %+v", v.VolumeID, drifted, want, v.Problems)
		}
	}
}
