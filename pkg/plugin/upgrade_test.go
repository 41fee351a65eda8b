//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// previous is the state directory the plugin at commit fe78f2d wrote for
// the volumes of upgradeVolumes (testdata/journal-fe78f2d/README.md).
const previous = "testdata/journal-fe78f2d"

const (
	upgradeIQN      = "iqn.2024-01.io.wincsi:upgrade"
	upgradePassword = "Alice-Pw-7f3c9e1d"
)

var (
	snw = &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ntfs"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	mnmw = &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}}
)

// upgradeVolumes are the stages the previous version made, as kubelet sent
// them (testdata/journal-fe78f2d was written by exactly these).
func upgradeVolumes(kubelet string) []*csi.NodeStageVolumeRequest {
	reqs := []*csi.NodeStageVolumeRequest{
		{VolumeId: "vol-disk", VolumeCapability: snw, VolumeContext: map[string]string{"diskSerial": "SER-1", "diskLUN": "3"}},
		{VolumeId: "vol-smb", VolumeCapability: mnmw, VolumeContext: map[string]string{"source": "//srv/data", "subDir": "vol-smb"},
			Secrets: map[string]string{"username": "alice", "password": upgradePassword}},
		{VolumeId: "vol-iscsi", VolumeCapability: snw, VolumeContext: map[string]string{"targetPortal": "10.0.0.1", "portals": "10.0.1.1",
			"iqn": upgradeIQN, "lun": "1", "multipath": "true"}},
	}
	for _, r := range reqs {
		r.StagingTargetPath = filepath.Join(kubelet, "plugins", "kubernetes.io", "csi", "sim.csi.wincsi.io", r.VolumeId, "globalmount")
	}
	return reqs
}

// upgradeNode is the plugin on a simulated host under one directory,
// restartable on the same directories.
type upgradeNode struct {
	t                         *testing.T
	kubelet, simDir, stateDir string
	// simConfig is how the simulated host is opened (Dir is simDir).
	simConfig sim.Config
	sim       *sim.Sim
	p         *plugin.Plugin
}

func (n *upgradeNode) start() {
	n.t.Helper()
	cfg := n.simConfig
	cfg.Dir = n.simDir
	s, err := sim.New(cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	p, err := plugin.New(plugin.Options{
		DriverName: "sim.csi.wincsi.io", NodeID: "node-1",
		KubeletDir: n.kubelet, PathStyle: winpath.POSIX, StateDir: n.stateDir,
		Contract:             contract.Options{VolumeIDDisk: contract.VolumeIDDiskSerial, RequirePrivacy: true},
		OfflineDiskOnUnstage: true,
		Backoff:              backend.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 20},
	}, plugin.Host{Host: s.Host()})
	if err != nil {
		_ = s.Close()
		n.t.Fatal(err)
	}
	n.sim, n.p = s, p
}

// journal reads the stage journal as diagnose does (journal.OpenReadOnly):
// a snapshot of what the plugin has written.
func (n *upgradeNode) journal() *journal.Journal {
	n.t.Helper()
	j, err := journal.OpenReadOnly(n.stateDir)
	if err != nil {
		n.t.Fatal(err)
	}
	return j
}

func (n *upgradeNode) stop() {
	n.t.Helper()
	if err := n.sim.Close(); err != nil {
		n.t.Fatal(err)
	}
}

// jsonFiles returns the entry files of dir by name and the notes of
// dir/notes by key ("note <key>"; the file name derives from the key),
// decoded, with the kubelet directory written as ${KUBELET}.
func jsonFiles(t *testing.T, dir, kubelet string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, sub := range []string{"", "notes"} {
		names, err := filepath.Glob(filepath.Join(dir, sub, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range names {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal([]byte(strings.ReplaceAll(string(b), kubelet, "${KUBELET}")), &v); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if sub == "notes" {
				note, _ := v.(map[string]any)
				out[fmt.Sprint("note ", note["key"])] = note["value"]
				continue
			}
			out[filepath.Base(p)] = v
		}
	}
	return out
}

// renamed is what the previous version's files are in this version: the
// notes under the keys upgradeJournal renames them to.
func renamed(files map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range files {
		k = strings.Replace(k, `note smb-mapping:`, `note smb/mapping/`, 1)
		out[k] = v
	}
	return out
}

// credentialAttrs and credentialNotes are what the current version adds
// to the previous version's records: the credential a volume, a share's
// mapping and a target's sessions were made with (the user and the MAC of
// the secret). The previous version ignores unknown attributes, so a
// rollback reads the entries as it wrote them.
var (
	credentialAttrs = []string{"secretMAC", "chapUser", "chapSecretMAC"}
	credentialNotes = []string{"note " + smb.MappingSecretNotePrefix, "note " + iscsi.CredentialNotePrefix}
)

// withoutCredentials removes from files (jsonFiles) what credentialAttrs
// and credentialNotes name, and returns how many it removed.
func withoutCredentials(files map[string]any) int {
	n := 0
	for path, v := range files {
		if strings.HasPrefix(path, "note ") {
			for _, prefix := range credentialNotes {
				if strings.HasPrefix(path, prefix) {
					delete(files, path)
					n++
				}
			}
			continue
		}
		m, _ := v.(map[string]any)
		attrs, _ := m["attrs"].(map[string]any)
		for _, a := range credentialAttrs {
			if _, ok := attrs[a]; ok {
				delete(attrs, a)
				n++
			}
		}
	}
	return n
}

// TestStateOfThePreviousVersion: a DaemonSet upgrade keeps the state
// directory. The current version writes the entries the previous version
// wrote for the same volumes, plus its credential records (so a rollback
// reads them too), and the same notes under the one spelling of note keys
// plus its credential notes, renames the previous version's notes to it at
// start, reads the previous version's entries into its typed records, and
// restages and unstages the volumes from them,
// releasing the mapping, the sessions and the portals and taking the disks
// offline.
func TestStateOfThePreviousVersion(t *testing.T) {
	base := t.TempDir()
	n := &upgradeNode{t: t, kubelet: filepath.Join(base, "kubelet"), simDir: filepath.Join(base, "sim"), stateDir: filepath.Join(base, "state")}
	ctx := context.Background()

	// The host as the previous version left it: the three volumes staged.
	n.start()
	if _, err := n.sim.AttachDisk(sim.DiskSpec{Serial: "SER-1", Adapter: 1, Target: 0, LUN: 3}); err != nil {
		t.Fatal(err)
	}
	if err := n.sim.AddShare(sim.ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"alice": upgradePassword}}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(n.sim.Dir(), "smb", "srv", "data", "vol-smb"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := n.sim.AddTarget(sim.TargetSpec{IQN: upgradeIQN,
		Portals: []host.Portal{{Address: "10.0.0.1", Port: 3260}, {Address: "10.0.1.1", Port: 3260}},
		LUNs:    []sim.LUNSpec{{LUN: 1}}}); err != nil {
		t.Fatal(err)
	}
	reqs := upgradeVolumes(n.kubelet)
	for _, r := range reqs {
		if err := os.MkdirAll(r.StagingTargetPath, 0o750); err != nil {
			t.Fatal(err)
		}
		if _, err := n.p.Node().NodeStageVolume(ctx, r); err != nil {
			t.Fatalf("stage %s: %v", r.VolumeId, err)
		}
	}
	n.stop()

	prev := jsonFiles(t, previous, "${KUBELET}")
	if len(prev) != 4 || prev[`note smb-mapping:\\srv\data`] != "alice" {
		t.Fatalf("%s holds %v, want 3 entries and the note of the mapping", previous, prev)
	}
	want := renamed(prev)
	// Notes this version adds that the previous one never wrote are left
	// out of the comparison: it reads notes by its own keys only, so a
	// rollback ignores them.
	got := jsonFiles(t, n.stateDir, n.kubelet)
	for k := range got {
		if strings.HasPrefix(k, "note "+iscsi.TargetNotePrefix) {
			delete(got, k)
		}
	}
	if added := withoutCredentials(got); added == 0 {
		t.Errorf("the current version records no credential (the MAC of the share's password): %v", got)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the current version writes\n%v\nwhere the previous one wrote (notes renamed)\n%v\n(besides the credential records)", got, want)
	}

	// The previous version's files replace the current one's.
	if err := os.RemoveAll(n.stateDir); err != nil {
		t.Fatal(err)
	}
	old, err := filepath.Glob(filepath.Join(previous, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	oldNotes, err := filepath.Glob(filepath.Join(previous, "notes", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(old, oldNotes...) {
		path, _ := filepath.Rel(previous, p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(n.stateDir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(strings.ReplaceAll(string(b), "${KUBELET}", n.kubelet)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n.start()
	defer n.stop()
	if got := jsonFiles(t, n.stateDir, n.kubelet); !reflect.DeepEqual(got, want) {
		t.Errorf("after the start over the previous version's files the journal holds\n%v\nwant\n%v", got, want)
	}

	lun3 := uint32(3)
	wantRecords := map[string]backend.Record{
		"vol-disk":  disk.Record{Selector: contract.DiskSelector{Serial: "SER-1", LUN: &lun3}},
		"vol-smb":   smb.Record{Share: `\\srv\data`, UNC: `\\srv\data\vol-smb`, User: "alice"},
		"vol-iscsi": iscsi.Record{IQN: upgradeIQN, LUN: 1, Multipath: true, Portals: []host.Portal{{Address: "10.0.0.1", Port: 3260}, {Address: "10.0.1.1", Port: 3260}}},
	}
	decode := map[string]func(journal.Entry) (backend.Record, error){
		"disk":  func(e journal.Entry) (backend.Record, error) { return disk.DecodeRecord(e) },
		"smb":   func(e journal.Entry) (backend.Record, error) { return smb.DecodeRecord(e) },
		"iscsi": func(e journal.Entry) (backend.Record, error) { return iscsi.DecodeRecord(e) },
	}
	entries := n.journal().List(ctx)
	if len(entries) != len(wantRecords) {
		t.Fatalf("journal holds %d entries, want %d", len(entries), len(wantRecords))
	}
	for _, e := range entries {
		rec, err := decode[e.Backend](e)
		if err != nil || !reflect.DeepEqual(rec, wantRecords[e.VolumeID]) {
			t.Errorf("record of %s = %#v, %v; want %#v", e.VolumeID, rec, err, wantRecords[e.VolumeID])
			continue
		}
		if e.ResourceKey != rec.Resource() {
			t.Errorf("%s: resource key %q, its record says %q", e.VolumeID, e.ResourceKey, rec.Resource())
		}
	}
	if got, err := n.journal().ByResource(ctx, `smb:\\srv\data`); err != nil || len(got) != 1 {
		t.Errorf("ByResource(the share) = %d entries, %v; want vol-smb", len(got), err)
	}

	// A repeated stage finds the same storage in the old record; then
	// every volume unstages and releases what it used.
	for _, r := range reqs {
		if _, err := n.p.Node().NodeStageVolume(ctx, r); err != nil {
			t.Errorf("restage %s over the previous version's record: %v", r.VolumeId, err)
		}
	}
	for _, r := range reqs {
		if _, err := n.p.Node().NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: r.VolumeId, StagingTargetPath: r.StagingTargetPath}); err != nil {
			t.Errorf("unstage %s: %v", r.VolumeId, err)
		}
	}
	st := n.sim.Snapshot()
	if len(st.Mappings) != 0 || len(st.Sessions) != 0 || len(st.Portals) != 0 || len(st.Mounts) != 0 {
		t.Errorf("left on the host: mappings %v, sessions %v, portals %v, mounts %v", st.Mappings, st.Sessions, st.Portals, st.Mounts)
	}
	for _, d := range st.Disks {
		if d.Serial == "SER-1" && !d.Offline {
			t.Errorf("disk %d (SER-1) is online after its unstage", d.Number)
		}
	}
	if es := n.journal().List(ctx); len(es) != 0 {
		t.Errorf("journal entries left: %v", es)
	}
	if notes, _ := n.journal().Notes(ctx, ""); len(notes) != 0 {
		t.Errorf("journal notes left: %v", notes)
	}
}
