package disk_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

func u32(v uint32) *uint32 { return &v }

func diskEntry(r backend.Record) journal.Entry {
	return journal.Entry{VolumeID: "v", Backend: "disk", ResourceKey: r.Resource(), Attrs: r.Attrs()}
}

func TestRecordRoundTrip(t *testing.T) {
	selectors := []contract.DiskSelector{
		{Serial: "SER-1"},
		{Serial: "0ab", SerialMatch: contract.MatchContains, LUN: u32(3)},
		{Serial: "pd-1", SerialMatch: contract.MatchLastField},
		{Page83: "6000c298595e0d8d2f3e2e3c1e9d6b1a", Page83Match: contract.MatchExact, Target: u32(0), Bus: u32(1)},
		{Page83: "Google", Page83Match: contract.MatchContains},
		{Page83: "pd-2", Page83Match: contract.MatchLastField, Target: u32(1)},
		{Location: "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 1"},
		{Number: u32(0)},
		{NVMeNSID: u32(4), AdapterSerial: "SN: 000001"},
		{EUI: "000c2968595e0d8d"},
		{NGUID: "e6d8664250d847bd916eaf1b0a1b2c3d"},
		{AzureLUN: u32(2)},
		{EBSVolumeID: "vol-0abcdef0123456789"},
		{GCEDeviceName: "pvc-4a5b6c7d"},
		{VSphereUUID: "6000c29a98d05e384a43f0ef189aaf5a"},
	}
	storages := map[string]bool{}
	for _, sel := range selectors {
		rec := disk.RecordOf(&contract.DiskSpec{Selector: sel})
		if rec.Resource() != "" {
			t.Errorf("%+v: a disk shares no resource, Resource = %q", sel, rec.Resource())
		}
		got, err := disk.DecodeRecord(diskEntry(rec))
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("DecodeRecord = %+v, %v; want %+v", got, err, rec)
		}
		if storages[rec.Storage()] {
			t.Errorf("%+v: Storage %q names another selector too", sel, rec.Storage())
		}
		storages[rec.Storage()] = true
	}
}

// TestRecordFormat holds the journal form of a selector: the entries the
// plugin wrote since its first release (see also pkg/plugin's
// TestStateOfThePreviousVersion).
func TestRecordFormat(t *testing.T) {
	const written = `{"Serial":"SER-1","SerialMatch":1,"Page83":"","Page83Match":2,"LUN":3,"Target":null,"Bus":null,"Location":"","Number":null}`
	rec := disk.Record{Selector: contract.DiskSelector{Serial: "SER-1", SerialMatch: contract.MatchContains,
		Page83Match: contract.MatchLastField, LUN: u32(3)}}
	if got := rec.Attrs(); !reflect.DeepEqual(got, map[string]string{"diskSelector": written}) {
		t.Errorf("Attrs = %v", got)
	}
	got, err := disk.DecodeRecord(journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": written}})
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("DecodeRecord = %+v, %v; want %+v", got, err, rec)
	}
}

// A record of the platform selectors: the fields added for NVMe and the
// presets, each present only when set.
func TestRecordFormatPlatform(t *testing.T) {
	const written = `{"Serial":"","SerialMatch":0,"Page83":"","Page83Match":0,"LUN":null,"Target":null,"Bus":null,"Location":"","Number":null,"AzureLUN":2}`
	rec := disk.Record{Selector: contract.DiskSelector{AzureLUN: u32(2)}}
	if got := rec.Attrs(); !reflect.DeepEqual(got, map[string]string{"diskSelector": written}) {
		t.Errorf("Attrs = %v", got)
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	tests := []struct {
		name string
		e    journal.Entry
	}{
		{"another backend's entry", journal.Entry{VolumeID: "v", Backend: "iscsi", Attrs: map[string]string{"diskSelector": `{"Serial":"x"}`}}},
		{"no selector", journal.Entry{VolumeID: "v", Backend: "disk"}},
		{"damaged selector", journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": `{"Serial":`}}},
		{"empty selector", journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": `{}`}}},
		{"unknown match mode", journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": `{"Serial":"x","SerialMatch":7}`}}},
		// The first number past the known modes (0, 1, 2): found by
		// mutation testing, an off-by-one here indexes past them.
		{"the match mode after the last", journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": `{"Serial":"x","SerialMatch":3}`}}},
		{"a negative match mode", journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": `{"Serial":"x","SerialMatch":-1}`}}},
		{"the zero entry of a volume the journal does not know", journal.Entry{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rec, err := disk.DecodeRecord(tt.e); !errors.Is(err, backend.ErrNoRecord) {
				t.Fatalf("DecodeRecord = %+v, %v; want ErrNoRecord", rec, err)
			}
		})
	}
}

// The selectors the aws-ebs and gce-pd presets wrote before they had their
// own are read as those (TestUpgradeFromTheOldPresetSelectors in
// test/system/platforms restages and unstages such a volume); any other selector
// with a match mode is read as written.
func TestRecordUpgradesTheOldPresetSelectors(t *testing.T) {
	const tail = `,"LUN":null,"Target":null,"Bus":null,"Location":"","Number":null}`
	tests := []struct {
		name, written string
		want          contract.DiskSelector
	}{
		{"aws-ebs", `{"Serial":"vol0abcdef0123456789","SerialMatch":1,"Page83":"","Page83Match":0` + tail,
			contract.DiskSelector{EBSVolumeID: "vol-0abcdef0123456789"}},
		{"aws-ebs, an 8-digit ID", `{"Serial":"vol1a2b3c4d","SerialMatch":1,"Page83":"","Page83Match":0` + tail,
			contract.DiskSelector{EBSVolumeID: "vol-1a2b3c4d"}},
		{"gce-pd", `{"Serial":"","SerialMatch":0,"Page83":"pvc-9f8e7d6c","Page83Match":2` + tail,
			contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}},
		{"gce-pd, a regional disk", `{"Serial":"","SerialMatch":0,"Page83":"pvc-1_regional","Page83Match":2` + tail,
			contract.DiskSelector{GCEDeviceName: "pvc-1_regional"}},
		{"contains, not an EBS serial", `{"Serial":"vol0abc","SerialMatch":1,"Page83":"","Page83Match":0` + tail,
			contract.DiskSelector{Serial: "vol0abc", SerialMatch: contract.MatchContains}},
		{"contains, upper-case hex", `{"Serial":"vol0ABCDEF01","SerialMatch":1,"Page83":"","Page83Match":0` + tail,
			contract.DiskSelector{Serial: "vol0ABCDEF01", SerialMatch: contract.MatchContains}},
		{"contains, with a LUN", `{"Serial":"vol0abcdef0123456789","SerialMatch":1,"Page83":"","Page83Match":0,"LUN":1,"Target":null,"Bus":null,"Location":"","Number":null}`,
			contract.DiskSelector{Serial: "vol0abcdef0123456789", SerialMatch: contract.MatchContains, LUN: u32(1)}},
		{"an exact serial", `{"Serial":"vol0abcdef0123456789","SerialMatch":0,"Page83":"","Page83Match":0` + tail,
			contract.DiskSelector{Serial: "vol0abcdef0123456789"}},
		{"last field, with a serial", `{"Serial":"S","SerialMatch":0,"Page83":"pvc-1","Page83Match":2` + tail,
			contract.DiskSelector{Serial: "S", Page83: "pvc-1", Page83Match: contract.MatchLastField}},
		{"page 83 contains", `{"Serial":"","SerialMatch":0,"Page83":"pvc-1","Page83Match":1` + tail,
			contract.DiskSelector{Page83: "pvc-1", Page83Match: contract.MatchContains}},
		{"serial last field", `{"Serial":"pvc-1","SerialMatch":2,"Page83":"","Page83Match":0` + tail,
			contract.DiskSelector{Serial: "pvc-1", SerialMatch: contract.MatchLastField}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := disk.DecodeRecord(journal.Entry{VolumeID: "v", Backend: "disk", Attrs: map[string]string{"diskSelector": tt.written}})
			if err != nil || !reflect.DeepEqual(got.Selector, tt.want) {
				t.Fatalf("DecodeRecord = %+v, %v; want %+v", got.Selector, err, tt.want)
			}
			if want := disk.RecordOf(&contract.DiskSpec{Selector: tt.want}).Storage(); got.Storage() != want {
				t.Errorf("Storage = %q, want %q", got.Storage(), want)
			}
		})
	}
}
