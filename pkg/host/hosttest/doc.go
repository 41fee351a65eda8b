// Package hosttest holds test tooling for code written against pkg/host:
// Unimplemented, a host whose every method fails with
// host.ErrNotImplemented, as the base of fakes that implement only what a
// test needs.
//
// Test tooling only; never imported by the plugin's production code.
package hosttest
