// Package leakcheck is what the secrets suites share
// (test/system/secrets in the test process, test/binary/secrets against
// the binary): the secret values they send (quotes, backslashes, colons
// and format verbs in them), the simulated storage that takes or refuses
// them, the success and failure paths each goes through (Steps, RunSteps)
// and the checker that finds a value in any text however it was printed
// (Leaks, CheckNoLeak, CheckFiles).
package leakcheck

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

// Secret is one secret value. Its marker is a plain alphanumeric part of
// the value that no encoding (quoting, JSON, %q) changes and nothing else
// contains, so finding the marker finds the value however it was printed.
type Secret struct {
	Marker, Value string
}

// The secrets the requests carry. CHAP secrets are 12 to 16 bytes.
var (
	SMBPassword     = Secret{"QmSMBpw", `QmSMBpw"'\:%v%s{}`}
	SMBWrong        = Secret{"QmWRONG", `QmWRONG"\:%v-pw`}
	CHAPSecret      = Secret{"QmCHAP", `QmCHAP"\:%v12`}
	CHAPWrong       = Secret{"QmBADCH", `QmBADCH"\:%v9`}
	MutualSecret    = Secret{"QmMUTU", `QmMUTU'\:%s34`}
	DiscoverySecret = Secret{"QmDISC", `QmDISC"\:%d56`}
	DiscoveryWrong  = Secret{"QmBADDI", `QmBADDI'\:%x7`}
	All             = []Secret{SMBPassword, SMBWrong, CHAPSecret, CHAPWrong, MutualSecret, DiscoverySecret, DiscoveryWrong}
)

// Leaks returns the markers of the secrets found in text, in any encoding
// (the marker), and the raw, %q and JSON forms of each value for the
// message.
func Leaks(text string) []string {
	var out []string
	for _, s := range All {
		q := strconv.Quote(s.Value)
		j, _ := json.Marshal(s.Value) // a string always marshals
		for _, form := range []string{s.Marker, s.Value, q[1 : len(q)-1], string(j[1 : len(j)-1])} {
			if strings.Contains(text, form) {
				out = append(out, s.Marker)
				break
			}
		}
	}
	return out
}

// CheckNoLeak fails the test when text holds a secret.
func CheckNoLeak(t *testing.T, where, text string) {
	t.Helper()
	if found := Leaks(text); len(found) > 0 {
		i := strings.Index(text, found[0])
		lo, hi := max(0, i-200), min(len(text), i+200)
		t.Errorf("%s holds secret(s) %v: ...%s...", where, found, text[lo:hi])
	}
}

// CheckFiles scans every regular file below dir and returns how many it read.
func CheckFiles(t *testing.T, dir string) int {
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
		CheckNoLeak(t, "file "+p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The simulated storage; CHAPUser and DiscoveryUser are the CHAP user
// names the steps send.
const (
	iqnOK         = "iqn.2024-01.io.wincsi.sim:secrets"
	iqnDown       = "iqn.2024-01.io.wincsi.sim:down"
	CHAPUser      = "node1"
	DiscoveryUser = "disc1"
)

var (
	portalOK   = host.Portal{Address: "10.0.0.1", Port: 3260}
	portalDown = host.Portal{Address: "10.0.0.9", Port: 3260}
)

// SetupHost creates \\srv\data (alice, SMBPassword) with directory v1, an
// unreachable server \\down\data, target iqnOK (session CHAP, mutual CHAP
// and discovery CHAP) and target iqnDown behind an unreachable portal.
func SetupHost(s *sim.Sim) error {
	if err := s.AddShare(sim.ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"alice": SMBPassword.Value}}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", "srv", "data", "v1"), 0o750); err != nil {
		return err
	}
	if err := s.AddShare(sim.ShareSpec{Server: "down", Share: "data", Users: map[string]string{"alice": SMBPassword.Value}}); err != nil {
		return err
	}
	if err := s.SetServerReachable("down", false); err != nil {
		return err
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqnOK, Portals: []host.Portal{portalOK}, LUNs: []sim.LUNSpec{{LUN: 1}},
		CHAP: &host.CHAP{User: CHAPUser, Secret: host.NewSecret(CHAPSecret.Value)}, MutualSecret: MutualSecret.Value,
		DiscoveryCHAP: &host.CHAP{User: DiscoveryUser, Secret: host.NewSecret(DiscoverySecret.Value)}}); err != nil {
		return err
	}
	if err := s.AddTarget(sim.TargetSpec{IQN: iqnDown, Portals: []host.Portal{portalDown}, LUNs: []sim.LUNSpec{{LUN: 1}}}); err != nil {
		return err
	}
	return s.SetPortalReachable(portalDown, false)
}

// NodeAPI is the part of the node service the steps call: the in-process
// server or a client of the binary.
type NodeAPI interface {
	NodeStageVolume(context.Context, *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error)
	NodeUnstageVolume(context.Context, *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error)
	NodeGetVolumeHealth(context.Context, *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error)
	NodeGetVolumeStats(context.Context, *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error)
}

// Step is one RPC with the code it must get.
type Step struct {
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

func smbSec(pw Secret) map[string]string {
	return map[string]string{"username": "alice", "password": pw.Value}
}

func iscsiCtx(iqn string, portal host.Portal, discovery bool) map[string]string {
	m := map[string]string{"targetPortal": portal.String(), "iqn": iqn, "lun": "1", "sessionCHAPAuth": "true"}
	if discovery {
		m["discoveryCHAPAuth"] = "true"
	}
	return m
}

func iscsiSec(session, mutual, disc Secret) map[string]string {
	m := map[string]string{"node.session.auth.username": CHAPUser, "node.session.auth.password": session.Value}
	if mutual.Value != "" {
		m["node.session.auth.password_in"] = mutual.Value
	}
	if disc.Value != "" {
		m["node.sendtargets.auth.username"] = DiscoveryUser
		m["node.sendtargets.auth.password"] = disc.Value
	}
	return m
}

// Steps are the success and failure paths every secret goes through.
var Steps = []Step{
	{name: "smb wrong password", vol: "smb-1", kind: "stage", vctx: smbCtx("srv"), sec: smbSec(SMBWrong), want: codes.Unauthenticated},
	{name: "smb unreachable", vol: "smb-2", kind: "stage", vctx: smbCtx("down"), sec: smbSec(SMBPassword), want: codes.Unavailable},
	{name: "smb stage", vol: "smb-1", kind: "stage", vctx: smbCtx("srv"), sec: smbSec(SMBPassword), want: codes.OK},
	{name: "smb restage", vol: "smb-1", kind: "stage", vctx: smbCtx("srv"), sec: smbSec(SMBPassword), want: codes.OK},
	{name: "smb health", vol: "smb-1", kind: "health", want: codes.OK},
	{name: "smb stats", vol: "smb-1", kind: "stats", want: codes.OK},
	{name: "smb unstage", vol: "smb-1", kind: "unstage", want: codes.OK},
	{name: "iscsi wrong discovery secret", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(CHAPSecret, MutualSecret, DiscoveryWrong), want: codes.Unauthenticated},
	{name: "iscsi wrong chap secret", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(CHAPWrong, Secret{}, DiscoverySecret), want: codes.Unauthenticated},
	{name: "iscsi wrong mutual secret", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(CHAPSecret, DiscoveryWrong, DiscoverySecret), want: codes.Unauthenticated}, // the target expects MutualSecret
	{name: "iscsi unreachable portal", vol: "isc-2", kind: "stage", vctx: iscsiCtx(iqnDown, portalDown, false),
		sec: iscsiSec(CHAPSecret, Secret{}, Secret{}), want: codes.Unavailable},
	{name: "iscsi stage", vol: "isc-1", kind: "stage", vctx: iscsiCtx(iqnOK, portalOK, true),
		sec: iscsiSec(CHAPSecret, MutualSecret, DiscoverySecret), want: codes.OK},
	{name: "iscsi health", vol: "isc-1", kind: "health", want: codes.OK},
	{name: "iscsi unstage", vol: "isc-1", kind: "unstage", want: codes.OK},
}

// RunSteps sends every step to ns; staging paths are below kubelet. It
// checks each code and every error message, calls after with each step's
// name once it is done (to scan the files the step wrote: journal entries
// and notes live only while a volume is staged), and returns the messages.
func RunSteps(t *testing.T, ns NodeAPI, kubelet string, after func(step string)) []string {
	t.Helper()
	var msgs []string
	for _, s := range Steps {
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
			CheckNoLeak(t, "error of "+s.name, err.Error())
		}
		after(s.name)
	}
	return msgs
}
