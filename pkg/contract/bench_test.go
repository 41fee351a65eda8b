package contract

import "testing"

func benchParse(b *testing.B, r Request, o Options) {
	b.Helper()
	if _, err := Parse(r, o); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(r, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseDisk: what azuredisk-csi-driver hands a node, with the
// azure-disk preset.
func BenchmarkParseDisk(b *testing.B) {
	benchParse(b, Request{
		VolumeID: "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/disks/pvc-4f0c",
		VolumeContext: map[string]string{
			"csi.storage.k8s.io/pv/name": "pvc-4f0c", "csi.storage.k8s.io/pvc/name": "data",
			"csi.storage.k8s.io/pvc/namespace": "app", "skuname": "Premium_LRS", "fsType": "ntfs",
			"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-disk.csi.azure.com",
		},
		PublishContext: map[string]string{"LUN": "2", "diskiopsreadwrite": "120", "diskmbpsreadwrite": "25", "networkaccesspolicy": "AllowAll"},
		FsType:         "ntfs",
	}, Options{Presets: []string{"azure-disk"}})
}

// BenchmarkParseSMB: a csi-driver-smb style volume with a templated subDir
// and a domain credential.
func BenchmarkParseSMB(b *testing.B) {
	benchParse(b, Request{
		VolumeID: "smb-server.example.com/share#pvc-4f0c##",
		VolumeContext: map[string]string{
			"source": "//smb-server.example.com/share", "subDir": "${pvc.metadata.namespace}/${pvc.metadata.name}",
			"csi.storage.k8s.io/pv/name": "pvc-4f0c", "csi.storage.k8s.io/pvc/name": "data",
			"csi.storage.k8s.io/pvc/namespace": "app", "requirePrivacy": "true",
			"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-8081-smb.csi.k8s.io",
		},
		Secrets: map[string]string{"username": "svc-k8s", "password": "Correct-Horse-9", "domain": "CORP"},
	}, Options{RequirePrivacy: true})
}

// BenchmarkParseISCSI: a multipath iSCSI volume with mutual CHAP.
func BenchmarkParseISCSI(b *testing.B) {
	benchParse(b, Request{
		VolumeID: "iscsi-pvc-4f0c",
		VolumeContext: map[string]string{
			"targetPortal": "10.0.0.10:3260", "portals": `["10.0.0.11:3260","10.0.1.10:3260","10.0.1.11:3260"]`,
			"iqn": "iqn.2005-10.org.freenas.ctl:pvc-4f0c", "lun": "0", "sessionCHAPAuth": "true",
			"discoveryCHAPAuth": "false", "fsType": "ntfs", "csi.storage.k8s.io/pv/name": "pvc-4f0c",
		},
		Secrets: map[string]string{
			"node.session.auth.username": "k8s-node", "node.session.auth.password": "initiator-12ch",
			"node.session.auth.username_in": "target", "node.session.auth.password_in": "target-secret-16",
		},
	}, Options{})
}
