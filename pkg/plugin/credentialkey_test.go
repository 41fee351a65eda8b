package plugin

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// TestNewCredentialKeyLogged: a credential key made while the journal
// holds MACs made under an earlier key is logged once, at -v=0, with the
// number of those records and never the key; a key read back, or one made
// on a journal without such records, is not.
func TestNewCredentialKeyLogged(t *testing.T) {
	const msg = "Made a new credential key"
	for _, tc := range []struct {
		name    string
		notes   map[string]string
		entries []journal.Entry
		want    string // "" for no line
	}{
		{name: "smb mapping", want: "keyedRecords=1", notes: map[string]string{
			smb.MappingSecretNotePrefix + `\\srv\data`: "0f1e2d", smb.MappingNotePrefix + `\\srv\data`: "alice"}},
		{name: "iscsi sessions", want: "keyedRecords=2", notes: map[string]string{
			iscsi.CredentialNotePrefix + "iqn.2026-01.io.example:a": backend.Credential{User: "node1", SecretMAC: "0a0b"}.Encode(),
			iscsi.CredentialNotePrefix + "iqn.2026-01.io.example:b": backend.Credential{User: "node1", SecretMAC: "0c0d"}.Encode(),
			iscsi.CredentialNotePrefix + "iqn.2026-01.io.example:c": backend.Credential{}.Encode()}},
		{name: "volume entries", want: "keyedRecords=3", entries: []journal.Entry{
			entryOf("smb-keyed", "smb", smb.Record{Share: `\\srv\data`, UNC: `\\srv\data\a`, User: "alice", SecretMAC: "0f1e"}),
			entryOf("smb-keyed-2", "smb", smb.Record{Share: `\\srv\data`, UNC: `\\srv\data\c`, User: "alice", SecretMAC: "0f1e"}),
			entryOf("smb-unkeyed", "smb", smb.Record{Share: `\\srv\data`, UNC: `\\srv\data\b`}),
			entryOf("iscsi-keyed", "iscsi", iscsi.Record{IQN: "iqn.2026-01.io.example:a", CHAPUser: "node1", CHAPSecretMAC: "0a0b"}),
			entryOf("iscsi-unkeyed", "iscsi", iscsi.Record{IQN: "iqn.2026-01.io.example:b"}),
			// A disk volume's attributes are never read as either backend's.
			{VolumeID: "disk-1", StagingPath: "/staging/disk-1", Backend: "disk", Attrs: map[string]string{"secretMAC": "0f1e", "chapSecretMAC": "0a0b"}}}},
		{name: "no secret recorded", notes: map[string]string{
			smb.MappingNotePrefix + `\\srv\data`: "alice", iscsi.CredentialNotePrefix + "iqn.2026-01.io.example:c": backend.Credential{}.Encode()}},
		{name: "empty journal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			var buf bytes.Buffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(0), textlogger.Output(&buf)))
			start := func() []byte {
				t.Helper()
				jr, err := journal.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range tc.entries {
					if err := jr.Put(ctx, e); err != nil {
						t.Fatal(err)
					}
				}
				for k, v := range tc.notes {
					if err := jr.PutNote(ctx, k, v); err != nil {
						t.Fatal(err)
					}
				}
				key, err := jr.CredentialKey()
				if err != nil {
					t.Fatal(err)
				}
				logNewCredentialKey(ctx, logger, jr, jr.KeyMade(), dir)
				return key
			}
			key := start()
			start() // a restart reads the key back
			var lines []string
			for _, l := range strings.Split(buf.String(), "\n") {
				if strings.Contains(l, msg) {
					lines = append(lines, l)
				}
			}
			if tc.want == "" {
				if len(lines) != 0 {
					t.Fatalf("logged %q without records made under an earlier key", lines)
				}
				return
			}
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[0], "I") {
				t.Fatalf("lines %q; want one info line with %s", lines, tc.want)
			}
			if strings.Contains(buf.String(), hex.EncodeToString(key)) {
				t.Fatal("the key was logged")
			}
		})
	}
}

// entryOf is the staged journal entry of a volume of backend kind with rec.
func entryOf(id, kind string, rec backend.Record) journal.Entry {
	return journal.Entry{VolumeID: id, StagingPath: "/staging/" + id, Backend: kind,
		ResourceKey: rec.Resource(), Attrs: rec.Attrs(), Staged: true}
}
