//go:build !windows

package durable

import "os"

// SyncDir makes a rename or removal in dir durable (fsync of the directory).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
