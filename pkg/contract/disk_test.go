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
		{name: "NVMe namespace ID", req: Request{VolumeContext: m("diskNVMeNSID", "4")}, want: diskVol(DiskSelector{NVMeNSID: u32(4)})},
		{name: "NVMe namespace ID 256", req: Request{VolumeContext: m("diskNVMeNSID", "256")}, want: diskVol(DiskSelector{NVMeNSID: u32(256)})},
		{name: "NVMe namespace ID 0", req: Request{VolumeContext: m("diskNVMeNSID", "0")}, wantKey: "diskNVMeNSID"},
		{name: "NVMe namespace ID 257", req: Request{VolumeContext: m("diskNVMeNSID", "257")}, wantKey: "diskNVMeNSID"},
		{name: "NVMe namespace ID not a number", req: Request{VolumeContext: m("diskNVMeNSID", "n1")}, wantKey: "diskNVMeNSID"},
		// The serial of an Azure NVMe disk as Get-Disk shows it
		// (kubernetes-sigs/azuredisk-csi-driver#3329; last two groups assumed).
		{name: "NGUID in Windows' serial form", req: Request{VolumeContext: m("diskNGUID", "E6D8_6642_50D8_47BD_916E_AF1B_0A1B_2C3D.")},
			want: diskVol(DiskSelector{NGUID: "e6d8664250d847bd916eaf1b0a1b2c3d"})},
		// Linux's form (cloud-init#4598: eui.577f8d0aff944fa3b6e5a7ff4d366001).
		{name: "NGUID in Linux's form", req: Request{VolumeContext: m("diskNGUID", "eui.577f8d0aff944fa3b6e5a7ff4d366001")},
			want: diskVol(DiskSelector{NGUID: "577f8d0aff944fa3b6e5a7ff4d366001"})},
		{name: "EUI-64 with dashes", req: Request{VolumeContext: m("diskEUI", "00-0C-29-68-59-5E-0D-8D")}, want: diskVol(DiskSelector{EUI: "000c2968595e0d8d"})},
		{name: "EUI-64 of NGUID length", req: Request{VolumeContext: m("diskEUI", "e6d8664250d847bd916eaf1b0a1b2c3d")}, wantKey: "diskEUI"},
		{name: "NGUID of EUI-64 length", req: Request{VolumeContext: m("diskNGUID", "000c2968595e0d8d")}, wantKey: "diskNGUID"},
		{name: "NGUID not hex", req: Request{VolumeContext: m("diskNGUID", "g6d8664250d847bd916eaf1b0a1b2c3d")}, wantKey: "diskNGUID"},
		{name: "adapter serial", req: Request{VolumeContext: m("diskAdapterSerial", "SN: 000001", "diskNVMeNSID", "3")},
			want: diskVol(DiskSelector{AdapterSerial: "SN: 000001", NVMeNSID: u32(3)})},
	})
}

func TestParseDiskPresets(t *testing.T) {
	all := Options{Presets: []string{"azure-disk", "aws-ebs", "gce-pd", "vsphere"}}
	runParseCases(t, []parseCase{
		{
			name: "azure-disk LUN",
			req:  Request{VolumeID: "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/disks/d", PublishContext: m("LUN", "3", "skuname", "Premium_LRS")},
			opts: Options{Presets: []string{"azure-disk"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{AzureLUN: u32(3)}}, Ignored: []string{"skuname"}},
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
			want: diskVol(DiskSelector{VSphereUUID: "6000c298595e0d8d2f3e2e3c1e9d6b1a"}),
		},
		{
			name:    "vsphere diskUUID not a UUID",
			req:     Request{PublishContext: m("diskUUID", "6000c298")},
			opts:    Options{Presets: []string{"vsphere"}},
			wantKey: "diskUUID",
		},
		{
			// A user's own alias replaces the preset's: plain diskPage83.
			name: "diskUUID aliased by the user is a plain page 83",
			req:  Request{PublishContext: m("diskUUID", "6000C298-595e-0d8d-2f3e-2e3c1e9d6b1a")},
			opts: Options{Presets: []string{"vsphere"}, Aliases: map[string]string{"diskUUID": "diskPage83"}},
			want: diskVol(DiskSelector{Page83: "6000c298595e0d8d2f3e2e3c1e9d6b1a"}),
		},
		{
			name: "LUN aliased by the user is a plain diskLUN",
			req:  Request{PublishContext: m("LUN", "3")},
			opts: Options{Presets: []string{"azure-disk"}, Aliases: map[string]string{"LUN": "diskLUN"}},
			want: diskVol(DiskSelector{LUN: u32(3)}),
		},
		{
			name: "azure-disk LUN 254",
			req:  Request{PublishContext: m("LUN", "254")},
			opts: Options{Presets: []string{"azure-disk"}},
			want: diskVol(DiskSelector{AzureLUN: u32(254)}),
		},
		{
			// The NVMe storport LUN is LUN + 1, one byte.
			name:    "azure-disk LUN 255",
			req:     Request{PublishContext: m("LUN", "255")},
			opts:    Options{Presets: []string{"azure-disk"}},
			wantKey: "LUN",
		},
		{
			name: "azure-disk LUN with a serial",
			req:  Request{PublishContext: m("LUN", "1"), VolumeContext: m("diskSerial", "s")},
			opts: Options{Presets: []string{"azure-disk"}},
			want: diskVol(DiskSelector{AzureLUN: u32(1), Serial: "s"}),
		},
		{
			name: "aws-ebs volume ID",
			req:  Request{VolumeID: "vol-0123456789abcdef0", PublishContext: m("devicePath", "/dev/xvdba")},
			opts: Options{Presets: []string{"aws-ebs"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{EBSVolumeID: "vol-0123456789abcdef0"}}, Ignored: []string{"devicePath"}},
		},
		{
			name: "aws-ebs old 8-digit volume ID",
			req:  Request{VolumeID: "vol-1a2b3c4d"},
			opts: Options{Presets: []string{"aws-ebs"}},
			want: diskVol(DiskSelector{EBSVolumeID: "vol-1a2b3c4d"}),
		},
		{
			// kubernetes-sigs/aws-ebs-csi-driver@429e202 docs/node-local-volumes.md:
			// handle local-ebs://dev/xvdbz, publish_context volumeID.
			name: "aws-ebs local EBS volume",
			req:  Request{VolumeID: "local-ebs://dev/xvdbz", PublishContext: m("devicePath", "/dev/xvdbz", "volumeID", "vol-0abcdef0123456789")},
			opts: Options{Presets: []string{"aws-ebs"}},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{EBSVolumeID: "vol-0abcdef0123456789"}}, Ignored: []string{"devicePath"}},
		},
		{
			name:    "aws-ebs local EBS volume without volumeID",
			req:     Request{VolumeID: "local-ebs://dev/xvdbz", PublishContext: m("devicePath", "/dev/xvdbz")},
			opts:    Options{Presets: []string{"aws-ebs"}},
			wantKey: "volumeID",
		},
		{
			name:    "aws-ebs local EBS volume with a bad volumeID",
			req:     Request{VolumeID: "local-ebs://dev/xvdbz", PublishContext: m("VolumeId", "vol-12")},
			opts:    Options{Presets: []string{"aws-ebs"}},
			wantKey: "VolumeId",
		},
		{
			name: "volumeID without the preset is unknown",
			req:  Request{VolumeContext: m("diskSerial", "s", "volumeID", "vol-0abcdef0123456789")},
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{Serial: "s"}}, Ignored: []string{"volumeID"}},
		},
		{
			// Not vol- and 8 or more hex digits: no selector, and the error
			// says why the preset derived none.
			name:    "aws-ebs volume ID too short",
			req:     Request{VolumeID: "vol-12"},
			opts:    Options{Presets: []string{"aws-ebs"}},
			wantKey: "diskSerial",
		},
		{
			name:    "aws-ebs volume ID in upper case",
			req:     Request{VolumeID: "vol-0ABCDEF0123456789"},
			opts:    Options{Presets: []string{"aws-ebs"}},
			wantKey: "diskSerial",
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
			want: &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: DiskSelector{GCEDeviceName: "pvc-1"}}, Ignored: []string{"disk-size"}},
		},
		{
			name: "gce-pd regional",
			req:  Request{VolumeID: "projects/p/regions/us-central1/disks/pvc-1"},
			opts: Options{Presets: []string{"gce-pd"}},
			want: diskVol(DiskSelector{GCEDeviceName: "pvc-1_regional"}),
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
			want: diskVol(DiskSelector{GCEDeviceName: "d"}),
		},
		{
			name: "all presets, ebs ID",
			req:  Request{VolumeID: "vol-0123456789abcdef0"},
			opts: all,
			want: diskVol(DiskSelector{EBSVolumeID: "vol-0123456789abcdef0"}),
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
