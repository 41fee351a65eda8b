package sim

import "errors"

// ErrDirInUse means another process has the directory open.
var ErrDirInUse = errors.New("sim directory is in use by another process")

// lockDir is a no-op on Windows, where the simulated host is not supported
// (see doc.go); it exists so that the package builds for every GOOS.
func lockDir(string) (func(), error) { return func() {}, nil }
