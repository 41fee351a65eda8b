//go:build linux

// Linux only: the simulated host runs only on Linux.

package inventory_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// TestCredentialProblems: diagnose shows the user of every mapping and
// session the plugin made, compares each volume's credential with the one
// of the mapping or sessions it uses (the same secret or a different one,
// never the records themselves), and reports a volume on another secret
// of its user (CredentialDrift) or on another user's credentials
// (CredentialMismatch, as an earlier version allowed) as degraded.
func TestCredentialProblems(t *testing.T) {
	base := t.TempDir()
	ctx := context.Background()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	const iqn = "iqn.2024-01.test.array:creds"
	portal := host.Portal{Address: "10.0.9.1", Port: 3260}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n.Sim.AddShare(sim.ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"alice": "Alice-Pw-1"}}))
	for _, d := range []string{"same", "drift", "other"} {
		must(os.MkdirAll(filepath.Join(n.SimDir, "smb", "srv", "data", d), 0o750))
	}
	must(n.Sim.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{portal}, LUNs: []sim.LUNSpec{{LUN: 1}, {LUN: 2}},
		CHAP: &host.CHAP{User: "node1", Secret: host.NewSecret("node1-secret12")}}))
	smbVol := func(dir string) map[string]string { return map[string]string{"source": "//srv/data", "subDir": dir} }
	iscsiVol := func(lun string) map[string]string {
		return map[string]string{"targetPortal": portal.String(), "iqn": iqn, "lun": lun, "sessionCHAPAuth": "true"}
	}
	must(n.Stage(ctx, "smb-same", smbVol("same"), map[string]string{"username": "alice", "password": "Alice-Pw-1"}))
	must(n.Stage(ctx, "smb-drift", smbVol("drift"), map[string]string{"username": "alice", "password": "Alice-Pw-2"}))
	must(n.Stage(ctx, "smb-other", smbVol("other"), map[string]string{"username": "alice", "password": "Alice-Pw-1"}))
	must(n.Stage(ctx, "iscsi-same", iscsiVol("1"), map[string]string{"node.session.auth.username": "node1", "node.session.auth.password": "node1-secret12"}))
	must(n.Stage(ctx, "iscsi-drift", iscsiVol("2"), map[string]string{"node.session.auth.username": "node1", "node.session.auth.password": "node1-secret99"}))
	must(n.Close())
	// smb-other as an earlier version staged it: as user bob, through
	// alice's mapping.
	jr, err := journal.Open(n.StateDir)
	must(err)
	e, _ := jr.Get(ctx, "smb-other")
	e.Attrs["user"] = "bob"
	delete(e.Attrs, "secretMAC")
	must(jr.Put(ctx, e))
	var macs []string
	for _, e := range jr.List(ctx) {
		for _, a := range []string{"secretMAC", "chapSecretMAC"} {
			if m := e.Attrs[a]; m != "" {
				macs = append(macs, m)
			}
		}
	}
	notes, err := jr.Notes(ctx, "")
	must(err)
	for k, v := range notes {
		if strings.HasPrefix(k, smb.MappingSecretNotePrefix) {
			macs = append(macs, v)
		}
		if strings.HasPrefix(k, iscsi.CredentialNotePrefix) && !strings.Contains(v, "secretMAC") {
			t.Fatalf("the target's note %s holds no MAC: the check below would prove less", v)
		}
	}
	if len(macs) != 5 {
		t.Fatalf("%d MACs recorded, want the mapping's and four volumes'", len(macs))
	}

	rep := take(t, base)
	vols := map[string]inventory.Volume{}
	for _, v := range rep.Volumes {
		vols[v.VolumeID] = v
	}
	reasons := func(v inventory.Volume) string {
		var rs []string
		for _, p := range v.Problems {
			rs = append(rs, p.Reason)
		}
		return strings.Join(rs, ",")
	}
	for _, tc := range []struct {
		vol, state, reasons, secret string
	}{
		{"smb-same", "healthy", "", "same"},
		{"smb-drift", "degraded", inventory.ReasonCredentialDrift, "different"},
		{"smb-other", "degraded", inventory.ReasonCredentialMismatch, ""},
		{"iscsi-same", "healthy", "", "same"},
		{"iscsi-drift", "degraded", inventory.ReasonCredentialDrift, "different"},
	} {
		v := vols[tc.vol]
		secret := ""
		switch {
		case v.SMB != nil:
			secret = v.SMB.MappingSecret
		case v.ISCSI != nil:
			secret = v.ISCSI.SessionSecret
			if v.ISCSI.SessionUser == nil || *v.ISCSI.SessionUser != "node1" || v.ISCSI.CHAPUser != "node1" {
				t.Errorf("%s: session user %v, CHAP user %q; want node1", tc.vol, v.ISCSI.SessionUser, v.ISCSI.CHAPUser)
			}
		}
		if string(v.State) != tc.state || reasons(v) != tc.reasons || secret != tc.secret {
			t.Errorf("%s: %s, problems %q, secret %q; want %s, %q, %q", tc.vol, v.State, reasons(v), secret, tc.state, tc.reasons, tc.secret)
		}
	}
	if m := vols["smb-other"].Problems; len(m) != 1 || !strings.Contains(m[0].Message, "user alice") || !strings.Contains(m[0].Message, "user bob") {
		t.Errorf("the mismatch does not name both users: %+v", m)
	}
	users := map[inventory.Kind]string{}
	for _, r := range rep.Resources {
		users[r.Kind] = r.User
	}
	if users[inventory.KindSMBMapping] != "alice" || users[inventory.KindISCSISession] != "node1" {
		t.Errorf("resource users %v, want the mapping's alice and the session's node1", users)
	}
	b, err := json.Marshal(rep)
	must(err)
	for _, m := range macs {
		if strings.Contains(string(b), m) {
			t.Fatal("the report shows a recorded MAC")
		}
	}
}
