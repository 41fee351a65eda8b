package secrets

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// secret is one secret value. Its marker is a plain alphanumeric part of
// the value that no encoding (quoting, JSON, %q) changes and nothing else
// contains, so finding the marker finds the value however it was printed.
type secret struct {
	marker, value string
}

// The secrets the requests carry. CHAP secrets are 12 to 16 bytes.
var (
	smbPassword  = secret{"QmSMBpw", `QmSMBpw"'\:%v%s{}`}
	smbWrong     = secret{"QmWRONG", `QmWRONG"\:%v-pw`}
	chapSecret   = secret{"QmCHAP", `QmCHAP"\:%v12`}
	chapWrong    = secret{"QmBADCH", `QmBADCH"\:%v9`}
	mutualSecret = secret{"QmMUTU", `QmMUTU'\:%s34`}
	discSecret   = secret{"QmDISC", `QmDISC"\:%d56`}
	discWrong    = secret{"QmBADDI", `QmBADDI'\:%x7`}
	allSecrets   = []secret{smbPassword, smbWrong, chapSecret, chapWrong, mutualSecret, discSecret, discWrong}
)

// leaks returns the markers of the secrets found in text, in any encoding
// (the marker), and the raw, %q and JSON forms of each value for the
// message.
func leaks(text string) []string {
	var out []string
	for _, s := range allSecrets {
		q := strconv.Quote(s.value)
		j, _ := json.Marshal(s.value) // a string always marshals
		for _, form := range []string{s.marker, s.value, q[1 : len(q)-1], string(j[1 : len(j)-1])} {
			if strings.Contains(text, form) {
				out = append(out, s.marker)
				break
			}
		}
	}
	return out
}

// checkNoLeak fails the test when text holds a secret.
func checkNoLeak(t *testing.T, where, text string) {
	t.Helper()
	if found := leaks(text); len(found) > 0 {
		i := strings.Index(text, found[0])
		lo, hi := max(0, i-200), min(len(text), i+200)
		t.Errorf("%s holds secret(s) %v: ...%s...", where, found, text[lo:hi])
	}
}

// checkFiles scans every regular file below dir.
func checkFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		checkNoLeak(t, "file "+p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLeakCheckerFindsEveryForm: the checker finds a secret printed raw,
// quoted, JSON-escaped or partly (a test that cannot fail proves nothing).
func TestLeakCheckerFindsEveryForm(t *testing.T) {
	for _, s := range allSecrets {
		for _, text := range []string{"x " + s.value, strconv.Quote(s.value), "{\"p\":" + mustJSON(s.value) + "}", "prefix " + s.marker + " suffix"} {
			if len(leaks(text)) == 0 {
				t.Errorf("leak of %s not found in %q", s.marker, text)
			}
		}
	}
	if found := leaks("user alice, password [redacted], " + host.Redacted); len(found) != 0 {
		t.Errorf("false positive: %v", found)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// The simulated storage.
const (
	iqnOK   = "iqn.2024-01.io.wincsi.sim:secrets"
	iqnDown = "iqn.2024-01.io.wincsi.sim:down"
	chapUsr = "node1"
	discUsr = "disc1"
)

var (
	portalOK   = host.Portal{Address: "10.0.0.1", Port: 3260}
	portalDown = host.Portal{Address: "10.0.0.9", Port: 3260}
)

// setupHost creates \\srv\data (alice, smbPassword) with directory v1, an
// unreachable server \\down\data, target iqnOK (session CHAP, mutual CHAP
// and discovery CHAP) and target iqnDown behind an unreachable portal.
func setupHost(s *sim.Sim) error {
	if err := s.AddShare(sim.ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"alice": smbPassword.value}}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", "srv", "data", "v1"), 0o750); err != nil {
		return err
	}
	if err := s.AddShare(sim.ShareSpec{Server: "down", Share: "data", Users: map[string]string{"alice": smbPassword.value}}); err != nil {
		return err
	}
	if err := s.SetServerReachable("down", false); err != nil {
		return err
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqnOK, Portals: []host.Portal{portalOK}, LUNs: []sim.LUNSpec{{LUN: 1}},
		CHAP: &host.CHAP{User: chapUsr, Secret: host.NewSecret(chapSecret.value)}, MutualSecret: mutualSecret.value,
		DiscoveryCHAP: &host.CHAP{User: discUsr, Secret: host.NewSecret(discSecret.value)}}); err != nil {
		return err
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqnDown, Portals: []host.Portal{portalDown}, LUNs: []sim.LUNSpec{{LUN: 1}}}); err != nil {
		return err
	}
	return s.SetPortalReachable(portalDown, false)
}

// nodeAPI is the part of the node service the steps call: the in-process
// server or a client of the binary.
type nodeAPI interface {
	NodeStageVolume(context.Context, *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error)
	NodeUnstageVolume(context.Context, *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error)
	NodeGetVolumeHealth(context.Context, *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error)
	NodeGetVolumeStats(context.Context, *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error)
}

// step is one RPC with the code it must get.
type step struct {
	name string
	vol  string
	kind string // stage, unstage, health, stats
	vctx map[string]string
	sec  map[string]string
	want codes.Code
}

func smbCtx(server string) map[string]string {
	return map[string]string{"source": `\\` + server + `\data`, "subDir": "v1"}
}

func smbSec(pw secret) map[string]string {
	return map[string]string{"username": "alice", "password": pw.value}
}

func iscsiCtx(iqn string, portal host.Portal, discovery bool) map[string]string {
	m := map[string]string{"targetPortal": portal.String(), "iqn": iqn, "lun": "1", "sessionCHAPAuth": "true"}
	if discovery {
		m["discoveryCHAPAuth"] = "true"
	}
	return m
}

func iscsiSec(session, mutual, disc secret) map[string]string {
	m := map[string]string{"node.session.auth.username": chapUsr, "node.session.auth.password": session.value}
	if mutual.value != "" {
		m["node.session.auth.password_in"] = mutual.value
	}
	if disc.value != "" {
		m["node.sendtargets.auth.username"] = discUsr
		m["node.sendtargets.auth.password"] = disc.value
	}
	return m
}

// steps are the success and failure paths every secret goes through.
var steps = []step{
	{name: "smb wrong password", vol: "smb-1", kind: "stage", vctx: smbCtx("srv"), sec: smbSec(smbWrong), want: codes.Unauthenticated},
	{name: "smb unreachable", vol: "smb-2", kind: "stage", vctx: smbCtx("down"), sec: smbSec(smbPassword), want: codes.Unavailable},
	{name: "smb stage", vol: "smb-1", kind: "stage", vctx: smbCtx("srv"), sec: smbSec(smbPassword), want: codes.OK},
	{name: "smb restage", vol: "smb-1", kind: "stage", vctx: smbCtx("srv"), sec: smbSec(smbPassword), want: codes.OK},
	{name: "smb health", vol: "smb-1", kind: "health", want: codes.OK},
	{name: "smb stats", vol: "smb-1", kind: "stats", want: codes.OK},
	{name: "smb unstage", vol: "smb-1", kind: "unstage", want: codes.OK},
	{name: "iscsi wrong discovery secret", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(chapSecret, mutualSecret, discWrong), want: codes.Unauthenticated},
	{name: "iscsi wrong chap secret", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(chapWrong, secret{}, discSecret), want: codes.Unauthenticated},
	{name: "iscsi wrong mutual secret", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(chapSecret, discWrong, discSecret), want: codes.Unauthenticated}, // the target expects mutualSecret
	{name: "iscsi unreachable portal", vol: "isc-2", kind: "stage", vctx: iscsiCtx(iqnDown, portalDown, false),
		sec: iscsiSec(chapSecret, secret{}, secret{}), want: codes.Unavailable},
	{name: "iscsi stage", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(chapSecret, mutualSecret, discSecret), want: codes.OK},
	{name: "iscsi health", vol: "isc-1", kind: "health", want: codes.OK},
	{name: "iscsi unstage", vol: "isc-1", kind: "unstage", want: codes.OK},
}

// runSteps sends every step to ns; staging paths are below kubelet. It
// checks each code and every error message, calls after with each step's
// name once it is done (to scan the files the step wrote: journal entries
// and notes live only while a volume is staged), and returns the messages.
func runSteps(t *testing.T, ns nodeAPI, kubelet string, after func(step string)) []string {
	t.Helper()
	var msgs []string
	for _, s := range steps {
		staging := filepath.Join(kubelet, "plugins", "secrets", s.vol, "globalmount")
		if err := os.MkdirAll(staging, 0o750); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var err error
		switch s.kind {
		case "stage":
			_, err = ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: s.vol, StagingTargetPath: staging,
				VolumeCapability: simnode.MountCap, VolumeContext: s.vctx, Secrets: s.sec})
		case "unstage":
			_, err = ns.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: s.vol, StagingTargetPath: staging})
		case "health":
			var resp *csi.NodeGetVolumeHealthResponse
			resp, err = ns.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: s.vol, StagingTargetPath: staging})
			if resp != nil {
				msgs = append(msgs, resp.String())
			}
		case "stats":
			_, err = ns.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: s.vol, VolumePath: staging})
		}
		if got := status.Code(err); got != s.want {
			t.Errorf("%s: code %v (%v), want %v", s.name, got, err, s.want)
		}
		if err != nil {
			msgs = append(msgs, err.Error())
			checkNoLeak(t, "error of "+s.name, err.Error())
		}
		after(s.name)
	}
	return msgs
}
