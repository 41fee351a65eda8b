// Package contract is the parameter contract of csi-windows-node: it turns
// what a vendor's controller and a cluster admin hand the node plugin
// (volume_context, publish_context, node-stage secrets and the volume
// capability's fsType) into one typed, validated Volume.
//
// It is the plugin's main user interface, documented key by key in
// docs/parameters.md; a test keeps the two in agreement.
//
// What belongs here: key names, aliases and presets, defaults, parsing and
// validation of values, and the typed specs the backends consume. Errors are
// *Error values that name the offending key and never quote a secret.
//
// The grammar of portals, iSCSI names, SMB share paths and CHAP secret
// lengths is pkg/host's (names.go), which the simulated host's setup file
// is checked with too; this package names the key a bad value came from.
//
// What does not: gRPC, host calls, anything OS-specific. The package is pure
// and deterministic so that it can be fuzzed.
package contract
