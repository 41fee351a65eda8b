package journal

// syncDir is a no-op on Windows: directories cannot be opened for
// FlushFileBuffers through os.File, and NTFS journals its metadata, so a
// completed MoveFileEx (os.Rename) is durable once the file's own data was
// flushed, which writeFileAtomic does before renaming.
func syncDir(string) error { return nil }
