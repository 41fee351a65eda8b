// Package wmiexec is the Windows executor of pkg/winhost: the only code
// in the plugin that touches COM, WMI and Win32 for the host backends, and
// the only package that imports github.com/microsoft/wmi (and go-ole, on
// which it is built). A test in this package fails if any other package of
// the module imports either.
//
// It implements winhost.Executor and nothing else: one WMI or Win32 call per
// method, VARIANTs converted to Go values as winhost.Instance documents, no
// retries, no parsing of the replies, no decisions. Everything that can be
// tested without Windows lives above it, in winhost.
//
// COM discipline: WMI calls run on a small pool of long-lived workers
// (pkg/winhost/comworker), each locked to its OS thread, initialised
// once into the multithreaded apartment, with one SWbemServices connection
// per namespace and the class definitions it needs, created lazily and
// reused for the worker's life. COM security (packet privacy, impersonate)
// is set once per process before the first connection. Win32 calls run on a
// second pool, so that a hung device cannot starve WMI work and the other
// way round. Every call honours its context: a caller whose deadline passes
// gets an error wrapping ctx.Err() at once, and the worker stuck in the call
// is retired and replaced (see comworker).
//
// Off Windows, New fails with an error wrapping host.ErrNotImplemented.
package wmiexec
