package contract

import "testing"

func TestParseDisk(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "serial", req: Request{VolumeContext: m("diskSerial", "ABC 123")}, want: diskVol(DiskSelector{Serial: "ABC 123"})},
		{name: "page83 ascii kept", req: Request{VolumeContext: m("diskPage83", " Google  disk-1 ")}, want: diskVol(DiskSelector{Page83: "Google  disk-1"})},
		{name: "page83 hex normalised", req: Request{VolumeContext: m("diskPage83", "6000C298-595E-0D8D-2F3E-2E3C1E9D6B1A")}, want: diskVol(DiskSelector{Page83: "6000c298595e0d8d2f3e2e3c1e9d6b1a"})},
		{name: "page83 short hex kept", req: Request{VolumeContext: m("diskPage83", "CAFE")}, want: diskVol(DiskSelector{Page83: "CAFE"})},
		{name: "page83 odd hex kept", req: Request{VolumeContext: m("diskPage83", "0123456789ABCDEF0")}, want: diskVol(DiskSelector{Page83: "0123456789ABCDEF0"})},
		{name: "page83 eui kept", req: Request{VolumeContext: m("diskPage83", "eui.0123456789ABCDEF")}, want: diskVol(DiskSelector{Page83: "eui.0123456789ABCDEF"})},
		{name: "lun", req: Request{PublishContext: m("diskLUN", "0")}, want: diskVol(DiskSelector{LUN: u32(0)})},
		{name: "lun target bus", req: Request{PublishContext: m("diskLUN", "1", "diskTarget", "2", "diskBus", "3")}, want: diskVol(DiskSelector{LUN: u32(1), Target: u32(2), Bus: u32(3)})},
		{name: "target without lun", req: Request{PublishContext: m("diskTarget", "2", "diskSerial", "s")}, wantKey: "diskTarget"},
		{name: "bus without lun", req: Request{PublishContext: m("DiskBus", "2", "diskSerial", "s")}, wantKey: "DiskBus"},
		{name: "location", req: Request{VolumeContext: m("diskLocation", "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0")}, want: diskVol(DiskSelector{Location: "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"})},
		{name: "number", req: Request{VolumeContext: m("diskNumber", "4294967295")}, want: diskVol(DiskSelector{Number: u32(4294967295)})},
		{name: "number too large", req: Request{VolumeContext: m("diskNumber", "4294967296")}, wantKey: "diskNumber"},
		{name: "lun not a number", req: Request{VolumeContext: m("diskLUN", "abc")}, wantKey: "diskLUN"},
		{name: "lun negative", req: Request{VolumeContext: m("diskLUN", "-1")}, wantKey: "diskLUN"},
		{name: "lun plus sign", req: Request{VolumeContext: m("diskLUN", "+1")}, wantKey: "diskLUN"},
		{name: "lun hex", req: Request{VolumeContext: m("diskLUN", "0x1")}, wantKey: "diskLUN"},
		{name: "target not a number", req: Request{VolumeContext: m("diskLUN", "1", "diskTarget", "t")}, wantKey: "diskTarget"},
		{name: "all selectors", req: Request{VolumeContext: m("diskSerial", "s", "diskPage83", "p", "diskLUN", "1", "diskLocation", "l", "diskNumber", "2")},
			want: diskVol(DiskSelector{Serial: "s", Page83: "p", LUN: u32(1), Location: "l", Number: u32(2)})},
		{name: "no selector", req: Request{VolumeContext: m("foo", "bar")}, wantKey: "diskSerial"},
		{name: "no selector, volume ID as serial", req: Request{VolumeID: "disk-7"}, opts: Options{VolumeIDDisk: "serial"}, want: diskVol(DiskSelector{Serial: "disk-7"})},
		{name: "selector beats volume ID", req: Request{VolumeID: "disk-7", VolumeContext: m("diskLUN", "2")}, opts: Options{VolumeIDDisk: "serial"}, want: diskVol(DiskSelector{LUN: u32(2)})},
	})
}

func TestParseDiskPresets(t *testing.T) {
	all := Options{Presets: []string{"azure-disk", "aws-ebs", "gce-pd", "vsphere"}}
	runParseCases(t, []parseCase{
		{
			name: "azure-disk LUN",
			req:  Request{VolumeID: "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/disks/d", PublishContext: m("LUN", "3", "skuname", "Premium_LRS")},
			opts: Options{Presets: []string{"azure-disk"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{LUN: u32(3)}}, Ignored: []string{"skuname"}},
		},
		{
			name:    "azure-disk LUN and diskLUN conflict",
			req:     Request{PublishContext: m("LUN", "3", "diskLUN", "4")},
			opts:    Options{Presets: []string{"azure-disk"}},
			wantKey: "LUN",
		},
		{
			name:    "azure-disk LUN not a number",
			req:     Request{PublishContext: m("LUN", "x")},
			opts:    Options{Presets: []string{"azure-disk"}},
			wantKey: "LUN",
		},
		{
			// Azure's publish_context LUN folds to the iscsi key lun: a
			// controller's key of another backend is ignored, so the
			// error names the missing selector, not the vendor's key.
			name:    "LUN without the preset is ignored in publish_context",
			req:     Request{PublishContext: m("LUN", "3")},
			wantKey: "diskSerial",
		},
		{
			name:    "an iscsi key in volume_context of a disk volume is an error",
			req:     Request{VolumeContext: m("diskSerial", "a", "lun", "3")},
			wantKey: "lun",
		},
		{
			name: "vsphere diskUUID",
			req:  Request{PublishContext: m("diskUUID", "6000C298-595e-0d8d-2f3e-2e3c1e9d6b1a")},
			opts: Options{Presets: []string{"vsphere"}},
			want: diskVol(DiskSelector{Page83: "6000c298595e0d8d2f3e2e3c1e9d6b1a"}),
		},
		{
			name: "aws-ebs volume ID",
			req:  Request{VolumeID: "vol-0123456789abcdef0", PublishContext: m("devicePath", "/dev/xvdba")},
			opts: Options{Presets: []string{"aws-ebs"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{Serial: "vol0123456789abcdef0", SerialMatch: MatchContains}}, Ignored: []string{"devicePath"}},
		},
		{
			name:    "aws-ebs ignores other volume IDs",
			req:     Request{VolumeID: "vol-x"},
			opts:    Options{Presets: []string{"aws-ebs"}},
			wantKey: "diskSerial",
		},
		{
			name: "aws-ebs yields to an explicit selector",
			req:  Request{VolumeID: "vol-0123456789abcdef0", VolumeContext: m("diskNumber", "2")},
			opts: Options{Presets: []string{"aws-ebs"}},
			want: diskVol(DiskSelector{Number: u32(2)}),
		},
		{
			name: "gce-pd zonal",
			req:  Request{VolumeID: "projects/p/zones/us-central1-a/disks/pvc-1", PublishContext: m("disk-size", "10")},
			opts: Options{Presets: []string{"gce-pd"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{Page83: "pvc-1", Page83Match: MatchLastField}}, Ignored: []string{"disk-size"}},
		},
		{
			name: "gce-pd regional",
			req:  Request{VolumeID: "projects/p/regions/us-central1/disks/pvc-1"},
			opts: Options{Presets: []string{"gce-pd"}},
			want: diskVol(DiskSelector{Page83: "pvc-1_regional", Page83Match: MatchLastField}),
		},
		{
			name:    "gce-pd malformed volume ID",
			req:     Request{VolumeID: "projects/p/zones//disks/pvc-1"},
			opts:    Options{Presets: []string{"gce-pd"}},
			wantKey: "diskSerial",
		},
		{
			name:    "gce-pd wrong collection",
			req:     Request{VolumeID: "projects/p/zones/z/snapshots/s"},
			opts:    Options{Presets: []string{"gce-pd"}},
			wantKey: "diskSerial",
		},
		{
			name: "all presets, gce ID",
			req:  Request{VolumeID: "projects/p/zones/z/disks/d"},
			opts: all,
			want: diskVol(DiskSelector{Page83: "d", Page83Match: MatchLastField}),
		},
		{
			name: "all presets, ebs ID",
			req:  Request{VolumeID: "vol-0123456789abcdef0"},
			opts: all,
			want: diskVol(DiskSelector{Serial: "vol0123456789abcdef0", SerialMatch: MatchContains}),
		},
		{
			name: "presets then volume ID serial",
			req:  Request{VolumeID: "other"},
			opts: Options{Presets: all.Presets, VolumeIDDisk: "serial"},
			want: diskVol(DiskSelector{Serial: "other"}),
		},
		{
			name: "azure-disk preset leaves iscsi lun alone",
			req:  Request{PublishContext: m("lun", "9", "iqn", "iqn.2001-04.com.example", "targetPortal", "h")},
			opts: all,
			check: func(t *testing.T, v Volume) {
				if v.Kind != KindISCSI || v.ISCSI.LUN != 9 {
					t.Fatalf("got %+v", v)
				}
			},
		},
	})
}
