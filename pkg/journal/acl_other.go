//go:build !windows

package journal

import (
	"errors"
	"os"
)

// Off Windows the state directory's mode (0o700) protects it and files have
// no owner SID to check (fileRead.checked is false).

func (osFileSecurity) descriptor(string) ([]byte, error)    { return nil, nil }
func (osFileSecurity) protect(string, []byte, []byte) error { return nil }
func (osFileSecurity) tokenOwner() (string, error)          { return "", nil }

func (osFileSecurity) read(path string) (fileRead, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileRead{}, err
	}
	return fileRead{data: b, dataErr: err}, nil
}
