package cloud

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Provider names a cloud whose instance metadata service the plugin reads.
type Provider string

// The providers of --cloud.
const (
	None  Provider = "none"
	AWS   Provider = "aws"
	GCE   Provider = "gce"
	Azure Provider = "azure"
)

// DefaultEndpoint is the base URL of the metadata service on all three
// clouds: the link-local address each documents, used by the upstream
// clients too (aws-sdk-go-v2 feature/ec2/imds defaultIPv4Endpoint,
// cloud.google.com/go/compute/metadata metadataIP, cloud-provider-azure
// consts.ImdsServer). The address rather than GCE's host name
// metadata.google.internal, because it needs no DNS.
const DefaultEndpoint = "http://169.254.169.254"

// DefaultRequestTimeout bounds one HTTP request to the metadata service.
const DefaultRequestTimeout = 5 * time.Second

// Config says where to read the identity and what the command line gave.
type Config struct {
	Provider Provider
	// Endpoint is the metadata service's base URL; "" means
	// DefaultEndpoint.
	Endpoint string
	// Timeout bounds the whole discovery, retries included.
	Timeout time.Duration
	// RequestTimeout bounds each request; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// DriverName names the driver-specific topology key
	// topology.<driver name>/zone of aws and azure, as the upstream
	// drivers derive it from theirs.
	DriverName string
	// NodeName is the Kubernetes node name, Azure's node ID.
	NodeName string
	// NodeID is --node-id when given on the command line: it wins over the
	// discovered node ID. "" when not given.
	NodeID string
	// Topology holds the --topology segments: each wins over the
	// discovered segment with its key; keys not discovered are added.
	Topology map[string]string
}

// Identity is what NodeGetInfo reports about the node.
type Identity struct {
	NodeID   string
	Topology map[string]string
}

// reader reads one cloud's metadata service and derives the identity.
type reader func(ctx context.Context, c *client, cfg Config) (Identity, error)

var readers = map[Provider]reader{AWS: readAWS, GCE: readGCE, Azure: readAzure}

// Resolve reads the identity from cfg.Provider's metadata service within
// cfg.Timeout and lets cfg.NodeID and cfg.Topology win over it.
func Resolve(ctx context.Context, cfg Config) (Identity, error) {
	read, ok := readers[cfg.Provider]
	if !ok {
		return Identity{}, fmt.Errorf("--cloud=%s: want aws, gce or azure", cfg.Provider)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	cfg.Endpoint = strings.TrimRight(cfg.Endpoint, "/")
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	logger := klog.FromContext(ctx).WithValues("cloud", cfg.Provider, "metadataEndpoint", cfg.Endpoint)
	ctx = klog.NewContext(ctx, logger)
	logger.V(2).Info("Reading the node's identity from the instance metadata service", "timeout", cfg.Timeout)

	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	c := newClient(cfg.Endpoint, cfg.RequestTimeout)
	defer c.close()
	id, err := read(dctx, c, cfg)
	if err != nil {
		return Identity{}, &Error{Provider: cfg.Provider, Endpoint: cfg.Endpoint, Timeout: cfg.Timeout, Attempts: c.attempts, Err: err}
	}
	logger.Info("Node identity from the instance metadata service", "nodeID", id.NodeID, "topology", id.Topology)
	return merge(logger, id, cfg.NodeID, cfg.Topology), nil
}

// merge lets the command line win: nodeID when given, and each segment of
// topology over the discovered segment with its key. Overrides are logged.
func merge(logger klog.Logger, id Identity, nodeID string, topology map[string]string) Identity {
	out := Identity{NodeID: id.NodeID, Topology: maps.Clone(id.Topology)}
	if out.Topology == nil {
		out.Topology = map[string]string{}
	}
	if nodeID != "" && nodeID != id.NodeID {
		logger.Info("--node-id overrides the discovered node ID", "nodeID", nodeID, "discovered", id.NodeID)
		out.NodeID = nodeID
	}
	for _, k := range slices.Sorted(maps.Keys(topology)) {
		v := topology[k]
		if d, ok := id.Topology[k]; ok && d != v {
			logger.Info("--topology overrides a discovered segment", "segment", k, "value", v, "discovered", d)
		}
		out.Topology[k] = v
	}
	return out
}

// Error is a failed discovery: the plugin must not start with it.
type Error struct {
	Provider Provider
	Endpoint string
	Timeout  time.Duration
	Attempts int   // requests sent, retries included
	Err      error // the last request's failure, or what the answer lacked
}

func (e *Error) Error() string {
	return fmt.Sprintf("--cloud=%s: could not read the node's identity from the instance metadata service at %s (%d requests within --cloud-metadata-timeout=%s): %v",
		e.Provider, e.Endpoint, e.Attempts, e.Timeout, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// errNoAnswer marks a request that got no answer within its timeout or the
// overall deadline.
var errNoAnswer = errors.New("no answer")
