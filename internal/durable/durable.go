// Package durable writes small files so that a crash leaves either the old
// content or the new, never a mix: the stage journal and the simulated
// host's state use it. It also reads and removes them so that a reader
// (diagnose, an antivirus scan) never makes the plugin's writes fail.
// Nothing else belongs here.
package durable

import (
	"os"
	"path/filepath"
)

// WriteFile replaces dir/name with data: it writes a temporary file in dir,
// fsyncs it, renames it over the name and makes the rename durable
// (SyncDir). A crash at any point leaves the previous file or the new one;
// a leftover temporary file (name + ".*.tmp") is the caller's to remove.
//
// The rename goes through os.Root (see Remove) and is retried while another
// process holds the old file open (retry).
func WriteFile(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = Remove(dir, filepath.Base(tmp)) // best effort; the write error is the one to report
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
	if err = inRoot(dir, func(r *os.Root) error { return r.Rename(filepath.Base(tmp), name) }); err != nil {
		return err
	}
	return SyncDir(dir)
}

// ReadFile reads dir/name. On Windows it opens the file sharing read, write
// and delete (os.Root's opens do: golang/go
// src/internal/syscall/windows/at_windows.go, Openat, at go1.26.8), so that
// the plugin may replace or remove the file while a tool reads it; os.Open
// shares only read and write (src/syscall/syscall_windows.go, Open), which
// makes the writer's rename fail. A file that is not there fails at once
// with an error wrapping os.ErrNotExist; a sharing refusal is retried.
func ReadFile(dir, name string) ([]byte, error) {
	var b []byte
	err := inRoot(dir, func(r *os.Root) error {
		var err error
		b, err = r.ReadFile(name)
		return err
	})
	return b, err
}

// Remove removes dir/name; the error of a missing file wraps
// os.ErrNotExist. On Windows os.Root removes with POSIX semantics where the
// system has them (Windows 10 1607 and later: the name is gone at once
// even while another handle is open, instead of lingering "delete pending"
// and refusing a new file of the same name; golang/go
// src/internal/syscall/windows/at_windows.go, Deleteat, at go1.26.8), and
// a refusal while another process holds the file is retried.
func Remove(dir, name string) error {
	return inRoot(dir, func(r *os.Root) error { return r.Remove(name) })
}

// inRoot runs op on dir opened as an os.Root, retrying op while it fails
// for a reason that passes (retry).
func inRoot(dir string, op func(r *os.Root) error) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	err = systemRetry.do(func() error { return op(r) })
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}
