// Package nodestates puts a simulated node in every state that
// csi-windows-node diagnose (pkg/inventory) reports, with the plugin's own
// RPCs and the simulated host's control API, and says what a report of it
// must show. The inventory's tests check the report in process; the
// binary's tests (test/binary/diagnose) check what diagnose prints, also while the
// plugin serves the same node.
//
// The states, one volume (or resource) each:
//
//   - healthy disk, SMB and iSCSI volumes, published in pods;
//   - a disk taken offline; an SMB mapping turned Disconnected; an iSCSI
//     session whose portal stopped answering; a mount point removed under
//     a staged volume; an intent (a stage that has not completed);
//   - a journal entry whose staging path kubelet removed (the volume was
//     never unstaged);
//   - unstages that failed half-way and were never retried: an SMB mapping
//     left with no user; an iSCSI session, with its persistent login, left
//     with no user (and the staging path then removed); an iSCSI portal
//     left with no session;
//   - journal entries lost: a disk mount point and its publication, and an
//     SMB staging link, that no entry names;
//   - foreign resources: an SMB mapping and an iSCSI login made outside the
//     plugin, and another driver's publication.
//
// Test tooling only; never imported by the plugin.
package nodestates

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// The volumes.
const (
	DiskOK        = "vol-disk-ok"
	DiskOffline   = "vol-disk-offline"
	DiskUnmounted = "vol-disk-unmounted"
	DiskGone      = "vol-disk-gone"
	DiskIntent    = "vol-disk-intent"
	DiskForgotten = "vol-disk-forgotten"
	SMBOK         = "vol-smb-ok"
	SMBBad        = "vol-smb-disconnected"
	SMBHalf       = "vol-smb-half"
	SMBForgotten  = "vol-smb-forgotten"
	ISCSIOK       = "vol-iscsi-ok"
	ISCSILost     = "vol-iscsi-lost"
	ISCSIHalf     = "vol-iscsi-half"
	ISCSIPortal   = "vol-iscsi-portal"
)

// Secrets are the passwords and CHAP secrets the volumes are staged with;
// no report may show them.
var Secrets = []string{smbPass, chapPass}

const (
	smbUser  = "alice"
	smbPass  = "Diag-Pw-5b1e90c7"
	chapUser = "node1"
	chapPass = "diag-chap-0142" // CHAP secrets are 12 to 16 bytes

	iqnPrefix = "iqn.2024-01.io.wincsi.sim:"
)

// share is an SMB share of the scenario; each on its own server, so that
// mappings of different shares never meet Windows' one-user-per-server
// rule.
type share struct{ server, name, dir string }

var (
	shareOK      = share{"srv1", "data", "v"}
	shareBad     = share{"srv2", "bad", "v"}
	shareHalf    = share{"srv3", "half", "v"}
	shareForeign = share{"srv4", "foreign", "v"}
)

func (s share) root() string { return `\\` + s.server + `\` + s.name }

// target is an iSCSI target of the scenario, each behind its own portal.
type target struct {
	name   string
	portal host.Portal
}

var (
	targetOK      = target{"ok", host.Portal{Address: "10.0.1.1", Port: 3260}}
	targetLost    = target{"lost", host.Portal{Address: "10.0.2.1", Port: 3260}}
	targetHalf    = target{"half", host.Portal{Address: "10.0.3.1", Port: 3260}}
	targetPortal  = target{"portal", host.Portal{Address: "10.0.4.1", Port: 3260}}
	targetForeign = target{"foreign", host.Portal{Address: "10.0.5.1", Port: 3260}}
)

func (t target) iqn() string { return iqnPrefix + t.name }

// Want is what a report of the node must show.
type Want struct {
	// Volumes: each recorded volume's state and the problem reasons it
	// must have (at least).
	Volumes map[string]WantVolume
	// Unexplained is the exact set of unexplained items, as kind + " " +
	// ID.
	Unexplained []string
	// Foreign are resources that must be reported as foreign (kind + " "
	// + ID), never as unexplained.
	Foreign []string
	// Publications maps a volume to the target paths that must be listed
	// as its publications.
	Publications map[string][]string
	// Kubelet is the kubelet directory; OtherPublication a publication of
	// another driver that must appear nowhere.
	Kubelet          string
	OtherPublication string
}

// WantVolume is what a report must say of one volume.
type WantVolume struct {
	State   inventory.State
	Reasons []string
}

// Build puts the node under base (simnode's layout: kubelet/, sim/,
// sim/journal) in every state and returns what a report must show. The
// simulated host is closed again, so that the plugin binary may open it.
func Build(t testing.TB, base string) Want {
	t.Helper()
	ctx := context.Background()
	n, done := simnode.MustOpen(t, simnode.Options{Base: base})
	defer done()
	b := &builder{t: t, n: n, ctx: ctx}
	b.storage()

	// Healthy, published.
	b.stage(DiskOK, nil, nil)
	okPub := b.publish(DiskOK, "pod-a")
	b.stage(SMBOK, smbContext(shareOK), smbSecrets())
	smbPub := b.publish(SMBOK, "pod-b")
	b.stage(ISCSIOK, iscsiContext(targetOK), iscsiSecrets())

	// Staged, then broken under the plugin.
	b.stage(DiskOffline, nil, nil)
	b.check(n.Sim.SetDiskState(b.diskOf(DiskOffline), sim.DiskChange{Offline: ptr(true)}))
	b.stage(SMBBad, smbContext(shareBad), smbSecrets())
	b.check(n.Sim.SetMappingStatus(shareBad.root(), host.MappingDisconnected))
	b.stage(ISCSILost, iscsiContext(targetLost), iscsiSecrets())
	b.check(n.Sim.SetPortalReachable(targetLost.portal, false))
	b.stage(DiskUnmounted, nil, nil)
	b.check(n.Sim.Host().Volumes.Unmount(ctx, b.staging(DiskUnmounted)))

	// Never unstaged; kubelet removed the staging directory.
	b.stage(DiskGone, nil, nil)
	b.check(n.Sim.Host().Volumes.Unmount(ctx, b.staging(DiskGone)))
	b.check(os.Remove(b.staging(DiskGone)))

	// A stage that has not completed (an intent), and entries lost: the
	// journal on disk is edited as a crash would have left it (the
	// plugin's own copy is not used again before it is closed).
	jr, err := journal.Open(n.StateDir)
	b.check(err)
	b.check(os.MkdirAll(b.staging(DiskIntent), 0o750))
	sel := contract.DiskSelector{Serial: DiskIntent}
	b.check(jr.Put(ctx, journal.Entry{VolumeID: DiskIntent, StagingPath: b.staging(DiskIntent), Backend: "disk",
		Attrs: disk.Record{Selector: sel}.Attrs()}))

	// Unstages that failed half-way, never retried.
	b.stage(SMBHalf, smbContext(shareHalf), smbSecrets())
	b.failedUnstage(SMBHalf, sim.OpSMBUnmap)
	b.stage(ISCSIHalf, iscsiContext(targetHalf), iscsiSecrets())
	b.failedUnstage(ISCSIHalf, sim.OpISCSIUnregister)
	b.check(os.Remove(b.staging(ISCSIHalf)))
	b.stage(ISCSIPortal, iscsiContext(targetPortal), iscsiSecrets())
	b.failedUnstage(ISCSIPortal, sim.OpISCSIRemovePortal)

	// Journal entries lost.
	b.stage(DiskForgotten, nil, nil)
	forgottenPub := b.publish(DiskForgotten, "pod-c")
	b.check(jr.Delete(ctx, DiskForgotten))
	b.stage(SMBForgotten, smbContext(shareOK), smbSecrets())
	b.check(jr.Delete(ctx, SMBForgotten))

	// Made outside the plugin.
	h := n.Sim.Host()
	b.check(h.SMB.Map(ctx, shareForeign.root(), host.Credential{User: smbUser, Password: host.NewSecret(smbPass)}, false))
	b.check(h.ISCSI.AddPortal(ctx, targetForeign.portal, "", nil))
	foreign, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: targetForeign.iqn(), Portal: targetForeign.portal,
		Auth: host.AuthOneWay, CHAP: host.CHAP{User: chapUser, Secret: host.NewSecret(chapPass)}})
	b.check(err)
	other := b.otherDriverPublication()

	half := b.session(targetHalf)
	halfPortal := portalID(targetHalf.portal)
	return Want{
		Volumes: map[string]WantVolume{
			DiskOK:        {inventory.StateHealthy, nil},
			SMBOK:         {inventory.StateHealthy, nil},
			ISCSIOK:       {inventory.StateHealthy, nil},
			DiskOffline:   {inventory.StateUnhealthy, []string{"DiskOffline"}},
			SMBBad:        {inventory.StateUnhealthy, []string{"MappingUnavailable"}},
			ISCSILost:     {inventory.StateUnhealthy, []string{"SessionLost"}},
			DiskUnmounted: {inventory.StateUnhealthy, []string{"MountPointMissing"}},
			DiskGone:      {inventory.StateGone, []string{"StagingPathGone"}},
			DiskIntent:    {inventory.StateStaging, []string{"StageIncomplete"}},
			SMBHalf:       {inventory.StateUnhealthy, []string{"LinkMissing"}},
			ISCSIHalf:     {inventory.StateGone, []string{"StagingPathGone"}},
			ISCSIPortal:   {inventory.StateUnhealthy, []string{"MountPointMissing"}},
		},
		Unexplained: []string{
			"smb-mapping " + shareHalf.root(),
			"iscsi-session " + half.SessionID,
			"iscsi-persistent-login " + half.TargetNodeAddress + "@" + halfPortal,
			"iscsi-portal " + portalID(targetPortal.portal),
			"mount-point " + b.staging(DiskForgotten),
			"link " + forgottenPub,
			"link " + b.staging(SMBForgotten),
			"journal-entry " + DiskGone,
			"journal-entry " + ISCSIHalf,
		},
		Foreign: []string{
			"smb-mapping " + shareForeign.root(),
			"iscsi-session " + foreign.SessionID,
			"iscsi-portal " + portalID(targetForeign.portal),
		},
		Publications:     map[string][]string{DiskOK: {okPub}, SMBOK: {smbPub}},
		Kubelet:          n.Kubelet,
		OtherPublication: other,
	}
}

// Check fails the test unless the report shows what w says.
func Check(t testing.TB, rep *inventory.Report, w Want) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range rep.Volumes {
		seen[v.VolumeID] = true
		want, ok := w.Volumes[v.VolumeID]
		if !ok {
			t.Errorf("volume %s is reported; the journal does not record it", v.VolumeID)
			continue
		}
		if v.State != want.State {
			t.Errorf("volume %s: state %s, want %s (problems %+v)", v.VolumeID, v.State, want.State, v.Problems)
		}
		var reasons []string
		for _, p := range v.Problems {
			reasons = append(reasons, p.Reason)
		}
		for _, r := range want.Reasons {
			if !slices.Contains(reasons, r) {
				t.Errorf("volume %s: problems %v, want one with reason %s", v.VolumeID, reasons, r)
			}
		}
		if want.State == inventory.StateHealthy && len(v.Problems) != 0 {
			t.Errorf("volume %s is healthy with problems %+v", v.VolumeID, v.Problems)
		}
		var pubs []string
		for _, p := range v.Publications {
			pubs = append(pubs, p.TargetPath)
		}
		if !slices.Equal(pubs, w.Publications[v.VolumeID]) {
			t.Errorf("volume %s: publications %v, want %v", v.VolumeID, pubs, w.Publications[v.VolumeID])
		}
		checkBacking(t, v)
	}
	for id := range w.Volumes {
		if !seen[id] {
			t.Errorf("volume %s is missing from the report", id)
		}
	}

	var got []string
	for _, it := range rep.Unexplained {
		got = append(got, string(it.Kind)+" "+it.ID)
		if it.Reason == "" {
			t.Errorf("unexplained %s %s has no reason", it.Kind, it.ID)
		}
	}
	want := slices.Clone(w.Unexplained)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("unexplained:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}

	owners := map[string]inventory.Owner{}
	for _, r := range rep.Resources {
		owners[string(r.Kind)+" "+r.ID] = r.Owner
	}
	for _, f := range w.Foreign {
		if owners[f] != inventory.OwnerForeign {
			t.Errorf("resource %s: owner %q, want foreign", f, owners[f])
		}
	}
	if len(rep.Incomplete) != 0 {
		t.Errorf("incomplete report: %q", rep.Incomplete)
	}
}

// checkBacking checks that a volume that is mounted says what backs it.
func checkBacking(t testing.TB, v inventory.Volume) {
	t.Helper()
	switch v.VolumeID {
	case DiskOK, DiskOffline:
		if v.Disk == nil || v.Disk.DiskNumber == nil || v.Disk.Serial != v.VolumeID {
			t.Errorf("volume %s: disk %+v, want its disk's number and serial", v.VolumeID, v.Disk)
		}
		if v.VolumeID == DiskOK && (v.Disk.VolumeGUID == "" || v.Disk.MountPoint != v.StagingPath) {
			t.Errorf("volume %s: disk %+v, want the volume GUID and mount point", v.VolumeID, v.Disk)
		}
		if v.VolumeID == DiskOffline && !v.Disk.Offline {
			t.Errorf("volume %s: disk %+v, want it offline", v.VolumeID, v.Disk)
		}
	case SMBOK:
		if v.SMB == nil || v.SMB.Share != strings.ToLower(shareOK.root()) || v.SMB.User != smbUser ||
			v.SMB.Mapping != "OK" || !v.SMB.MappedByPlugin || v.SMB.MappingUser != smbUser {
			t.Errorf("volume %s: smb %+v", v.VolumeID, v.SMB)
		}
	case ISCSIOK:
		if v.ISCSI == nil || v.ISCSI.Target != targetOK.iqn() || v.ISCSI.LUN != 1 || len(v.ISCSI.Sessions) != 1 ||
			!v.ISCSI.Sessions[0].Connected || v.ISCSI.Disk == nil || v.ISCSI.Disk.DiskNumber == nil {
			t.Errorf("volume %s: iscsi %+v", v.VolumeID, v.ISCSI)
		}
	case ISCSILost:
		if v.ISCSI == nil || len(v.ISCSI.Sessions) != 1 || v.ISCSI.Sessions[0].Connected {
			t.Errorf("volume %s: iscsi %+v, want its disconnected session", v.VolumeID, v.ISCSI)
		}
	}
}

// builder drives the plugin and the simulated host.
type builder struct {
	t   testing.TB
	n   *simnode.Node
	ctx context.Context
}

func (b *builder) check(err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
}

func (b *builder) staging(vol string) string { return simnode.StagingPath(b.n.Kubelet, vol) }

// storage creates the shares and targets.
func (b *builder) storage() {
	b.t.Helper()
	for _, s := range []share{shareOK, shareBad, shareHalf, shareForeign} {
		b.check(b.n.Sim.AddShare(sim.ShareSpec{Server: s.server, Share: s.name, Users: map[string]string{smbUser: smbPass}}))
		b.check(os.MkdirAll(filepath.Join(b.n.SimDir, "smb", s.server, s.name, s.dir), 0o750))
	}
	for _, tg := range []target{targetOK, targetLost, targetHalf, targetPortal, targetForeign} {
		b.check(b.n.Sim.AddTarget(sim.TargetSpec{IQN: tg.iqn(), Portals: []host.Portal{tg.portal},
			LUNs: []sim.LUNSpec{{LUN: 1}}, CHAP: &host.CHAP{User: chapUser, Secret: host.NewSecret(chapPass)}}))
	}
}

func smbContext(s share) map[string]string {
	return map[string]string{"source": "//" + s.server + "/" + s.name, "subDir": s.dir}
}

func smbSecrets() map[string]string {
	return map[string]string{"username": smbUser, "password": smbPass}
}

// iscsiContext is the context of the volume on LUN 1 of the target.
func iscsiContext(tg target) map[string]string {
	return map[string]string{"targetPortal": tg.portal.String(), "iqn": tg.iqn(), "lun": "1", "sessionCHAPAuth": "true"}
}

func iscsiSecrets() map[string]string {
	return map[string]string{"node.session.auth.username": chapUser, "node.session.auth.password": chapPass}
}

func (b *builder) stage(vol string, vctx, secrets map[string]string) {
	b.t.Helper()
	if err := b.n.Stage(b.ctx, vol, vctx, secrets); err != nil {
		b.t.Fatalf("stage %s: %v", vol, err)
	}
}

func (b *builder) publish(vol, pod string) string {
	b.t.Helper()
	target := simnode.TargetPath(b.n.Kubelet, pod, vol)
	b.check(os.MkdirAll(filepath.Dir(target), 0o750))
	_, err := b.n.Server.NodePublishVolume(b.ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: b.staging(vol),
		TargetPath: target, VolumeCapability: simnode.MountCap})
	if err != nil {
		b.t.Fatalf("publish %s: %v", vol, err)
	}
	return target
}

// failedUnstage unstages vol with every call of op failing, as an unstage
// that fails half-way; the plugin keeps the volume's journal entry.
func (b *builder) failedUnstage(vol, op string) {
	b.t.Helper()
	b.check(b.n.Sim.Faults().Add(sim.Rule{Op: op, Err: "internal"}))
	defer b.n.Sim.Faults().Clear()
	if err := b.n.Unstage(b.ctx, vol); err == nil {
		b.t.Fatalf("unstage %s with %s failing succeeded", vol, op)
	}
	if _, ok := b.n.Journal(b.t).Get(b.ctx, vol); !ok {
		b.t.Fatalf("the failed unstage of %s dropped its journal entry", vol)
	}
}

// diskOf returns the number of the disk whose serial is the volume ID.
func (b *builder) diskOf(vol string) uint32 {
	b.t.Helper()
	for _, d := range b.n.Sim.Snapshot().Disks {
		if d.Serial == vol {
			return d.Number
		}
	}
	b.t.Fatalf("no disk of volume %s", vol)
	return 0
}

// session returns the one session to the target.
func (b *builder) session(tg target) host.ISCSISession {
	b.t.Helper()
	ss, err := b.n.Sim.Host().ISCSI.Sessions(b.ctx, tg.iqn())
	b.check(err)
	if len(ss) != 1 {
		b.t.Fatalf("target %s: %d sessions, want 1", tg.iqn(), len(ss))
	}
	return ss[0]
}

// otherDriverPublication makes another driver's publication: a pod's
// target path linking to that driver's staging path.
func (b *builder) otherDriverPublication() string {
	b.t.Helper()
	staging := filepath.Join(b.n.Kubelet, "plugins", "kubernetes.io", "csi", "other.csi.example.com", "x", "globalmount")
	target := simnode.TargetPath(b.n.Kubelet, "pod-other", "pv-other")
	b.check(os.MkdirAll(staging, 0o750))
	b.check(os.MkdirAll(filepath.Dir(target), 0o750))
	b.check(os.Symlink(staging, target))
	return target
}

func portalID(p host.Portal) string { return strings.ToLower(p.Address) + ":" + itoa(int(p.Port)) }

func itoa(n int) string { return strconv.Itoa(n) }

func ptr[T any](v T) *T { return &v }
