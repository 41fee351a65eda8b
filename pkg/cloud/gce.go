package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
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

// GCEDisk is one disk of the instance as the metadata server lists it
// under instance/disks/?recursive=true, in the fields
// gcp-compute-persistent-disk-csi-driver reads on Windows to find a disk on
// NVMe machine types (kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
// pkg/mount-manager/safe-mounter-v1_windows.go, its metadata disk struct).
type GCEDisk struct {
	DeviceName string `json:"deviceName"`
	Index      int    `json:"index"`
	Interface  string `json:"interface"` // "SCSI" or "NVME"
	Mode       string `json:"mode"`
	Type       string `json:"type"`
	// NVMeNamespaceID is nvmeNamespaceIdentifier: the first 64 bits of the
	// namespace's NGUID (nil when the entry has none).
	NVMeNamespaceID *uint64 `json:"nvmeNamespaceIdentifier,omitempty"`
}

// NVMe reports a disk attached over NVMe.
func (g GCEDisk) NVMe() bool { return strings.EqualFold(g.Interface, "NVME") }

// GCEMetadata reads the instance's disks from the Compute Engine metadata
// server while the plugin runs (--cloud=gce): the gce-pd disk preset asks
// for them at each stage of a disk on an NVMe machine type.
type GCEMetadata struct {
	endpoint string
	timeout  time.Duration
}

// NewGCEMetadata returns a reader of the metadata server at endpoint (""
// means DefaultEndpoint); timeout bounds one request (0 means
// DefaultRequestTimeout).
func NewGCEMetadata(endpoint string, timeout time.Duration) *GCEMetadata {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return &GCEMetadata{endpoint: strings.TrimRight(endpoint, "/"), timeout: timeout}
}

// Disks returns the instance's disks: GET instance/disks/?recursive=true
// with "Metadata-Flavor: Google", retried within twice the request timeout
// and ctx.
func (m *GCEMetadata) Disks(ctx context.Context) ([]GCEDisk, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*m.timeout)
	defer cancel()
	c := newClient(m.endpoint, m.timeout)
	defer c.close()
	req := request{method: http.MethodGet, path: gcePrefix + "instance/disks/?recursive=true", header: http.Header{gceFlavorHeader: {gceFlavor}}}
	body, err := c.get(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("metadata server %s: %w", m.endpoint, err)
	}
	var disks []GCEDisk
	if err := json.Unmarshal(body, &disks); err != nil {
		return nil, fmt.Errorf("metadata server %s: %s: %w", m.endpoint, req, err)
	}
	return disks, nil
}
