//go:build !windows

package durable

// passingError: off Windows an open file never stands in the way of a
// rename or a removal, so no error passes.
func passingError(error) bool { return false }

// passingReadError: off Windows nothing holds a file against a read.
func passingReadError(error) bool { return false }
