//go:build linux

package platforms

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// Found by review: the presets of earlier releases recorded their disk
// selectors as a serial matched by "contains" (aws-ebs) and page 83's last
// field (gce-pd); the presets now derive their own selectors, so a volume
// staged before the upgrade was refused at its restage (AlreadyExists: the
// journal's record named other storage). The old records are read as the
// selectors the presets derive now: the volume restages, its record is
// rewritten in the new form, and it unstages (its disk taken offline).
func TestUpgradeFromTheOldPresetSelectors(t *testing.T) {
	for _, tt := range []struct {
		name, table, preset, volumeID string
		legacy, upgraded              string // the journal's diskSelector before and after the restage
		disk                          uint32
	}{
		{name: "aws-ebs: a serial that contains the volume ID", table: "aws-nitro.yaml", preset: "aws-ebs",
			volumeID: "vol-0abcdef0123456789", disk: 2,
			legacy:   `{"Serial":"vol0abcdef0123456789","SerialMatch":1,"Page83":"","Page83Match":0,"LUN":null,"Target":null,"Bus":null,"Location":"","Number":null}`,
			upgraded: `"EBSVolumeID":"vol-0abcdef0123456789"`},
		{name: "gce-pd: page 83's last field", table: "gcp-scsi.yaml", preset: "gce-pd",
			volumeID: "projects/p/zones/us-central1-a/disks/pvc-9f8e7d6c", disk: 1,
			legacy:   `{"Serial":"","SerialMatch":0,"Page83":"pvc-9f8e7d6c","Page83Match":2,"LUN":null,"Target":null,"Bus":null,"Location":"","Number":null}`,
			upgraded: `"GCEDeviceName":"pvc-9f8e7d6c"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			cfg := filepath.Join(base, "sim-config.yaml")
			table, err := os.ReadFile(filepath.Join("testdata", tt.table))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, table, 0o600); err != nil {
				t.Fatal(err)
			}
			preset := "--disk-preset=" + tt.preset
			var n *simnode.Node
			open := func(args ...string) {
				t.Helper()
				if n != nil {
					if err := n.Close(); err != nil {
						t.Fatal(err)
					}
				}
				if n, err = simnode.Open(simnode.Options{Base: base, NoAutoAttach: true, Args: append(args, preset), Backoff: quick}); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				if n != nil {
					_ = n.Close()
				}
			})
			ctx := context.Background()
			// rewrite sets the volume's recorded selector with the plugin
			// stopped, and returns the one it replaced.
			rewrite := func(selector string) string {
				t.Helper()
				if err := n.Close(); err != nil {
					t.Fatal(err)
				}
				jr, err := journal.Open(n.StateDir)
				if err != nil {
					t.Fatal(err)
				}
				e, ok := jr.Get(ctx, tt.volumeID)
				if !ok {
					t.Fatalf("no journal entry for %s", tt.volumeID)
				}
				was := e.Attrs["diskSelector"]
				e.Attrs["diskSelector"] = selector
				if err := jr.Put(ctx, e); err != nil {
					t.Fatal(err)
				}
				n = nil
				open()
				return was
			}

			open("--sim-config=" + cfg)
			staging := simnode.StagingPath(n.Kubelet, "vol")
			if err := os.MkdirAll(staging, 0o750); err != nil {
				t.Fatal(err)
			}
			stage := &csi.NodeStageVolumeRequest{VolumeId: tt.volumeID, StagingTargetPath: staging, VolumeCapability: simnode.MountCap}
			if _, err := n.Server.NodeStageVolume(ctx, stage); err != nil {
				t.Fatalf("stage: %v", err)
			}
			// The record as an earlier release wrote it.
			rewrite(tt.legacy)
			if _, err := n.Server.NodeStageVolume(ctx, stage); err != nil {
				t.Fatalf("restage after the upgrade: %v", err)
			}
			// Once more as an earlier release wrote it: the unstage finds
			// the disk by the old record.
			if now := rewrite(tt.legacy); !strings.Contains(now, tt.upgraded) {
				t.Errorf("the record after the restage: %s, want %s", now, tt.upgraded)
			}
			if _, err := n.Server.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: tt.volumeID, StagingTargetPath: staging}); err != nil {
				t.Fatalf("unstage: %v", err)
			}
			for _, d := range n.Sim.Snapshot().Disks {
				if d.Number == tt.disk && !d.Offline {
					t.Errorf("disk %d is online after the unstage", d.Number)
				}
			}
		})
	}
}
