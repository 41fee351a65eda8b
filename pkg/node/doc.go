// Package node is the CSI Node service. It validates every request as the
// CSI spec asks (InvalidArgument naming the field or key, before any host
// call), confines paths to the kubelet directory, serialises operations per
// volume (a concurrent second operation on a volume gets Aborted; different
// volumes run in parallel), keeps NodeStageVolume and NodePublishVolume
// idempotent, dispatches to the backend the parameter contract names, and
// turns host errors into gRPC codes in one place (errors.go).
//
// What does not belong here: host calls beyond what pkg/backend offers,
// knowledge of WMI or Win32, build tags.
package node
