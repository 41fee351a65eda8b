//go:build linux

// Linux only: the simulated host runs only on Linux.

package inventory_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// refusedJournal is an empty journal that refused two files, as the
// journal does on Windows for files the plugin did not write.
type refusedJournal struct{}

func (refusedJournal) List(context.Context) []journal.Entry { return nil }
func (refusedJournal) Notes(context.Context, string) (map[string]string, error) {
	return map[string]string{}, nil
}
func (refusedJournal) Refused() []journal.Refused {
	return []journal.Refused{
		{Path: `C:\state\a.json`, Owner: "S-1-5-21-1-2-3-1001", Reason: "owned by neither SYSTEM, Administrators nor the plugin",
			VolumeID: "vol-old", ResourceKey: "iscsi:iqn.2026-01.io.example:t"},
		{Path: `C:\state\b.json`, Reason: "its DACL denies the plugin even its owner"},
	}
}

// TestRefusedFilesAreUnexplained: a refused journal file is something
// nothing explains, so diagnose lists it and the orphan sweep reports it
// every round, with the resource it keeps.
func TestRefusedFilesAreUnexplained(t *testing.T) {
	s, err := sim.New(sim.Config{Dir: t.TempDir(), Logger: klog.Background()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root, err := winpath.NewRoot(t.TempDir(), winpath.POSIX)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := inventory.Take(context.Background(), inventory.Input{Host: s.Host(), Journal: refusedJournal{}, Root: root, DriverName: "d.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var got []inventory.Item
	for _, it := range rep.Unexplained {
		if it.Kind == inventory.KindRefusedFile {
			got = append(got, it)
		}
	}
	if len(got) != 2 || got[0].ID != `C:\state\a.json` || got[1].ID != `C:\state\b.json` ||
		!strings.Contains(got[0].Reason, "it names iscsi:iqn.2026-01.io.example:t (volume vol-old), which the plugin keeps") ||
		!strings.Contains(got[1].Reason, "its DACL denies the plugin even its owner") || strings.Contains(got[1].Reason, "names") {
		t.Fatalf("unexplained refused files: %+v", got)
	}
}
