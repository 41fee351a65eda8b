// Package cloud runs the plugin binary with --cloud against fake instance
// metadata services (test/harness/imds) that speak AWS's, GCE's and Azure's
// protocols on 127.0.0.1, and checks what a CO and the cloud's controller
// see: NodeGetInfo's node ID and topology segments exactly as the upstream
// node plugins report them, VOLUME_ACCESSIBILITY_CONSTRAINTS advertised,
// --node-id and --topology winning over the metadata service (and saying
// so in the log), no session token in the log at -v=10, and a service
// that hangs, answers 500 or is absent failing the start within
// --cloud-metadata-timeout with exit status 1, one message naming the
// cloud and the URL, and no socket.
package cloud
