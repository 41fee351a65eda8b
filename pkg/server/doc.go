// Package server runs the plugin's gRPC server: it parses and claims the unix
// socket endpoint (under a lock file next to it, or where ClaimLocked is
// told, so that of plugins started at once exactly one serves; removing a
// stale socket, refusing one a live process serves, and at close removing
// the socket only while it is still the one it created: Socket.Owned),
// chains the interceptors every RPC goes through (panic recovery,
// contextual logger with the method and volume ID, one V(2) line per
// mutating RPC, request bodies at V(5) through protosanitizer, CSI
// operation metrics), serves the optional HTTP endpoint (/metrics,
// /healthz, and /debug/pprof/ when asked for) and stops gracefully within
// a bound.
//
// It knows nothing of volumes or hosts.
package server
