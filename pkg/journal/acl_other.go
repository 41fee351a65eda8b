//go:build !windows

package journal

import "os"

// Off Windows the state directory's mode (0o700) protects it and files have
// no owner SID to check.

func (osFileSecurity) descriptor(string) ([]byte, error)    { return nil, nil }
func (osFileSecurity) protect(string, []byte, []byte) error { return nil }
func (osFileSecurity) tokenOwner() (string, error)          { return "", nil }

func (osFileSecurity) read(path string) ([]byte, string, error) {
	b, err := os.ReadFile(path)
	return b, "", err
}
