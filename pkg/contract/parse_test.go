package contract

import (
	"reflect"
	"testing"
)

func TestParseGeneral(t *testing.T) {
	runParseCases(t, []parseCase{
		{
			name:        "empty volume ID",
			req:         Request{VolumeID: "", VolumeContext: m("diskSerial", "a")},
			wantKey:     "volume_id",
			keepEmptyID: true,
		},
		{
			name: "keys are matched case-insensitively",
			req:  Request{VolumeContext: m("DISKSERIAL", "abc", "FsType", "ReFS")},
			want: &Volume{Kind: KindDisk, FS: FileSystem{Type: FSReFS, Explicit: true}, Disk: &DiskSpec{Selector: DiskSelector{Serial: "abc"}}},
		},
		{
			name: "values are trimmed",
			req:  Request{VolumeContext: m("diskLUN", " 7 ")},
			want: diskVol(DiskSelector{LUN: u32(7)}),
		},
		{
			name: "an empty value counts as absent",
			req:  Request{VolumeContext: m("diskSerial", "abc", "diskNumber", "", "source", "  ")},
			want: diskVol(DiskSelector{Serial: "abc"}),
		},
		{
			name: "publish_context wins over volume_context",
			req: Request{
				VolumeContext:  m("diskLUN", "1", "diskSerial", "s"),
				PublishContext: m("DiskLun", "2"),
			},
			want: diskVol(DiskSelector{Serial: "s", LUN: u32(2)}),
		},
		{
			name: "same key in two cases with the same value",
			req:  Request{VolumeContext: m("diskLUN", "1", "disklun", "1")},
			want: diskVol(DiskSelector{LUN: u32(1)}),
		},
		{
			name:    "same key in two cases with different values in volume_context",
			req:     Request{VolumeContext: m("diskLUN", "1", "disklun", "2")},
			wantKey: "disklun",
		},
		{
			name:    "same key in two cases with different values in publish_context",
			req:     Request{PublishContext: m("LUN", "1", "lun", "2")},
			wantKey: "lun",
		},
		{
			name:    "same key in two cases with different values in the secret",
			req:     Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "a", "UserName", "b", "password", "p")},
			wantKey: "username",
		},
		{
			name: "unknown keys are ignored, sorted, in their spelling",
			req: Request{
				VolumeContext:  m("zeta", "1", "Alpha", "2", "diskSerial", "s", "csi.storage.k8s.io/pod.name", "p"),
				PublishContext: m("beta", "3"),
			},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{Serial: "s"}}, Ignored: []string{"Alpha", "beta", "zeta"}},
		},
		{
			name:    "ephemeral inline volume",
			req:     Request{VolumeContext: m("csi.storage.k8s.io/ephemeral", "TRUE", "diskSerial", "s")},
			wantKey: "csi.storage.k8s.io/ephemeral",
		},
		{
			name: "ephemeral false",
			req:  Request{VolumeContext: m("csi.storage.k8s.io/ephemeral", "false", "diskSerial", "s")},
			want: diskVol(DiskSelector{Serial: "s"}),
		},
		{
			name:    "ephemeral not a boolean",
			req:     Request{VolumeContext: m("csi.storage.k8s.io/ephemeral", "maybe", "diskSerial", "s")},
			wantKey: "csi.storage.k8s.io/ephemeral",
		},
		{
			name:    "secret key in volume_context",
			req:     Request{VolumeContext: m("source", `\\srv\share`, "Password", "x")},
			wantKey: "Password",
		},
		{
			name: "secret key of another backend in volume_context is ignored when backend is set",
			req:  Request{VolumeContext: m("backend", "disk", "diskSerial", "s", "password", "x")},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{Serial: "s"}}, Ignored: []string{"password"}},
		},
		{
			name:    "secret key of another backend in volume_context refuses an inferred backend",
			req:     Request{VolumeContext: m("diskSerial", "s", "password", "x")},
			wantKey: "password",
		},
	})
}

func TestParseBackend(t *testing.T) {
	runParseCases(t, []parseCase{
		{
			name:  "explicit disk",
			req:   Request{VolumeContext: m("backend", "DISK", "diskSerial", "s")},
			check: wantKind(KindDisk),
		},
		{
			name:  "explicit smb",
			req:   Request{VolumeContext: m("Backend", "smb", "source", `\\s\x`), Secrets: m("username", "u", "password", "p")},
			check: wantKind(KindSMB),
		},
		{
			name:  "explicit iscsi",
			req:   Request{VolumeContext: m("backend", "iSCSI", "targetPortal", "10.0.0.1", "iqn", "iqn.2001-04.com.example:t", "lun", "0")},
			check: wantKind(KindISCSI),
		},
		{
			name:    "unknown backend",
			req:     Request{VolumeContext: m("backend", "nfs")},
			wantKey: "backend",
		},
		{
			name:  "inferred smb from source",
			req:   Request{VolumeContext: m("source", `//s/x`), Secrets: m("username", "u", "password", "p")},
			check: wantKind(KindSMB),
		},
		{
			name:  "inferred iscsi from iqn",
			req:   Request{VolumeContext: m("iqn", "iqn.2001-04.com.example", "targetPortal", "h", "lun", "1")},
			check: wantKind(KindISCSI),
		},
		{
			name:  "inferred disk",
			req:   Request{VolumeContext: m("diskNumber", "3")},
			check: wantKind(KindDisk),
		},
		{
			name:  "node default backend",
			req:   Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "u", "password", "p")},
			opts:  Options{DefaultKind: KindSMB},
			check: wantKind(KindSMB),
		},
		{
			name:    "node default backend overrides inference",
			req:     Request{VolumeContext: m("source", `\\s\x`)},
			opts:    Options{DefaultKind: KindDisk},
			wantKey: "source",
		},
		{
			name:    "invalid node default backend",
			req:     Request{VolumeContext: m("diskSerial", "s")},
			opts:    Options{DefaultKind: "tape"},
			wantKey: "backend",
		},
		{
			name:    "explicit disk with an smb key",
			req:     Request{VolumeContext: m("backend", "disk", "diskSerial", "s", "Source", `\\s\x`)},
			wantKey: "Source",
		},
		{
			name:    "explicit smb with an iscsi key",
			req:     Request{VolumeContext: m("backend", "smb", "source", `\\s\x`, "lun", "1")},
			wantKey: "lun",
		},
		{
			name:    "explicit iscsi with a disk key",
			req:     Request{VolumeContext: m("backend", "iscsi", "targetPortal", "h", "iqn", "iqn.2001-04.com.example", "lun", "1", "diskLUN", "1")},
			wantKey: "diskLUN",
		},
		{
			name:    "inferred smb with iqn",
			req:     Request{VolumeContext: m("source", `\\s\x`, "iqn", "iqn.2001-04.com.example")},
			wantKey: "iqn",
		},
		{
			name:    "inferred disk with an iscsi key",
			req:     Request{VolumeContext: m("diskSerial", "s", "targetPortal", "h")},
			wantKey: "targetPortal",
		},
		{
			name:    "fsLabel on smb",
			req:     Request{VolumeContext: m("source", `\\s\x`, "fsLabel", "data")},
			wantKey: "fsLabel",
		},
		{
			name:    "allocationUnitSize on smb",
			req:     Request{VolumeContext: m("source", `\\s\x`, "AllocationUnitSize", "4096")},
			wantKey: "AllocationUnitSize",
		},
		{
			name: "csi.storage.k8s.io keys are known on every backend",
			req: Request{VolumeContext: m("diskSerial", "s", "csi.storage.k8s.io/pvc/name", "c",
				"csi.storage.k8s.io/pvc/namespace", "n", "csi.storage.k8s.io/pv/name", "p", "csi.storage.k8s.io/serviceAccount.name", "x")},
			want: diskVol(DiskSelector{Serial: "s"}),
		},
	})
}

func wantKind(k Kind) func(*testing.T, Volume) {
	return func(t *testing.T, v Volume) {
		t.Helper()
		if v.Kind != k {
			t.Fatalf("kind %q, want %q", v.Kind, k)
		}
		set := map[Kind]bool{KindDisk: v.Disk != nil, KindSMB: v.SMB != nil, KindISCSI: v.ISCSI != nil}
		for kk, ok := range set {
			if ok != (kk == k) {
				t.Fatalf("spec of %s set=%v for a %s volume", kk, ok, k)
			}
		}
	}
}

func TestParseAliases(t *testing.T) {
	trident := Options{Aliases: map[string]string{"iscsiTargetIqn": "iqn", "iscsiLunNumber": "lun", "p1": "targetPortal"}}
	runParseCases(t, []parseCase{
		{
			name: "vendor keys mapped onto contract keys, kind inferred through the alias",
			req:  Request{PublishContext: m("iscsiTargetIqn", "IQN.2001-04.com.Example:T", "ISCSILUNNUMBER", "3", "p1", "10.0.0.1")},
			opts: trident,
			check: func(t *testing.T, v Volume) {
				if v.Kind != KindISCSI || v.ISCSI.IQN != "iqn.2001-04.com.example:t" || v.ISCSI.LUN != 3 {
					t.Fatalf("got %+v", v.ISCSI)
				}
			},
		},
		{
			name: "vendor key and contract key agree",
			req:  Request{PublishContext: m("iscsiLunNumber", "3", "lun", "3", "iqn", "iqn.2001-04.com.example", "targetPortal", "h")},
			opts: trident,
			check: func(t *testing.T, v Volume) {
				if v.ISCSI.LUN != 3 {
					t.Fatalf("lun %d", v.ISCSI.LUN)
				}
			},
		},
		{
			name:    "vendor key and contract key conflict",
			req:     Request{PublishContext: m("iscsiLunNumber", "3", "lun", "4", "iqn", "iqn.2001-04.com.example", "targetPortal", "h")},
			opts:    trident,
			wantKey: "iscsiLunNumber",
		},
		{
			name:    "error on an aliased value names the vendor key",
			req:     Request{PublishContext: m("iscsiLunNumber", "x", "iqn", "iqn.2001-04.com.example", "targetPortal", "h")},
			opts:    trident,
			wantKey: "iscsiLunNumber",
		},
		{
			name:  "alias of backend",
			req:   Request{VolumeContext: m("node_attach_driver", "smb", "source", `\\s\x`), Secrets: m("username", "u", "password", "p")},
			opts:  Options{Aliases: map[string]string{"node_attach_driver": "backend"}},
			check: wantKind(KindSMB),
		},
		{
			name: "alias of a key of another backend applies to its backend only (disk)",
			req:  Request{PublishContext: m("LUN", "5")},
			opts: Options{Aliases: map[string]string{"LUN": "diskLUN"}},
			want: diskVol(DiskSelector{LUN: u32(5)}),
		},
		{
			name: "alias of a key of another backend applies to its backend only (iscsi)",
			req:  Request{PublishContext: m("lun", "5", "iqn", "iqn.2001-04.com.example", "targetPortal", "h")},
			opts: Options{Aliases: map[string]string{"LUN": "diskLUN"}},
			check: func(t *testing.T, v Volume) {
				if v.Kind != KindISCSI || v.ISCSI.LUN != 5 {
					t.Fatalf("got %+v", v)
				}
			},
		},
		{
			name:    "aliased vendor key on a volume of another backend",
			req:     Request{VolumeContext: m("source", `\\s\x`, "diskUUID", "6000c298595e0d8d2f3e2e3c1e9d6b1a")},
			opts:    Options{Presets: []string{"vsphere"}},
			wantKey: "diskUUID",
		},
		{
			name:    "two vendor keys of one target conflict",
			req:     Request{VolumeContext: m("a", "1", "b", "2")},
			opts:    Options{Aliases: map[string]string{"a": "diskLUN", "b": "diskLUN"}},
			wantKey: "b",
		},
		{
			name: "vendor keys match case-insensitively",
			req:  Request{VolumeContext: m("SERIAL", "abc")},
			opts: Options{Aliases: map[string]string{"serial": "diskSerial"}},
			want: diskVol(DiskSelector{Serial: "abc"}),
		},
		{
			name: "invalid aliases are skipped",
			req:  Request{VolumeContext: m("diskSerial", "abc", "x", "1")},
			opts: Options{Aliases: map[string]string{"x": "nosuchkey"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{Serial: "abc"}}, Ignored: []string{"x"}},
		},
	})
}

func TestKeysTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if seen[k.Name] {
			t.Errorf("key %q listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Source != SourceContext && k.Source != SourceSecret {
			t.Errorf("key %q has source %q", k.Name, k.Source)
		}
		if k.Preset != "" {
			if err := ValidatePreset(k.Preset); err != nil {
				t.Errorf("key %q: %v", k.Name, err)
			}
		}
	}
	// Keys returns copies: changing them leaves the table alone.
	ks := Keys()
	ks[len(ks)-1].Backends[0] = "x"
	if reflect.DeepEqual(ks, Keys()) {
		t.Error("Keys shares its slices with the table")
	}
}
