// Package cloud settles the node's identity, the node ID and the topology
// segments NodeGetInfo reports, from the instance metadata service of the
// cloud the node runs in (--cloud=aws, gce or azure), in exactly the forms
// the cloud's own CSI controller expects: what the upstream node plugins
// (aws-ebs-csi-driver, gcp-compute-persistent-disk-csi-driver,
// azuredisk-csi-driver) report, cited in aws.go, gce.go and azure.go. Node
// ID and segments given on the command line win over discovered ones, and
// each override is logged.
//
// The metadata service is read once, at start-up, before anything is
// served: with a per-request timeout, retries with backoff on what may pass
// (no answer, 5xx, 429, Azure's 410) and one overall deadline. When the
// service does not answer in time, Resolve returns one error naming the
// cloud and the URL, and the plugin does not start: a node reporting the
// wrong identity would have volumes attached to another machine. Session
// tokens (AWS IMDSv2) live only in request headers; they are never logged
// nor put into errors, and redirects are not followed, so no header leaves
// the metadata service's address.
//
// What belongs here: the three metadata protocols, the identity derived
// from them, and merging it with the flags. What does not: flag parsing and
// validation (pkg/config), cloud API calls beyond the metadata service,
// anything about disks (the disk presets live in pkg/contract), and the
// fake metadata services the tests use (test/harness/imds).
package cloud
