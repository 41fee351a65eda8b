package cloud

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// The Compute Engine metadata server, as gcp-compute-persistent-disk-csi-
// driver's node reads it: pkg/gce-cloud-provider/metadata/metadata.go
// (NewMetadataService) at kubernetes-sigs/gcp-compute-persistent-disk-csi-
// driver v1.26.4 (6e7ea1c1fec09b9826b2f9922eb8919435284c6b), through
// cloud.google.com/go/compute/metadata v0.9.0 (its go.mod), whose
// metadata.go sends GET /computeMetadata/v1/<suffix> with
// "Metadata-Flavor: Google", trims the answer, and takes the zone from the
// last element of instance/zone ("projects/<number>/zones/<zone>").
const (
	gcePrefix       = "/computeMetadata/v1/"
	gceFlavorHeader = "Metadata-Flavor"
	gceFlavor       = "Google"
)

// gceZoneKey is constants.TopologyKeyZone of the PD driver (pkg/constants/
// constants.go at v1.26.4): the one segment its NodeGetInfo reports
// (pkg/gce-pd-csi-driver/node.go; the disk-type segments it adds with
// dynamic volumes need the Kubernetes API and are not reported here).
const gceZoneKey = "topology.gke.io/zone"

// readGCE derives what the PD driver's node reports: node ID
// projects/<project ID>/zones/<zone>/instances/<instance name>
// (common.CreateNodeID, nodeIDFmt in pkg/common/utils.go at v1.26.4) and
// the zone segment.
func readGCE(ctx context.Context, c *client, _ Config) (Identity, error) {
	get := func(suffix string) (string, error) {
		body, err := c.get(ctx, request{method: http.MethodGet, path: gcePrefix + suffix, header: http.Header{gceFlavorHeader: {gceFlavor}}})
		if err != nil {
			return "", err
		}
		v := strings.TrimSpace(string(body))
		if v == "" {
			return "", fmt.Errorf("GET %s%s: empty answer", gcePrefix, suffix)
		}
		return v, nil
	}
	zone, err := get("instance/zone")
	if err != nil {
		return Identity{}, err
	}
	zone = zone[strings.LastIndex(zone, "/")+1:]
	if zone == "" {
		return Identity{}, fmt.Errorf("GET %sinstance/zone: no zone after the last '/'", gcePrefix)
	}
	project, err := get("project/project-id")
	if err != nil {
		return Identity{}, err
	}
	name, err := get("instance/name")
	if err != nil {
		return Identity{}, err
	}
	return Identity{
		NodeID:   fmt.Sprintf("projects/%s/zones/%s/instances/%s", project, zone, name),
		Topology: map[string]string{gceZoneKey: zone},
	}, nil
}
