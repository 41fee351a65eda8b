package deploy

import (
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

// overlayClouds are the overlays of the cloud disk drivers and the --cloud
// each must use: the plugin reads the node ID and zone from the instance
// metadata service, so nothing is filled in by hand.
var overlayClouds = map[string]string{
	"aws-ebs":    config.CloudAWS,
	"gce-pd":     config.CloudGCE,
	"azure-disk": config.CloudAzure,
}

// TestCloudOverlays checks the cloud overlays and their Helm values: the
// right --cloud at its default endpoint, no --topology (the zone is read,
// not hand-filled) and no environment variable from pod labels, and for
// aws and gce no --node-id, which would win over the instance's identity.
// The other overlays read no metadata service.
func TestCloudOverlays(t *testing.T) {
	for _, renderings := range []map[string]rendering{kustomizeRenderings(t), helmRenderings(t)} {
		for key, r := range renderings {
			want, ok := overlayClouds[key]
			if !ok {
				want = config.CloudNone
			}
			plugin := nodeDaemonSet(t, r).Spec.Template.Spec.Containers[0]
			opts, _ := parsePluginArgs(t, r.name, plugin)
			if opts.Cloud != want {
				t.Errorf("%s: --cloud=%s, want %s", r.name, opts.Cloud, want)
			}
			if !ok {
				continue
			}
			for _, f := range []string{"cloud-metadata-endpoint", "cloud-metadata-timeout"} {
				if opts.IsSet(f) {
					t.Errorf("%s: --%s is set; the defaults fit the cloud", r.name, f)
				}
			}
			if len(opts.Topology) > 0 {
				t.Errorf("%s: --topology %v: the metadata service gives the topology", r.name, opts.Topology)
			}
			for _, e := range plugin.Env {
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
					t.Errorf("%s: env %s from %s: nothing but the node name is needed", r.name, e.Name, e.ValueFrom.FieldRef.FieldPath)
				}
			}
			switch want {
			case config.CloudAWS, config.CloudGCE:
				if !opts.CloudNodeID() {
					t.Errorf("%s: --node-id=%s would win over the node ID of the metadata service", r.name, opts.NodeID)
				}
			case config.CloudAzure:
				if opts.NodeID != sampleFieldValues["spec.nodeName"] {
					t.Errorf("%s: node ID %q, want the node name (Azure Disk's node ID)", r.name, opts.NodeID)
				}
			}
		}
	}
}
