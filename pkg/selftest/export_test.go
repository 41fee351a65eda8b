package selftest

import "testing"

// SetProtectWorkDir replaces how Run protects its work directory for the
// test.
func SetProtectWorkDir(t *testing.T, f func(dir string) error) {
	t.Helper()
	old := protectWorkDir
	protectWorkDir = f
	t.Cleanup(func() { protectWorkDir = old })
}
