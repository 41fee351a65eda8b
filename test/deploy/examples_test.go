package deploy

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/wincsi/csi-windows-node/pkg/contract"
)

// reservedPrefix marks the keys kubelet and external-provisioner own.
const reservedPrefix = "csi.storage.k8s.io/"

// provisionerKeys are the StorageClass parameters external-provisioner
// consumes itself and removes before CreateVolume.
var provisionerKeys = func() map[string]bool {
	m := map[string]bool{reservedPrefix + "fstype": true}
	for _, op := range []string{"provisioner", "controller-publish", "node-stage", "node-publish", "controller-expand", "node-expand"} {
		m[reservedPrefix+op+"-secret-name"] = true
		m[reservedPrefix+op+"-secret-namespace"] = true
	}
	return m
}()

// controllerOutput is what the vendor's controller adds to an example's
// parameters: the volume ID it returns, extra volume_context keys and the
// publish_context of ControllerPublishVolume. Every StorageClass example
// needs an entry, so a new example cannot skip the contract check.
type controllerOutput struct {
	volumeID string
	context  map[string]string
	publish  map[string]string
}

var controllerOutputs = map[string]controllerOutput{
	// azuredisk publishes the LUN the disk is attached at.
	"azure-disk-windows": {volumeID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/pvc-1", publish: map[string]string{"LUN": "2"}},
	// The aws-ebs and gce-pd presets derive the disk from the volume ID.
	"ebs-windows": {volumeID: "vol-0123456789abcdef0", publish: map[string]string{"devicePath": "/dev/xvdba"}},
	"pd-windows":  {volumeID: "projects/p/zones/europe-west1-b/disks/pvc-1"},
	// The vendor-example controller publishes a vSphere-style disk UUID.
	"acme-disk-windows": {volumeID: "acme-1", publish: map[string]string{"diskUUID": "6000C298-595e-0d8d-2f3e-2e3c1e9d6b1a"}},
	// csi-driver-smb returns its parameters, including the PVC metadata
	// external-provisioner adds with --extra-create-metadata.
	"smb-windows": {volumeID: "fs1.example.com/k8s#team-a/data#pvc-1", context: map[string]string{
		"csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "team-a", "csi.storage.k8s.io/pv/name": "pvc-1",
	}},
	// The vendor-example controller publishes its target and LUN under
	// its own names, aliased by the overlay.
	"acme-iscsi-windows":           {volumeID: "acme-2", publish: map[string]string{"targetIQN": "iqn.2005-10.com.example:vol2", "lunId": "1"}},
	"acme-iscsi-mpio-chap-windows": {volumeID: "acme-3", publish: map[string]string{"targetIQN": "iqn.2005-10.com.example:vol3", "lunId": "4"}},
}

// TestExamples decodes every example strictly and checks its keys against
// the parameter contract: every StorageClass parameter is a contract key or
// a csi.storage.k8s.io/ key, every PV attribute a contract key, every Secret
// key a contract secret key; drivers are served by an overlay; referenced
// secrets exist. Then it parses each volume as the node would, with the
// node flags of the overlay that serves its driver.
func TestExamples(t *testing.T) {
	contextKeys, secretKeys := map[string]bool{}, map[string]bool{}
	for _, k := range contract.Keys() {
		if k.Source == contract.SourceSecret {
			secretKeys[k.Name] = true
		} else {
			contextKeys[k.Name] = true
		}
	}
	drivers := overlayDrivers(t)

	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]map[string]string{} // namespace/name -> data
	var classes []*storagev1.StorageClass
	var pvs []*corev1.PersistentVolume
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(examplesDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decodeAll(t, e.Name(), b) {
			switch v := o.(type) {
			case *storagev1.StorageClass:
				classes = append(classes, v)
			case *corev1.PersistentVolume:
				pvs = append(pvs, v)
			case *corev1.Secret:
				data := map[string]string{}
				for k, s := range v.StringData {
					data[k] = s
				}
				for k, s := range v.Data {
					data[k] = string(s)
				}
				for k := range data {
					if !secretKeys[k] {
						t.Errorf("%s: Secret %s key %q is not a secret key of the contract", e.Name(), v.Name, k)
					}
				}
				secrets[v.Namespace+"/"+v.Name] = data
			case *storagev1.CSIDriver:
				if _, ok := drivers[v.Name]; !ok {
					t.Errorf("%s: CSIDriver %s is served by no overlay", e.Name(), v.Name)
				}
			case *corev1.PersistentVolumeClaim:
			default:
				t.Errorf("%s: unexpected %T", e.Name(), o)
			}
		}
	}

	for _, sc := range classes {
		t.Run("StorageClass/"+sc.Name, func(t *testing.T) {
			opts, ok := drivers[sc.Provisioner]
			if !ok {
				t.Fatalf("provisioner %s is served by no overlay", sc.Provisioner)
			}
			out, ok := controllerOutputs[sc.Name]
			if !ok {
				t.Fatalf("no controllerOutputs entry: say what the controller adds to these parameters")
			}
			req := contract.Request{VolumeID: out.volumeID, VolumeContext: map[string]string{}, PublishContext: out.publish}
			for k, v := range sc.Parameters {
				switch {
				case provisionerKeys[k]:
				case strings.HasPrefix(k, reservedPrefix) && !contextKeys[k]:
					t.Errorf("parameter %q: not a key external-provisioner or the contract knows", k)
				case !contextKeys[k]:
					t.Errorf("parameter %q is not a key of the parameter contract (docs/parameters.md)", k)
				default:
					req.VolumeContext[k] = v
				}
			}
			for k, v := range out.context {
				req.VolumeContext[k] = v
			}
			req.FsType = sc.Parameters[reservedPrefix+"fstype"]
			if name, ok := sc.Parameters[reservedPrefix+"node-stage-secret-name"]; ok {
				ref := sc.Parameters[reservedPrefix+"node-stage-secret-namespace"] + "/" + name
				if req.Secrets, ok = secrets[ref]; !ok {
					t.Fatalf("node-stage secret %s is not among the examples", ref)
				}
			}
			parseExample(t, req, opts)
		})
	}
	for _, pv := range pvs {
		t.Run("PersistentVolume/"+pv.Name, func(t *testing.T) {
			c := pv.Spec.CSI
			if c == nil {
				t.Fatal("not a CSI volume")
			}
			opts, ok := drivers[c.Driver]
			if !ok {
				t.Fatalf("driver %s is served by no overlay", c.Driver)
			}
			for k := range c.VolumeAttributes {
				if !contextKeys[k] {
					t.Errorf("volumeAttributes key %q is not a key of the parameter contract", k)
				}
			}
			req := contract.Request{VolumeID: c.VolumeHandle, VolumeContext: c.VolumeAttributes, FsType: c.FSType}
			if ref := c.NodeStageSecretRef; ref != nil {
				if req.Secrets, ok = secrets[ref.Namespace+"/"+ref.Name]; !ok {
					t.Fatalf("node-stage secret %s/%s is not among the examples", ref.Namespace, ref.Name)
				}
			}
			parseExample(t, req, opts)
		})
	}
	for name := range controllerOutputs {
		found := false
		for _, sc := range classes {
			found = found || sc.Name == name
		}
		if !found {
			t.Errorf("controllerOutputs[%q] matches no StorageClass", name)
		}
	}
}

// parseExample parses a volume with the contract and requires that no key
// goes unused.
func parseExample(t *testing.T, req contract.Request, opts contract.Options) {
	t.Helper()
	v, err := contract.Parse(req, opts)
	if err != nil {
		t.Fatalf("the node would refuse this volume: %v", err)
	}
	// Keys the contract does not know are ignored at run time; in an
	// example they are mistakes. devicePath is EBS's Linux device name,
	// which the aws-ebs preset documents as ignored.
	var ignored []string
	for _, k := range v.Ignored {
		if k != "devicePath" {
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		sort.Strings(ignored)
		t.Errorf("keys the node would ignore: %v", ignored)
	}
}

// overlayDrivers maps each overlay's driver name to the contract options
// its node flags produce.
func overlayDrivers(t *testing.T) map[string]contract.Options {
	t.Helper()
	out := map[string]contract.Options{}
	for key, r := range kustomizeRenderings(t) {
		if key == "" {
			continue
		}
		ds := nodeDaemonSet(t, r)
		o, co := parsePluginArgs(t, r.name, ds.Spec.Template.Spec.Containers[0])
		out[o.DriverName] = co
	}
	return out
}
