// Package durable writes small files so that a crash leaves either the old
// content or the new, never a mix: the stage journal and the simulated
// host's state use it. It also removes them, and retries the reads their
// users make through handles of their own (RetryRead), so that another
// process holding a file for a moment (diagnose, an antivirus scan) fails
// neither the plugin's writes nor its reads. Nothing else belongs here.
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

// RetryRead runs read, a read of one file through a handle its caller
// opens itself (the journal's owner-checked read, which shares delete as
// os.Root's opens do), again while it fails because another process holds
// the file open without sharing it (ERROR_SHARING_VIOLATION, or
// ERROR_LOCK_VIOLATION), for as long in all as WriteFile and Remove retry:
// an antivirus scanner that opens a file just written must not fail the
// plugin's start. A missing file is an answer. ERROR_ACCESS_DENIED, which
// a rename or a removal meets while the file is held, is for a read the
// file's own DACL and is not retried (passingReadError). Elsewhere nothing
// is retried.
func RetryRead(read func() error) error { return readRetry.do(read) }

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
