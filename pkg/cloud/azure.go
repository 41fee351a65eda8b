package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Azure's Instance Metadata Service, as azuredisk-csi-driver's node reads
// it through cloud-provider-azure: pkg/provider/azure_instance_metadata.go
// (getInstanceMetadata) and pkg/consts/consts.go at
// kubernetes-sigs/cloud-provider-azure df3a4049e23875155bb2cf616466d892ed14735b,
// the version azuredisk-csi-driver v1.34.5 requires: GET /metadata/instance
// with "Metadata: True", format=json and the pinned api-version
// ImdsInstanceAPIVersion.
const (
	azurePath       = "/metadata/instance"
	azureAPIVersion = "2021-10-01"
	azureHeader     = "Metadata"
)

// azureInstance holds the fields of the instance document the zone comes
// from (ComputeMetadata in azure_instance_metadata.go).
type azureInstance struct {
	Compute *struct {
		Location string `json:"location"`
		Zone     string `json:"zone"`
	} `json:"compute"`
}

// readAzure derives what azuredisk-csi-driver's NodeGetInfo reports
// (pkg/azuredisk/nodeserver.go at v1.34.5,
// fb4981e375c55d93dab0cfcfd0b4644921d095b7):
//
//   - node ID: the node name (d.NodeID, from its --nodeid; only its
//     optional --get-nodeid-from-imds, off by default, reads IMDS);
//   - topology.<driver name>/zone (topologyKey, azuredisk.go; the driver
//     name is disk.csi.azure.com by default), always present, "" unless
//     the VM is in an availability zone;
//   - in a zone, "<location>-<zone number>" under that key and under
//     topology.kubernetes.io/zone (consts.WellKnownTopologyKey): the zone
//     comes from cloud-provider-azure's GetZone (azure_zones.go:
//     makeZone lower-cases the location; without a zone it falls back to
//     the fault domain, which IsValidAvailabilityZone then rejects, so
//     neither key gets a value).
func readAzure(ctx context.Context, c *client, cfg Config) (Identity, error) {
	q := url.Values{"api-version": {azureAPIVersion}, "format": {"json"}}
	body, err := c.get(ctx, request{method: http.MethodGet, path: azurePath + "?" + q.Encode(), header: http.Header{azureHeader: {"true"}}})
	if err != nil {
		return Identity{}, err
	}
	var doc azureInstance
	if err := json.Unmarshal(body, &doc); err != nil {
		return Identity{}, fmt.Errorf("GET %s: not an instance document: %w", azurePath, err)
	}
	if doc.Compute == nil || doc.Compute.Location == "" {
		return Identity{}, fmt.Errorf("GET %s: the instance document lacks compute.location", azurePath)
	}
	key := "topology." + cfg.DriverName + "/zone"
	seg := map[string]string{key: ""}
	if z := doc.Compute.Zone; z != "" {
		n, err := strconv.Atoi(z)
		if err != nil {
			return Identity{}, fmt.Errorf("GET %s: compute.zone %q is not a zone number", azurePath, z)
		}
		zone := fmt.Sprintf("%s-%d", strings.ToLower(doc.Compute.Location), n)
		seg[key] = zone
		seg[wellKnownZoneKey] = zone
	}
	return Identity{NodeID: cfg.NodeName, Topology: seg}, nil
}
