package plugin

import (
	"context"
	"maps"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// TestUpgradeJournalRenamesNotes: the note keys earlier versions wrote are
// renamed to the one spelling, once; a rename a crash cut short (both keys
// present) keeps the new key's value; other notes are left alone.
func TestUpgradeJournalRenamesNotes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jr, err := journal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		`smb-mapping:\\srv\data`:      "alice",
		`smb-mapping:\\srv\other`:     "bob",
		`smb/mapping/\\srv\other`:     "carol",
		"iscsi/initiator-chap-secret": `{"salt":"00"}`,
		"disk/partitioning/vol-1":     `disk 3 serial "s"`,
	} {
		if err := jr.PutNote(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		`smb/mapping/\\srv\data`:      "alice",
		`smb/mapping/\\srv\other`:     "carol",
		"iscsi/initiator/chap-secret": `{"salt":"00"}`,
		"disk/partitioning/vol-1":     `disk 3 serial "s"`,
	}
	for range 2 {
		if err := upgradeJournal(ctx, jr); err != nil {
			t.Fatal(err)
		}
		reread, err := journal.OpenReadOnly(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := reread.Notes(ctx, ""); !maps.Equal(got, want) {
			t.Fatalf("notes after the upgrade:\n%v\nwant\n%v", got, want)
		}
	}
}
