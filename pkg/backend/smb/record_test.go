package smb_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// recordPW is the password of the record tests (which run without the
// simulated host, so they do not share env_test.go's fixtures).
const recordPW = "Record-Pw-3c1e9d7f"

func smbVolume(t *testing.T, source, subDir string, secrets map[string]string) contract.Volume {
	t.Helper()
	vc := map[string]string{"source": source}
	if secrets == nil {
		vc["mapWithoutCredentials"] = "true"
	}
	if subDir != "" {
		vc["subDir"] = subDir
	}
	v, err := contract.Parse(contract.Request{VolumeID: "v", VolumeContext: vc, Secrets: secrets}, contract.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func entryOf(id string, r backend.Record) journal.Entry {
	return journal.Entry{VolumeID: id, Backend: "smb", ResourceKey: r.Resource(), Attrs: r.Attrs()}
}

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		vol     contract.Volume
		want    smb.Record
		storage string
	}{
		{"user and directory", smbVolume(t, `//Srv/Data`, "pvc-1", map[string]string{"username": "alice", "password": recordPW}),
			smb.Record{Share: `\\srv\data`, UNC: `\\Srv\Data\pvc-1`, User: "alice"}, `\\srv\data\pvc-1`},
		{"share root without credentials", smbVolume(t, `\\srv\open`, "", nil),
			smb.Record{Share: `\\srv\open`, UNC: `\\srv\open`}, `\\srv\open`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := smb.RecordOf(tt.vol.SMB)
			if rec != tt.want {
				t.Fatalf("RecordOf = %+v, want %+v", rec, tt.want)
			}
			if rec.Resource() != `smb:`+tt.want.Share || rec.Storage() != tt.storage {
				t.Errorf("Resource %q, Storage %q", rec.Resource(), rec.Storage())
			}
			for k, v := range rec.Attrs() {
				if strings.Contains(v, recordPW) {
					t.Errorf("attribute %s holds the password", k)
				}
			}
			got, err := smb.DecodeRecord(entryOf("v", rec))
			if err != nil || got != rec {
				t.Errorf("DecodeRecord = %+v, %v; want %+v", got, err, rec)
			}
		})
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	good := entryOf("v", smb.Record{Share: `\\srv\data`, UNC: `\\srv\data\v`})
	tests := []struct {
		name   string
		change func(*journal.Entry)
	}{
		{"another backend's entry", func(e *journal.Entry) { e.Backend = "iscsi" }},
		{"no resource key", func(e *journal.Entry) { e.ResourceKey = "" }},
		{"another resource", func(e *journal.Entry) { e.ResourceKey = "iscsi:iqn.x" }},
		{"an empty share", func(e *journal.Entry) { e.ResourceKey = "smb:" }},
		{"the zero entry of a volume the journal does not know", func(e *journal.Entry) { *e = journal.Entry{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good
			tt.change(&e)
			if rec, err := smb.DecodeRecord(e); !errors.Is(err, backend.ErrNoRecord) {
				t.Fatalf("DecodeRecord = %+v, %v; want ErrNoRecord", rec, err)
			}
		})
	}
	// The node's Backend methods give the same.
	b := smb.New(host.Host{}, nil, smb.Options{})
	if _, err := b.Record(contract.Volume{Kind: contract.KindSMB}); err == nil {
		t.Error("Record of a volume without an smb spec succeeded")
	}
	rec, err := b.DecodeRecord(good)
	if err != nil || !reflect.DeepEqual(rec, smb.Record{Share: `\\srv\data`, UNC: `\\srv\data\v`}) {
		t.Errorf("Backend.DecodeRecord = %+v, %v", rec, err)
	}
}

// TestCredentialCounts: the staged volumes whose recorded credential
// differs from their share's mapping's, by kind; intents, shares without a
// note and records without a MAC are not counted as drift. Two shares of
// one server mapped by one user with two passwords count their volumes as
// drift (ServerDrift); another user's share of the server, the same
// user's share of another server, or a note of a share no staged volume
// uses, does not.
func TestCredentialCounts(t *testing.T) {
	ctx := context.Background()
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(id, share, user, mac string, staged bool) {
		t.Helper()
		r := smb.Record{Share: share, UNC: share + `\` + id, User: user, SecretMAC: mac}
		e := entryOf(id, r)
		e.Staged, e.StagingPath = staged, "/k/"+id
		if err := jr.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		smb.MappingNotePrefix + `\\srv\data`: "alice", smb.MappingSecretNotePrefix + `\\srv\data`: "m1",
		smb.MappingNotePrefix + `\\old\legacy`: "alice", // made by an earlier version: no MAC
		smb.MappingNotePrefix + `\\nas\a`:      "alice", smb.MappingSecretNotePrefix + `\\nas\a`: "m1",
		smb.MappingNotePrefix + `\\nas\b`: "Alice", smb.MappingSecretNotePrefix + `\\nas\b`: "m2",
		smb.MappingNotePrefix + `\\nas\c`: "bob", smb.MappingSecretNotePrefix + `\\nas\c`: "m9",
		smb.MappingNotePrefix + `\\10.0.0.5\a`: "alice", smb.MappingSecretNotePrefix + `\\10.0.0.5\a`: "m5",
		// A note left behind by a mapping no staged volume uses.
		smb.MappingNotePrefix + `\\10.0.0.5\gone`: "alice", smb.MappingSecretNotePrefix + `\\10.0.0.5\gone`: "m6",
	} {
		if err := jr.PutNote(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	put("same", `\\srv\data`, "ALICE", "m1", true)
	put("drift", `\\srv\data`, "alice", "m2", true)
	put("drift-intent", `\\srv\data`, "alice", "m2", false)
	put("other", `\\srv\data`, "bob", "m3", true)
	put("legacy", `\\old\legacy`, "alice", "m2", true)
	put("unmapped", `\\srv\none`, "bob", "m2", true)
	put("nas-a", `\\nas\a`, "alice", "m1", true)
	put("nas-b", `\\nas\b`, "alice", "m2", true)
	put("nas-c", `\\nas\c`, "bob", "m9", true)
	put("nas-by-address", `\\10.0.0.5\a`, "alice", "m5", true)
	drift, other, err := smb.CredentialCounts(ctx, jr)
	if err != nil || drift != 3 || other != 1 {
		t.Fatalf("CredentialCounts = %d drift, %d other, %v; want 3 (drift, nas-a, nas-b) and 1", drift, other, err)
	}
}
