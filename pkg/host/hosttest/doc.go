// Package hosttest is test tooling for code written against pkg/host.
//
// Its main part is the contract every implementation of pkg/host must
// keep, as one suite run against each: the simulated host
// (pkg/sim), the Windows host over the scripted executor
// (pkg/winhost, replies that stand for Windows' own) and the Windows
// host over the real executor on Windows (test/integration, VHDX disks).
// Where the implementations used to disagree, the case says which
// documentation decided. It covers, per interface: the sentinel error of
// every missing object, offline, read-only and critical disks, blank and
// formatted volumes, mount points against links, the idempotency of the
// mutating calls and an ended context.
//
// It also holds Unimplemented, a host whose every method fails with
// host.ErrNotImplemented, as the base of fakes that implement only what a
// test needs.
//
// What belongs here: the cases, the Env interface an implementation's test
// provides, and such fakes. What does not: how an environment sets a state
// up (each environment's own test file), backend policy. Never imported by
// the plugin's production code.
package hosttest
