package durable

// SyncDir is a no-op on Windows: a directory cannot be opened for
// FlushFileBuffers through os.File, and NTFS journals its metadata, so a
// completed MoveFileEx (os.Rename) is durable once the file's own data was
// flushed, which WriteFile does before renaming.
func SyncDir(string) error { return nil }
