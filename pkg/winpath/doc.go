// Package winpath is the pure path logic of the node plugin: it parses,
// normalises and confines the paths a container orchestrator (kubelet,
// csi-sanity) sends, and converts Windows path strings between the forms
// the Win32 API, the NTFS link layer and our comparisons need.
//
// What belongs here:
//   - Root, the confinement root (the kubelet directory). Root.Resolve turns
//     a path from a request into its cleaned absolute form, or rejects it
//     when it is empty, relative, outside the root, or uses a grammar the
//     plugin never needs (".." components, UNC and device paths, alternate
//     data streams, DOS device names, components with trailing dots or
//     spaces). Root.CheckLinks walks the path's existing ancestors through
//     a small FS interface and rejects links that lead out of the root.
//   - Two grammars selected by Style: Windows (drive letters, '\' and '/'
//     both separators, case-insensitive) and POSIX (what the plugin uses on
//     Linux against the simulated Windows host).
//   - String helpers for Windows paths: long (\\?\) forms, the target form
//     of a directory symlink to an SMB share, canonical link targets for
//     comparisons, volume GUID paths, and the parent of a path of either
//     style (Parent, IsRoot: the one place that knows where drive, share
//     and device roots end).
//
// What does not: anything that opens, creates or removes files (the host
// layer does that), build tags, runtime.GOOS checks, x/sys/windows, gRPC
// codes. Apart from DefaultFS (os.Lstat and os.Readlink), everything here
// is a pure function of its arguments, so the Windows grammar is unit-tested
// and fuzzed on Linux.
//
// Errors: Resolve, NewRoot and CheckLinks return *Error, which names the
// rejected path and wraps exactly one of the sentinels (ErrEmpty,
// ErrNotAbsolute, ErrOutsideRoot, ErrTraversal, ErrUNC, ErrDevicePath,
// ErrInvalidChars, ErrTooLong, ErrLinkEscapes). Callers compare with
// errors.Is. CheckLinks returns the file system's own error, wrapped, when
// a Lstat fails for a reason other than a missing component.
package winpath
