// Package comworker runs host calls on a small pool of long-lived worker
// goroutines, each locked to its own OS thread and initialised once on that
// thread (on Windows: a COM multithreaded apartment and cached WMI
// connections). It bounds the work waiting for a worker, makes every call
// honour its caller's context, and survives calls that never return.
//
// What belongs here: the pool (queue, workers, retirement and replacement of
// workers stuck in a call, shutdown) and its counters. It is OS-neutral and
// knows nothing of COM, WMI or Win32: the per-thread setup and teardown are
// hooks (Config.Init, Config.Close) that pkg/winhost/wmiexec supplies on
// Windows and tests fake on Linux.
//
// What does not: the calls themselves (wmiexec), retries and parsing
// (winhost).
//
// Behaviour under a hung call: the caller stops waiting when its context
// ends and gets an error wrapping ctx.Err(); the call stays outstanding on
// the context's host.Tracker until it really returns; the worker running it
// is retired (it leaves the pool, finishes the call, tears down its thread
// state on its own thread and exits) and a fresh worker replaces it at once,
// so capacity is kept. At most Config.MaxStuck retired workers may be stuck
// at a time; while that many are, new calls fail fast with an error wrapping
// host.ErrBusy instead of spawning threads without bound. A full queue also
// fails fast with host.ErrBusy; nothing ever blocks waiting for queue space.
//
// Background work (a context marked with host.Background: the orphan
// sweep's rounds) runs on workers of its own (Config.BackgroundWorkers),
// which take nothing else, and the other workers take no background call:
// RPCs go first because a sweep never holds a worker they wait for.
package comworker
