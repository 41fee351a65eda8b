// Package durable writes small files so that a crash leaves either the old
// content or the new, never a mix: the stage journal and the simulated
// host's state use it. Nothing else belongs here.
package durable

import (
	"os"
	"path/filepath"
)

// WriteFile replaces dir/name with data: it writes a temporary file in dir,
// fsyncs it, renames it over the name and makes the rename durable
// (SyncDir). A crash at any point leaves the previous file or the new one;
// a leftover temporary file (name + ".*.tmp") is the caller's to remove.
func WriteFile(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp) // best effort; the write error is the one to report
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close() // the sync error is the one to report
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return SyncDir(dir)
}
