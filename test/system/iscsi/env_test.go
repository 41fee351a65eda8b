//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package iscsi_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// The simulated storage: two portals of one array, and the targets the
// tests log in to.
var (
	portal1 = host.Portal{Address: "10.0.0.1", Port: 3260}
	portal2 = host.Portal{Address: "10.0.1.1", Port: 3260}
	portal3 = host.Portal{Address: "10.0.2.1", Port: 3261}
)

const (
	iqnOpen   = "iqn.2024-01.test.array:open"
	iqnCHAP   = "iqn.2024-01.test.array:chap"
	iqnMutual = "iqn.2024-01.test.array:mutual"
	iqnOther  = "iqn.2024-01.test.array:other-mutual"
	iqnDisc   = "iqn.2024-01.test.array:discovery"
	iqnLate   = "iqn.2024-01.test.array:late"
	iqnShared = "iqn.2024-01.test.array:shared"
	iqnNamed  = "iqn.2024-01.test.array:named"
	iqnMoved  = "iqn.2024-01.test.array:moved"
	iqnNoID   = "iqn.2024-01.test.array:no-id"
	iqnTwo    = "iqn.2024-01.test.array:two-at-login"
	iqnMixed  = "iqn.2024-01.test.array:mixed"
	iqnMixed2 = "iqn.2024-01.test.array:mixed-first"

	// CHAP secrets are 12 to 16 bytes.
	chapUser    = "k8s-node"
	chapSecret  = "session-sec-01"
	mutualOK    = "target-proves-1"
	otherMutual = "other-mutual-01"
	discUser    = "k8s-disc"
	discSecret  = "discovery-sec01"
)

func chap(user, secret string) *host.CHAP {
	return &host.CHAP{User: user, Secret: host.NewSecret(secret)}
}

// Portals that are not the address the target answers on: two host names
// (names), and two group addresses whose logins the array redirects to
// others (redirects). And portals that overlap: a name that resolves to
// two addresses, one of which is the target's other portal (mixedName and
// mixedAddr: the name's login answers on its first address, 10.0.7.1), and
// a name whose first address is the other portal (mixed2Name and
// mixed2Addr: both logins answer on 10.0.8.2).
var (
	namedA     = host.Portal{Address: "array-a.example.com", Port: 3260}
	namedB     = host.Portal{Address: "array-b.example.com", Port: 3260}
	groupA     = host.Portal{Address: "10.0.6.1", Port: 3260}
	groupB     = host.Portal{Address: "10.0.6.2", Port: 3260}
	mixedName  = host.Portal{Address: "array-c.example.com", Port: 3260}
	mixedAddr  = host.Portal{Address: "10.0.7.2", Port: 3260}
	mixed2Name = host.Portal{Address: "array-d.example.com", Port: 3260}
	mixed2Addr = host.Portal{Address: "10.0.8.2", Port: 3260}
	names      = map[string][]string{"array-a.example.com": {"10.0.5.1"}, "array-b.example.com": {"10.0.5.2", "fd00::5:2"},
		"array-c.example.com": {"10.0.7.1", "10.0.7.2"}, "array-d.example.com": {"10.0.8.2", "10.0.8.1"}}
)

// targets is the storage every test starts with.
func targets() []sim.TargetSpec {
	luns := []sim.LUNSpec{{LUN: 0}, {LUN: 1}, {LUN: 2}, {LUN: 3}}
	return []sim.TargetSpec{
		{IQN: iqnNamed, Portals: []host.Portal{namedA, namedB}, LUNs: luns},
		{IQN: iqnMoved, Portals: []host.Portal{groupA, groupB}, LUNs: luns, Redirects: map[host.Portal]host.Portal{
			groupA: {Address: "10.0.6.11", Port: 3260}, groupB: {Address: "10.0.6.12", Port: 3260}}},
		{IQN: iqnNoID, Portals: []host.Portal{groupA}, LUNs: []sim.LUNSpec{{LUN: 0}}, LoginWithoutID: true},
		{IQN: iqnTwo, Portals: []host.Portal{portal1}, LUNs: []sim.LUNSpec{{LUN: 0}}, LoginWithoutID: true, SecondSessionAtLogin: true},
		{IQN: iqnMixed, Portals: []host.Portal{mixedName, mixedAddr}, LUNs: luns},
		{IQN: iqnMixed2, Portals: []host.Portal{mixed2Name, mixed2Addr}, LUNs: luns},
		{IQN: iqnOpen, Portals: []host.Portal{portal1, portal2}, LUNs: []sim.LUNSpec{{LUN: 0}, {LUN: 1}}},
		{IQN: iqnCHAP, Portals: []host.Portal{portal1}, LUNs: []sim.LUNSpec{{LUN: 0}}, CHAP: chap(chapUser, chapSecret)},
		{IQN: iqnMutual, Portals: []host.Portal{portal1}, LUNs: []sim.LUNSpec{{LUN: 0}},
			CHAP: chap(chapUser, chapSecret), MutualSecret: mutualOK},
		{IQN: iqnOther, Portals: []host.Portal{portal1}, LUNs: []sim.LUNSpec{{LUN: 0}},
			CHAP: chap(chapUser, chapSecret), MutualSecret: otherMutual},
		{IQN: iqnDisc, Portals: []host.Portal{portal3}, LUNs: []sim.LUNSpec{{LUN: 0}}, DiscoveryCHAP: chap(discUser, discSecret)},
		{IQN: iqnLate, Portals: []host.Portal{portal1}, LUNs: []sim.LUNSpec{{LUN: 0}, {LUN: 3, AppearAfterRescans: 2}}},
		{IQN: iqnShared, Portals: []host.Portal{portal1}, LUNs: []sim.LUNSpec{{LUN: 0}, {LUN: 1}, {LUN: 2}}, CHAP: chap(chapUser, chapSecret)},
	}
}

// fast keeps waits short; no test asserts on time.
var fast = backend.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Attempts: 20}

// env is a node service with the disk and iSCSI backends over a simulated
// host, a journal and a kubelet directory, all under one test directory, so
// that it can be restarted (new sim, journal and server on the same
// directories) as a plugin restart would.
type env struct {
	t           *testing.T
	simDir      string
	jrDir       string
	kubelet     string
	keepPortals bool // --keep-iscsi-portals
	wrap        func(host.Host) host.Host
	windows     sim.WindowsAnswers // the sim's answers where Windows' are uncertain

	sim    *sim.Sim
	srv    csi.NodeServer
	plugin *plugin.Plugin
}

// newEnv starts the plugin; keepPortals is --keep-iscsi-portals.
func newEnv(t *testing.T, keepPortals bool) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{t: t, simDir: filepath.Join(base, "sim"), jrDir: filepath.Join(base, "journal"),
		kubelet: filepath.Join(base, "kubelet"), keepPortals: keepPortals}
	if err := os.MkdirAll(e.kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Dir: e.simDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range targets() {
		if err := s.AddTarget(spec); err != nil {
			t.Fatal(err)
		}
	}
	for name, addrs := range names {
		if err := s.SetNames(name, addrs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.open()
	t.Cleanup(func() {
		if err := e.sim.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// open starts the plugin (plugin.New) on the sim, the journal and the
// kubelet directory.
func (e *env) open() {
	e.t.Helper()
	s, err := sim.New(sim.Config{Dir: e.simDir, Windows: e.windows})
	if err != nil {
		e.t.Fatal(err)
	}
	h := s.Host()
	if e.wrap != nil {
		h = e.wrap(h)
	}
	p, err := plugin.New(plugin.Options{
		DriverName:           "iscsi.test",
		NodeID:               "node-1",
		KubeletDir:           e.kubelet,
		PathStyle:            winpath.POSIX,
		StateDir:             e.jrDir,
		OfflineDiskOnUnstage: true,
		KeepISCSIPortals:     e.keepPortals,
		Backoff:              fast,
	}, plugin.Host{Host: h})
	if err != nil {
		_ = s.Close() // the wiring error is the one to report
		e.t.Fatal(err)
	}
	e.sim, e.srv, e.plugin = s, p.Node(), p
}

// restart stops and starts the plugin on the same directories.
func (e *env) restart() {
	e.t.Helper()
	if err := e.sim.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

// reboot reboots the simulated node and restarts the plugin.
func (e *env) reboot() {
	e.t.Helper()
	if err := e.sim.Reboot(); err != nil {
		e.t.Fatal(err)
	}
	e.restart()
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) staging(vol string) string {
	return filepath.Join(e.kubelet, "plugins", "kubernetes.io", "csi", "iscsi.test", vol, "globalmount")
}

func (e *env) target(vol string) string {
	return filepath.Join(e.kubelet, "pods", "pod-1", "volumes", "kubernetes.io~csi", vol, "mount")
}

func capability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ntfs"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// volume describes one volume of a test: its parameters and secrets.
type volume struct {
	id      string
	context map[string]string
	secrets map[string]string
}

func vol(id, portal, iqn string, lun int, kv ...string) volume {
	v := volume{id: id, context: map[string]string{
		"targetPortal": portal, "iqn": iqn, "lun": strconv.Itoa(lun),
	}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.context[kv[i]] = kv[i+1]
	}
	return v
}

func (v volume) with(secrets ...string) volume {
	v.secrets = map[string]string{}
	for i := 0; i+1 < len(secrets); i += 2 {
		v.secrets[secrets[i]] = secrets[i+1]
	}
	return v
}

func stageRequest(v volume, staging string) *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, VolumeCapability: capability(),
		VolumeContext: v.context, Secrets: v.secrets,
	}
}

func (e *env) stageCtx(ctx context.Context, v volume) error {
	_, err := e.srv.NodeStageVolume(ctx, stageRequest(v, e.staging(v.id)))
	return err
}

func (e *env) stage(v volume) error { return e.stageCtx(e.ctx(), v) }

func (e *env) unstage(v volume) error {
	_, err := e.srv.NodeUnstageVolume(e.ctx(), &csi.NodeUnstageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: e.staging(v.id),
	})
	return err
}

func (e *env) publish(v volume) error {
	_, err := e.srv.NodePublishVolume(e.ctx(), &csi.NodePublishVolumeRequest{
		VolumeId: v.id, StagingTargetPath: e.staging(v.id), TargetPath: e.target(v.id),
		VolumeCapability: capability(), VolumeContext: v.context,
	})
	return err
}

func (e *env) unpublish(v volume) error {
	_, err := e.srv.NodeUnpublishVolume(e.ctx(), &csi.NodeUnpublishVolumeRequest{
		VolumeId: v.id, TargetPath: e.target(v.id),
	})
	return err
}

func (e *env) health(v volume) []*csi.VolumeHealth_VolumeHealthEntry {
	e.t.Helper()
	resp, err := e.srv.NodeGetVolumeHealth(e.ctx(), &csi.NodeGetVolumeHealthRequest{
		VolumeId: v.id, StagingTargetPath: e.staging(v.id),
	})
	if err != nil {
		e.t.Fatalf("NodeGetVolumeHealth(%s): %v", v.id, err)
	}
	return resp.GetVolumeHealth().GetHealthStatuses()
}

// sessions returns the sim's sessions to a target.
func (e *env) sessions(iqn string) []sim.SessionState {
	var out []sim.SessionState
	for _, s := range e.sim.Snapshot().Sessions {
		if s.Target == iqn {
			out = append(out, s)
		}
	}
	return out
}

func (e *env) logins(iqn string) int {
	n := 0
	for _, l := range e.sim.Snapshot().PersistentLogins {
		if l.Target == iqn {
			n++
		}
	}
	return n
}

func (e *env) portals() []string {
	var out []string
	for _, p := range e.sim.Snapshot().Portals {
		out = append(out, p.Portal)
	}
	return out
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// writeFile writes name through the published path of v.
func (e *env) writeFile(v volume, name, data string) {
	e.t.Helper()
	must(e.t, "write through the published path", os.WriteFile(filepath.Join(e.target(v.id), name), []byte(data), 0o644))
}

func (e *env) readFile(v volume, name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.target(v.id), name))
	if err != nil {
		e.t.Fatalf("read through the published path: %v", err)
	}
	return string(b)
}

// journal reads the stage journal as diagnose does (journal.OpenReadOnly):
// a snapshot of what the plugin has written.
func (e *env) journal() *journal.Journal {
	e.t.Helper()
	j, err := journal.OpenReadOnly(e.jrDir)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}
