// Package filelock takes exclusive, advisory locks on files that the
// operating system releases when the process ends (flock on Unix,
// LockFileEx on Windows), so that a crash never leaves a lock behind.
//
// What belongs here: taking and releasing such a lock. What does not: what
// a lock protects, and whether to wait for one (callers decide: the plugin's
// socket is refused at once, the simulated host's directory waits briefly).
package filelock
