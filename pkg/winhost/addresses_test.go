package winhost_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// TestISCSIHealthOfATargetAnsweringElsewhere: the iSCSI backend over the
// scripted executor, for a multipath volume whose two portals are not the
// addresses the target answers on: a host name (its connection reports the
// address the name resolves to) and a group address whose logins the array
// redirects (its connection reports where it was moved). Health must not
// say a path is down for that: the name is resolved, and the redirected
// session is the one the target's record says was made through the group
// address. Without the record, the redirected session is matched to
// nothing, and the group portal is reported down rather than guessed.
func TestISCSIHealthOfATargetAnsweringElsewhere(t *testing.T) {
	const (
		named = "array-a.example.com"
		group = "10.0.6.1"
		id1   = "ffffe0001234a010-4000013700000002"
		id2   = "ffffe0001234a010-4000013700000003"
	)
	s1, s2 := iscSessionPath, iscSessionPath+"2"
	spec := &contract.ISCSISpec{IQN: iscIQN, LUN: 0, Multipath: true,
		Portals: []host.Portal{{Address: named, Port: 3260}, {Address: group, Port: 3260}}}
	for _, c := range []struct {
		name   string
		record bool
		want   []string
	}{
		{name: "with the record", record: true},
		{name: "without the record", want: []string{"PathDown"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := scripted.New(t)
			h := winhost.New(e)
			jr, err := journal.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			b := iscsi.New(h, disk.New(h, jr, disk.Options{}), jr, iscsi.Options{})
			rec, err := b.Record(contract.Volume{Kind: contract.KindISCSI, ISCSI: spec})
			if err != nil {
				t.Fatal(err)
			}
			entry := journal.Entry{VolumeID: "pv-1", StagingPath: staging, Backend: string(contract.KindISCSI),
				ResourceKey: rec.Resource(), Attrs: rec.Attrs(), Staged: true}
			if c.record {
				// What the stage that logged in through the group
				// address wrote.
				if err := jr.PutNote(context.Background(), iscsi.TargetNotePrefix+iscIQN,
					`{"sessions":{"`+id2+`":{"portal":"10.0.6.1:3260"}}}`); err != nil {
					t.Fatal(err)
				}
			}
			healthyDisk(e)
			e.ExpectQuery(iscNS, wqlSessions, scripted.Reply{Instances: []winhost.Instance{
				iscSessionInst(s1, id1, iscIQN, false), iscSessionInst(s2, id2, iscIQN, false)}}).
				ExpectAssociators(iscNS, s1, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection",
					scripted.Reply{Instances: []winhost.Instance{iscConnInst("10.0.5.1", 3260)}}).
				ExpectAssociators(iscNS, s2, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection",
					scripted.Reply{Instances: []winhost.Instance{iscConnInst("10.0.6.11", 3260)}}).
				ExpectWin32("LookupHost", []any{named}, scripted.Reply{Strings: []string{"10.0.5.1"}})
			conds, err := b.Health(context.Background(), backend.HealthRequest{VolumeID: "pv-1", StagingPath: staging, Entry: entry})
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, c := range conds {
				reasons = append(reasons, c.Reason)
			}
			if !reflect.DeepEqual(reasons, c.want) {
				t.Fatalf("conditions %q (%+v), want %q", reasons, conds, c.want)
			}
		})
	}
}

// healthyDisk scripts the disk backend's health check of a staged volume
// on a healthy disk (TestBackendHealth's calls).
func healthyDisk(e *scripted.Executor) {
	d := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT}
	e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
	e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
	e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(d)}})
	e.ExpectQuery(ns, wqlVolume(guidA), scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, 10<<30)}})
}
