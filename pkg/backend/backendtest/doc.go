// Package backendtest is test tooling for the backends and the state they
// share (pkg/backend/...): stores whose answers a test plants, for the
// states the simulated host cannot produce on Linux. Tests only; nothing
// of the plugin imports it (depguard rule test-only).
package backendtest
