package iscsi_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// The record tests run without the simulated host; the backend's cases on
// it, through the whole plugin, are in test/system/iscsi.
const (
	recIQN      = "iqn.2024-01.test.record:a"
	recIQN2     = "iqn.2024-01.test.record:b"
	recCHAPUser = "record-user"
	recCHAP     = "record-chap-01"
	recMutual   = "record-mutual1"
	recPortal1  = "10.9.0.1"
	recPortal2  = "10.9.1.1:3261"
)

func iscsiVolume(t *testing.T, vctx, secrets map[string]string) contract.Volume {
	t.Helper()
	vol, err := contract.Parse(contract.Request{VolumeID: "v", VolumeContext: vctx, Secrets: secrets}, contract.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return vol
}

func entryOf(id string, r backend.Record) journal.Entry {
	return journal.Entry{VolumeID: id, Backend: "iscsi", ResourceKey: r.Resource(), Attrs: r.Attrs()}
}

func TestRecordRoundTrip(t *testing.T) {
	p1 := host.Portal{Address: recPortal1, Port: 3260}
	p2 := host.Portal{Address: "10.9.1.1", Port: 3261}
	tests := []struct {
		name          string
		vctx, secrets map[string]string
		want          iscsi.Record
	}{
		{"one portal", map[string]string{"targetPortal": recPortal1, "iqn": recIQN, "lun": "1"}, nil,
			iscsi.Record{IQN: recIQN, LUN: 1, Portals: []host.Portal{p1}}},
		{"multipath with mutual CHAP, IQN in upper case",
			map[string]string{"targetPortal": recPortal1, "portals": recPortal2, "iqn": strings.ToUpper(recIQN2), "lun": "0",
				"multipath": "true", "sessionCHAPAuth": "true"},
			map[string]string{"node.session.auth.username": recCHAPUser, "node.session.auth.password": recCHAP,
				"node.session.auth.password_in": recMutual},
			iscsi.Record{IQN: recIQN2, LUN: 0, Multipath: true, Portals: []host.Portal{p1, p2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := iscsi.RecordOf(iscsiVolume(t, tt.vctx, tt.secrets).ISCSI)
			if !reflect.DeepEqual(rec, tt.want) {
				t.Fatalf("RecordOf = %+v, want %+v", rec, tt.want)
			}
			if rec.Resource() != "iscsi:"+strings.ToLower(tt.want.IQN) {
				t.Errorf("Resource %q", rec.Resource())
			}
			for k, v := range rec.Attrs() {
				for _, secret := range []string{recCHAP, recMutual, recCHAPUser} {
					if strings.Contains(v, secret) {
						t.Errorf("attribute %s holds a CHAP user or secret", k)
					}
				}
			}
			got, err := iscsi.DecodeRecord(entryOf("v", rec))
			if err != nil || !reflect.DeepEqual(got, rec) {
				t.Errorf("DecodeRecord = %+v, %v; want %+v", got, err, rec)
			}
		})
	}
	// Storage tells LUNs and targets apart, not portals.
	a := iscsi.Record{IQN: recIQN, LUN: 1, Portals: []host.Portal{p1}}
	for _, other := range []iscsi.Record{{IQN: recIQN, LUN: 2}, {IQN: recIQN2, LUN: 1}} {
		if a.Storage() == other.Storage() {
			t.Errorf("%+v and %+v have the same Storage %q", a, other, a.Storage())
		}
	}
	if same := (iscsi.Record{IQN: strings.ToUpper(recIQN), LUN: 1, Portals: []host.Portal{p2}}); a.Storage() != same.Storage() {
		t.Errorf("Storage %q and %q differ for the same LUN", a.Storage(), same.Storage())
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	good := entryOf("v", iscsi.Record{IQN: recIQN, LUN: 1, Portals: []host.Portal{{Address: recPortal1, Port: 3260}}})
	tests := []struct {
		name   string
		change func(*journal.Entry)
	}{
		{"another backend's entry", func(e *journal.Entry) { e.Backend = "disk" }},
		{"no target", func(e *journal.Entry) { e.ResourceKey = "" }},
		{"an SMB resource", func(e *journal.Entry) { e.ResourceKey = `smb:\\srv\x` }},
		{"no LUN", func(e *journal.Entry) { delete(e.Attrs, "lun") }},
		{"a LUN that is no number", func(e *journal.Entry) { e.Attrs["lun"] = "one" }},
		{"the zero entry of a volume the journal does not know", func(e *journal.Entry) { *e = journal.Entry{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good
			e.Attrs = map[string]string{}
			for k, v := range good.Attrs {
				e.Attrs[k] = v
			}
			tt.change(&e)
			if rec, err := iscsi.DecodeRecord(e); !errors.Is(err, backend.ErrNoRecord) {
				t.Fatalf("DecodeRecord = %+v, %v; want ErrNoRecord", rec, err)
			}
		})
	}
	// A damaged portal or multipath value loses only that fact.
	e := good
	e.Attrs = map[string]string{"lun": "1", "portals": "10.9.0.1:3260,not a portal:x", "multipath": "perhaps"}
	rec, err := iscsi.DecodeRecord(e)
	if err != nil || len(rec.Portals) != 1 || rec.Multipath {
		t.Errorf("DecodeRecord of damaged attributes = %+v, %v", rec, err)
	}
}

// TestCredentialCounts: the staged volumes whose recorded credential
// differs from the one their target's sessions were logged in with, by
// kind; intents and targets without a recorded login are not counted.
func TestCredentialCounts(t *testing.T) {
	ctx := context.Background()
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(id, iqn, user, mac string, staged bool) {
		t.Helper()
		e := entryOf(id, iscsi.Record{IQN: iqn, LUN: 0, CHAPUser: user, CHAPSecretMAC: mac})
		e.Staged, e.StagingPath = staged, "/k/"+id
		if err := jr.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	login := backend.Credential{User: recCHAPUser, SecretMAC: "m1"}
	if err := jr.PutNote(ctx, iscsi.CredentialNotePrefix+recIQN, login.Encode()); err != nil {
		t.Fatal(err)
	}
	put("same", recIQN, recCHAPUser, "m1", true)
	put("drift", recIQN, recCHAPUser, "m2", true)
	put("drift-intent", recIQN, recCHAPUser, "m2", false)
	put("no-chap", recIQN, "", "", true)
	put("other", recIQN, "someone", "m1", true)
	put("unrecorded", recIQN2, "someone", "m1", true)
	drift, other, err := iscsi.CredentialCounts(ctx, jr)
	if err != nil || drift != 1 || other != 2 {
		t.Fatalf("CredentialCounts = %d drift, %d other, %v; want 1 and 2", drift, other, err)
	}
}
