package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/klog/v2"
)

// The EC2 instance metadata service (IMDS), as aws-ebs-csi-driver's node
// reads it: pkg/cloud/metadata/imds.go (IMDSInstanceInfo) at
// kubernetes-sigs/aws-ebs-csi-driver v1.64.0
// (6689789f192f8941878801f2730ea972a1196047), through
// github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.18.37 (its go.mod), whose
// api_op_GetToken.go, api_op_GetInstanceIdentityDocument.go,
// api_op_GetMetadata.go and token_provider.go give the paths, headers and
// the IMDSv1 fallback below.
const (
	awsTokenPath    = "/latest/api/token"
	awsDocumentPath = "/latest/dynamic/instance-identity/document"
	awsOutpostPath  = "/latest/meta-data/outpost-arn"

	awsTokenHeader    = "X-Aws-Ec2-Metadata-Token"
	awsTokenTTLHeader = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	// awsTokenTTL is the SDK's defaultTokenTTL (5 minutes): ample for a
	// discovery that is over in seconds. IMDS accepts 1 to 21600.
	awsTokenTTL = "300"
)

// The topology keys of aws-ebs-csi-driver's NodeGetInfo (pkg/driver/node.go
// and driver.go at v1.64.0): the zone under the deprecated
// topology.<driver name>/zone (ZoneTopologyKey; the driver name is
// ebs.csi.aws.com unless a build plugin renames it, cmd/main.go) and under
// topology.kubernetes.io/zone (WellKnownZoneTopologyKey), kubernetes.io/os
// (OSTopologyKey, runtime.GOOS: "windows" on its Windows node), and on an
// Outpost four more segments from the outpost ARN.
const (
	wellKnownZoneKey = "topology.kubernetes.io/zone"
	awsOSKey         = "kubernetes.io/os"
	// awsOS is what EBS's Windows node reports under kubernetes.io/os.
	// This plugin serves Windows nodes only (the simulated host stands in
	// for one), so it is "windows" whatever it was built for.
	awsOS = "windows"
)

// awsDocument holds the fields of the instance identity document
// aws-ebs-csi-driver requires (it fails on an empty one).
type awsDocument struct {
	InstanceID       string `json:"instanceId"`
	AvailabilityZone string `json:"availabilityZone"`
}

// awsIMDS reads the EC2 metadata service with IMDSv2 session tokens, or
// with IMDSv1 when the service refuses to issue one.
type awsIMDS struct {
	c     *client
	token string // never logged nor put into an error
	v1    bool
}

// readAWS derives what aws-ebs-csi-driver's node reports: the node ID is
// the instance ID (NodeGetInfo returns metadata.GetInstanceID()), the
// segments as above.
func readAWS(ctx context.Context, c *client, cfg Config) (Identity, error) {
	m := &awsIMDS{c: c}
	body, err := m.get(ctx, awsDocumentPath)
	if err != nil {
		return Identity{}, err
	}
	var doc awsDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return Identity{}, fmt.Errorf("GET %s: not an instance identity document: %w", awsDocumentPath, err)
	}
	if doc.InstanceID == "" || doc.AvailabilityZone == "" {
		return Identity{}, fmt.Errorf("GET %s: the instance identity document lacks instanceId or availabilityZone", awsDocumentPath)
	}
	seg := map[string]string{
		"topology." + cfg.DriverName + "/zone": doc.AvailabilityZone,
		wellKnownZoneKey:                       doc.AvailabilityZone,
		awsOSKey:                               awsOS,
	}
	if err := m.outpost(ctx, cfg.DriverName, seg); err != nil {
		return Identity{}, err
	}
	return Identity{NodeID: doc.InstanceID, Topology: seg}, nil
}

// outpost adds the segments of an instance on an AWS Outpost. IMDS
// answers outpost-arn with 404 elsewhere. The ARN reads
// arn:<partition>:outposts:<region>:<account>:outpost/<outpost-id>; EBS
// drops "outpost/", parses the ARN and reports region, partition, account
// ID and outpost ID under topology.<driver name>/... (IMDSInstanceInfo and
// NodeGetInfo at v1.64.0). Like EBS, an ARN that does not parse is logged
// and ignored.
func (m *awsIMDS) outpost(ctx context.Context, driver string, seg map[string]string) error {
	body, err := m.get(ctx, awsOutpostPath)
	var se *statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	arn := strings.TrimSpace(string(body))
	parts := strings.SplitN(strings.ReplaceAll(arn, "outpost/", ""), ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		klog.FromContext(ctx).Info("Ignoring an outpost ARN that does not parse", "outpostArn", arn)
		return nil
	}
	prefix := "topology." + driver + "/"
	seg[prefix+"partition"] = parts[1]
	seg[prefix+"region"] = parts[3]
	seg[prefix+"account-id"] = parts[4]
	seg[prefix+"outpost-id"] = parts[5]
	return nil
}

// get reads path with the session token, fetching one first.
func (m *awsIMDS) get(ctx context.Context, path string) ([]byte, error) {
	var body []byte
	err := retry(ctx, func(ctx context.Context) error {
		if err := m.ensureToken(ctx); err != nil {
			return err
		}
		req := request{method: http.MethodGet, path: path}
		if !m.v1 {
			req.header = http.Header{awsTokenHeader: {m.token}}
		}
		var err error
		body, err = m.c.once(ctx, req)
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusUnauthorized && !m.v1 {
			// The token expired or the service restarted: IMDS
			// answers a GET with an invalid token with 401. Fetch a
			// new one and ask again, as the SDK's HandleDeserialize
			// does.
			m.token = ""
			se.again = true
		}
		return err
	})
	return body, err
}

// ensureToken fetches a session token unless one is held or the service
// refused them. IMDSv1 is used only when the token PUT is refused with 403,
// 404 or 405, the statuses on which the SDK's tokenProvider.updateToken
// (token_provider.go, feature/ec2/imds v1.18.37) falls back: a service that
// has no token API (404, 405) or does not allow this caller to use it
// (403). 400 means the PUT itself is wrong and is final, as in the SDK. A
// PUT that gets no answer or a 5xx is retried, unlike in the SDK, which
// also falls back then: a service that does not answer must fail the
// start within --cloud-metadata-timeout, not be read without a token.
func (m *awsIMDS) ensureToken(ctx context.Context) error {
	if m.v1 || m.token != "" {
		return nil
	}
	body, err := m.c.once(ctx, request{method: http.MethodPut, path: awsTokenPath, header: http.Header{awsTokenTTLHeader: {awsTokenTTL}}})
	var se *statusError
	if errors.As(err, &se) {
		switch se.code {
		case http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
			klog.FromContext(ctx).Info("The instance metadata service refused an IMDSv2 session token; reading it with IMDSv1", "httpStatus", se.code)
			m.v1 = true
			return nil
		}
	}
	if err != nil {
		return err
	}
	tok := strings.TrimSpace(string(body))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return fmt.Errorf("PUT %s: the answer is not a session token", awsTokenPath)
	}
	m.token = tok
	return nil
}
