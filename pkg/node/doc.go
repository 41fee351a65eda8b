// Package node is the CSI Node service. It validates every request as the
// CSI spec asks (InvalidArgument naming the field or key, before any host
// call), confines paths to the kubelet directory, serialises operations per
// volume (a concurrent second operation on a volume gets Aborted; different
// volumes run in parallel), keeps NodeStageVolume and NodePublishVolume
// idempotent, dispatches to the backend the parameter contract names, and
// turns host errors into gRPC codes in one place (errors.go).
//
// The node service makes no host call itself: the backends do the host
// work of a volume, and backend.Publisher what every backend shares
// (publishing, and what is at a request's paths). It only tracks the end of
// the host calls made under a volume's lock (host.Track), to hold the lock
// until they have really ended. It keeps each volume's journal entry, with
// the record its backend gives (backend.Backend.Record), from the start of
// the stage until the unstage has finished.
//
// One file per RPC family: stage.go, publish.go, stats.go, expand.go,
// health.go; gone.go decides about volumes whose staging path is gone;
// lookup.go is what the RPCs on a staged volume share, validate.go the
// request checks, errors.go the gRPC codes.
//
// What does not belong here: host calls, knowledge of WMI or Win32, build
// tags, how the services and backends are wired (pkg/plugin).
package node
