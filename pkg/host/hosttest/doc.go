// Package hosttest is test tooling for code written against pkg/host.
//
// Its main part is the contract every implementation of pkg/host must
// keep, as one suite run against each: the simulated host
// (pkg/sim), the Windows host over the scripted executor
// (pkg/winhost, replies that stand for Windows' own) and the Windows
// host over the real executor on Windows (test/integration, VHDX disks).
// Where the implementations used to disagree, the case says which
// documentation decided; where Windows' answer is uncertain, the case
// accepts every documented answer, says so with its source and logs the
// answer it got. It covers, per interface: the sentinel error of every
// missing object, offline, read-only and critical disks, blank and
// formatted volumes, mount points against links, the idempotency of the
// mutating calls and an ended context; SMB global mappings (smb.go: wrong
// credentials, a second user for one server, a server or share that is not
// there, a server that drops) and the iSCSI initiator (iscsi.go: portals,
// CHAP, login and logout, a busy target, persistent logins across a
// reboot, portal removal with sessions). A state an environment cannot
// serve (no SMB server, no iSCSI target, no way to reboot) is skipped
// there, saying why.
//
// It also holds Unimplemented, a host whose every method fails with
// host.ErrNotImplemented, as the base of fakes that implement only what a
// test needs.
//
// What belongs here: the cases, the Env interface an implementation's test
// provides, such fakes, and LoginAndMount, which sets a state up through
// the host interface itself for the environments that have a real host
// behind it. What does not: how an environment serves a state otherwise
// (each environment's own test file), backend policy. Never imported by
// the plugin's production code.
package hosttest
