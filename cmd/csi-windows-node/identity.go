package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/wincsi/csi-windows-node/pkg/cloud"
	"github.com/wincsi/csi-windows-node/pkg/config"
)

// nodeIdentity settles the node ID and topology NodeGetInfo reports before
// anything is built or served: with --cloud, from the cloud's instance
// metadata service (pkg/cloud), --node-id and --topology given on the
// command line winning. Without --cloud the flags stand as they are.
func nodeIdentity(ctx context.Context, opts *config.Options) error {
	if opts.Cloud == config.CloudNone {
		return nil
	}
	explicit := ""
	if opts.IsSet("node-id") {
		explicit = opts.NodeID
	}
	id, err := cloud.Resolve(ctx, cloud.Config{
		Provider:   cloud.Provider(opts.Cloud),
		Endpoint:   opts.CloudMetadataEndpoint,
		Timeout:    opts.CloudMetadataTimeout,
		DriverName: opts.DriverName,
		NodeName:   opts.NodeID,
		NodeID:     explicit,
		Topology:   opts.Topology,
	})
	if err != nil {
		return err
	}
	// kubelet turns the segments into node labels: what the metadata
	// service said must follow the label rules as the flags do.
	for _, k := range slices.Sorted(maps.Keys(id.Topology)) {
		if err := config.ValidateTopology(k, id.Topology[k]); err != nil {
			return fmt.Errorf("--cloud=%s: topology segment %s=%s: %w", opts.Cloud, k, id.Topology[k], err)
		}
	}
	if err := config.ValidateTopologyKeys(id.Topology); err != nil {
		return fmt.Errorf("--cloud=%s: topology: %w", opts.Cloud, err)
	}
	if id.NodeID == "" {
		return fmt.Errorf("--cloud=%s: no node ID", opts.Cloud)
	}
	if err := config.ValidateNodeID(id.NodeID); err != nil {
		return fmt.Errorf("--cloud=%s: node ID: %w", opts.Cloud, err)
	}
	opts.NodeID, opts.Topology = id.NodeID, id.Topology
	return nil
}
