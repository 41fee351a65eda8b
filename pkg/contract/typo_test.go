package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"source", "source", 0},
		{"sorce", "source", 1},          // a letter missing
		{"lunn", "lun", 1},              // a letter extra
		{"diskserail", "diskserial", 1}, // two letters swapped
		{"iqm", "iqn", 1},               // a letter wrong
		{"lunid", "lun", 2},
		{"abc", "", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

// TestTyposAreRefused: an unknown key close to a contract key is a typo
// that would change what the volume is (sorce makes an smb volume a disk
// one), so it is refused with the key it probably means.
func TestTyposAreRefused(t *testing.T) {
	smbSecret := m("username", "alice", "password", "pw")
	tests := []struct {
		name    string
		req     Request
		o       Options
		wantKey string
		want    string // in the message
	}{
		{"sorce", Request{VolumeContext: m("sorce", "//files/data"), Secrets: smbSecret}, Options{}, "sorce", `did you mean "source"?`},
		{"lunn", Request{VolumeContext: m("targetPortal", "10.0.0.1", "iqn", "iqn.2001-04.com.example:t", "lunn", "0")}, Options{}, "lunn", `did you mean "lun"?`},
		{"diskSerail", Request{VolumeContext: m("diskSerail", "s")}, Options{}, "diskSerail", `did you mean "diskSerial"?`},
		{"case is folded", Request{VolumeContext: m("DiskSERAIL", "s")}, Options{}, "DiskSERAIL", `did you mean "diskSerial"?`},
		{"two edits of a long key", Request{VolumeContext: m("targetPortal", "h", "iqn", "iqn.2001-04.com.example:t", "lun", "0", "sesionCHAPAth", "true")}, Options{}, "sesionCHAPAth", `did you mean "sessionCHAPAuth"?`},
		{"a secret key in volume_context", Request{VolumeContext: m("source", `\\s\x`, "pasword", "x")}, Options{}, "pasword", `did you mean "password"?`},
		{"secret key", Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "a", "pasword", "p")}, Options{}, "pasword", `did you mean "password"?`},
		{"CHAP secret key", Request{VolumeContext: m("targetPortal", "h", "iqn", "iqn.2001-04.com.example:t", "lun", "0", "sessionCHAPAuth", "true"),
			Secrets: m("node.session.auth.username", "u", "node.session.auth.pasword", "0123456789ab")}, Options{}, "node.session.auth.pasword", `did you mean "node.session.auth.password"?`},
		{"default backend does not hide it", Request{VolumeContext: m("sorce", "//files/data")}, Options{DefaultKind: KindSMB}, "sorce", `did you mean "source"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.VolumeID = "vol-1"
			_, err := Parse(tt.req, tt.o)
			assertErrKey(t, err, tt.wantKey)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "//files/data") || strings.Contains(err.Error(), `"pw"`) {
				t.Errorf("error %q quotes a value", err)
			}
		})
	}
}

// TestTypoAliased: --context-alias maps a vendor key onto a contract key
// before the check, so a vendor's key that looks like a typo is usable.
func TestTypoAliased(t *testing.T) {
	v, err := Parse(Request{VolumeID: "v", VolumeContext: m("sorce", "//files/data"), Secrets: m("username", "alice", "password", "pw")},
		Options{Aliases: map[string]string{"sorce": "source"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != KindSMB || v.SMB.Share != "data" {
		t.Errorf("volume %+v, want the smb share data", v)
	}
}

// vendorContexts are the volume_context and publish_context keys real
// controllers pass, each set with where it comes from. None may be taken
// for a typo: a user cannot change them.
var vendorContexts = []struct {
	name string
	keys []string
}{
	// external-provisioner's identity and kubelet's csi.storage.k8s.io/
	// keys (podInfoOnMount, --extra-create-metadata).
	{"kubernetes", []string{"storage.kubernetes.io/csiProvisionerIdentity", "csi.storage.k8s.io/pod.name",
		"csi.storage.k8s.io/pod.namespace", "csi.storage.k8s.io/pod.uid", "csi.storage.k8s.io/serviceAccount.name",
		"csi.storage.k8s.io/ephemeral", "csi.storage.k8s.io/pv/name", "csi.storage.k8s.io/pvc/name", "csi.storage.k8s.io/pvc/namespace"}},
	// kubernetes-sigs/azuredisk-csi-driver@0226b3d pkg/azureconstants/azure_constants.go
	{"azuredisk", []string{"cachingmode", "diskencryptionsetid", "diskaccessid", "diskencryptiontype", "diskiopsreadwrite",
		"diskmbpsreadwrite", "diskname", "enablebursting", "fstype", "incremental", "kind", "location", "LUN",
		"maxmountreplicacount", "maxshares", "networkaccesspolicy", "perfprofile", "requestedsizegib", "subscriptionid",
		"resourcegroup", "skuname", "storageaccounttype", "tags", "useragent", "partition", "writeacceleratorenabled",
		"zoned", "enableasyncattach", "devicePath", "currentNode", "device-setting/queue/max_sectors_kb"}},
	// kubernetes-sigs/aws-ebs-csi-driver@429e202 pkg/driver/constants.go
	{"aws-ebs", []string{"devicePath", "volumeID", "partition", "type", "iopspergb", "allowautoiopspergbincrease",
		"allowautoiopsincreaseonmodify", "volumeinitializationrate", "iops", "throughput", "encrypted", "kmskeyid",
		"blockexpress", "blocksize", "inodesize", "bytesperinode", "numberofinodes", "ext4bigalloc", "ext4clustersize",
		"ext4encryptionsupport", "outpostarn", "blockattachuntilinitialized", "tagSpecification_1", "lockmode", "lockduration"}},
	// kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
	// pkg/constants/constants.go, pkg/gce-pd-csi-driver/controller.go
	{"gce-pd", []string{"partition", "data-cache-size", "data-cache-mode", "disk-size", "force-attach"}},
	// kubernetes-sigs/vsphere-csi-driver@bf80902 pkg/csi/service/common/constants.go
	{"vsphere", []string{"type", "linked-clone-source-uid", "datastoreurl", "storagepolicyname", "storagepolicyid",
		"svstorageclass", "storagetopologytype", "fstype", "storagepool", "hostlocal", "hostlocalpolicy",
		"csi.storage.k8s.io/sc/name", "csi.vsphere.volume/fast-provisioning", "diskUUID", "vmUUID", "fake-attach"}},
	// democratic-csi/democratic-csi@8a4a28a
	// src/driver/controller-zfs-generic/index.js (iSCSI and SMB volumes)
	{"democratic-csi", []string{"node_attach_driver", "provisioner_driver", "portal", "portals", "interface", "iqn",
		"lun", "server", "share"}},
	// docs/vendor-integration.md: Trident's and others' keys aliased there.
	{"vendor-integration", []string{"iscsiTargetIqn", "targetIQN", "lunId"}},
}

// TestVendorKeysAreNotTypos: every key of vendorContexts, in volume_context
// and in publish_context, parses (a disk volume with a serial; keys of
// another backend are not the point here) or fails for another reason
// than a typo.
func TestVendorKeysAreNotTypos(t *testing.T) {
	for _, vc := range vendorContexts {
		for _, k := range vc.keys {
			for _, where := range []string{"volume_context", "publish_context"} {
				ctx := m("backend", "disk", "diskSerial", "s")
				req := Request{VolumeID: "v", VolumeContext: ctx}
				if where == "volume_context" {
					ctx[k] = "x"
				} else {
					req.PublishContext = m(k, "x")
				}
				_, err := Parse(req, Options{})
				if err != nil && strings.Contains(err.Error(), "did you mean") {
					t.Errorf("%s key %q in %s taken for a typo: %v", vc.name, k, where, err)
				}
			}
		}
	}
}

// TestVendorKeysAllowed: the vendor keys close to a contract key are
// exactly those vendorKeys lists, so the list stays honest.
func TestVendorKeysAllowed(t *testing.T) {
	known := make(map[string]KeyDoc, len(contextKeys)+len(secretKeys))
	for f, k := range contextKeys {
		known[f] = k
	}
	for f, k := range secretKeys {
		known[f] = k
	}
	var close []string
	for _, vc := range vendorContexts {
		for _, k := range vc.keys {
			f := fold(k)
			if _, ok := known[f]; ok || strings.Contains(f, "/") {
				continue
			}
			for kf := range known {
				if editDistance(f, kf) <= typoDistance(len(kf)) && !slices.Contains(close, f) {
					close = append(close, f)
				}
			}
		}
	}
	slices.Sort(close)
	var listed []string
	for k := range vendorKeys {
		listed = append(listed, k)
	}
	slices.Sort(listed)
	if !slices.Equal(close, listed) {
		t.Errorf("vendor keys within a typo of a contract key: %q; vendorKeys lists %q", close, listed)
	}
}

// TestDemocraticCSI: democratic-csi's iSCSI volume_context, with the
// aliases docs/vendor-integration.md gives, is an iSCSI volume.
func TestDemocraticCSI(t *testing.T) {
	req := Request{VolumeID: "v", VolumeContext: m("node_attach_driver", "iscsi", "portal", "10.0.0.1:3260", "portals", "",
		"interface", "", "iqn", "iqn.2001-04.com.example:t", "lun", "0")}
	v, err := Parse(req, Options{Aliases: map[string]string{"node_attach_driver": "backend", "portal": "targetPortal"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != KindISCSI || v.ISCSI.Portals[0].Address != "10.0.0.1" {
		t.Errorf("volume %+v", v)
	}
	// Without the alias of portal, targetPortal is missing, as before.
	_, err = Parse(req, Options{Aliases: map[string]string{"node_attach_driver": "backend"}})
	assertErrKey(t, err, "targetPortal")
}

// TestInferredBackendConflicts: a volume without the backend key whose
// secret or keys belong to another backend than the one inferred is
// refused, saying what was inferred and why.
func TestInferredBackendConflicts(t *testing.T) {
	iscsiCtx := m("targetPortal", "10.0.0.1", "iqn", "iqn.2001-04.com.example:t", "lun", "0")
	tests := []struct {
		name    string
		req     Request
		o       Options
		wantKey string
		want    []string
	}{
		{"smb secret without any key", Request{Secrets: m("username", "alice", "password", "pw")}, Options{},
			"password", []string{"password, username", "the smb backend", "without source or iqn this is a disk volume"}},
		{"smb secret on a disk volume found by its volume ID", Request{Secrets: m("username", "alice", "password", "pw")},
			Options{VolumeIDDisk: VolumeIDDiskSerial}, "password", []string{"the smb backend", "disk volume"}},
		{"smb secret with the default backend and no disk key", Request{Secrets: m("username", "alice", "password", "pw")},
			Options{DefaultKind: KindDisk, VolumeIDDisk: VolumeIDDiskSerial}, "password", []string{"the smb backend", "the node default backend is disk"}},
		{"chap secret on a disk volume", Request{VolumeContext: m("diskSerial", "s"), Secrets: m("node.session.auth.username", "u", "node.session.auth.password", "0123456789ab")}, Options{},
			"node.session.auth.password", []string{"the iscsi backend", "disk volume"}},
		{"chap secret on an smb volume", Request{VolumeContext: m("source", `\\s\x`), Secrets: m("node.session.auth.username", "u")}, Options{},
			"node.session.auth.username", []string{"the iscsi backend", "source makes this an smb volume"}},
		{"iqn on an smb volume", Request{VolumeContext: m("source", `\\s\x`, "iqn", "iqn.2001-04.com.example:t")}, Options{},
			"iqn", []string{"the iscsi backend", "source makes this an smb volume"}},
		{"source on a volume with a default", Request{VolumeContext: m("source", `\\s\x`, "diskSerial", "s")}, Options{DefaultKind: KindDisk},
			"source", []string{"the smb backend", "the node default backend is disk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.VolumeID = "vol-1"
			_, err := Parse(tt.req, tt.o)
			assertErrKey(t, err, tt.wantKey)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), `"pw"`) {
				t.Errorf("error %q quotes a secret", err)
			}
		})
	}
	// With the backend key the other backend's secret keys are the user's
	// choice: a Secret shared between StorageClasses.
	if _, err := Parse(Request{VolumeID: "v", VolumeContext: m("backend", "disk", "diskSerial", "s"),
		Secrets: m("username", "alice", "password", "pw")}, Options{}); err != nil {
		t.Errorf("explicit disk backend with smb secret keys: %v", err)
	}
	// username and password are also a vendor's names for its array's
	// credentials, which some vendors name as every volume's node-stage
	// secret (HPE's hpe-backend: serviceName, servicePort, backend,
	// username, password). On a volume its own keys identify (an iqn, a
	// disk selector) they are that vendor's, never a reason to refuse it.
	hpe := m("serviceName", "alletra6000-csp-svc", "servicePort", "8080", "backend", "10.0.0.9", "username", "admin", "password", "pw")
	for _, tt := range []struct {
		name string
		req  Request
		o    Options
	}{
		{"iscsi volume", Request{VolumeContext: iscsiCtx, Secrets: hpe}, Options{}},
		{"disk volume with a serial", Request{VolumeContext: m("diskSerial", "s"), Secrets: hpe}, Options{}},
		{"disk volume with a published LUN", Request{PublishContext: m("diskLUN", "3"), Secrets: hpe}, Options{}},
		{"disk volume with the default backend", Request{VolumeContext: m("diskSerial", "s"), Secrets: hpe}, Options{DefaultKind: KindDisk}},
	} {
		tt.req.VolumeID = "vol-1"
		if _, err := Parse(tt.req, tt.o); err != nil {
			t.Errorf("%s with a vendor's node-stage secret of username and password: %v", tt.name, err)
		}
	}
}
