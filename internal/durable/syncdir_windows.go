package durable

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// SyncDir makes a rename or removal in dir durable: FlushFileBuffers on a
// handle of the directory. With no flags, the flush writes "file data and
// metadata in the file cache" and has the storage flush its own cache
// (NtFlushBuffersFileEx, learn.microsoft.com/windows-hardware/drivers/ddi/ntifs/nf-ntifs-ntflushbuffersfileex,
// which FlushFileBuffers calls); a directory's metadata is its entries. The
// handle needs write access ("STATUS_ACCESS_DENIED: the file has neither
// write nor append access", ibid.), which is why os.Open(dir).Sync() fails,
// and FILE_FLAG_BACKUP_SEMANTICS, without which CreateFile does not open a
// directory (CreateFileW on learn.microsoft.com, "Directories"). etcd
// (client/pkg/fileutil dir_windows.go) and Prometheus (tsdb/fileutil
// dir_windows.go) open directories the same way to sync them.
//
// Chosen over MoveFileEx's MOVEFILE_WRITE_THROUGH: that flag's documented
// guarantee covers a move done as a copy and a delete (another volume), not
// a rename within one, and it does nothing for a removal.
//
// A file system that cannot flush a directory answers ERROR_INVALID_FUNCTION
// (an SMB share: dgraph-io/badger#699) or ERROR_NOT_SUPPORTED; that is not
// an error here, as on Linux file systems whose fsync of a directory does
// nothing. Any other failure, access denied included, is returned.
func SyncDir(dir string) error {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return &os.PathError{Op: "sync", Path: dir, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	err = windows.FlushFileBuffers(h)
	cerr := windows.CloseHandle(h)
	if err != nil && !flushUnsupported(err) {
		return &os.PathError{Op: "sync", Path: dir, Err: err}
	}
	if cerr != nil {
		return &os.PathError{Op: "close", Path: dir, Err: cerr}
	}
	return nil
}

// flushUnsupported reports whether a directory flush failed only because the
// file system cannot flush directories.
func flushUnsupported(err error) bool {
	return errors.Is(err, windows.ERROR_INVALID_FUNCTION) || errors.Is(err, windows.ERROR_NOT_SUPPORTED)
}
