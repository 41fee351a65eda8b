//go:build windows && integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wincsi/csi-windows-node/internal/durable"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// TestJournalUnderConcurrentReaders replaces and removes journal files while
// other goroutines read them the way tools and scanners do: with os.ReadFile,
// which opens without FILE_SHARE_DELETE, so that a rename over the file or
// a removal can be refused while it is open (issue 23; golang/go#31247). No
// write may fail: durable retries the refusals for a bounded time.
//
// Each reader reads its file once per round, beside the round's writes, as
// a tool or a scanner would now and then; readers in a tight loop would
// hold the files most of the time and measure how long a write can be
// starved, not whether a write survives a reader.
func TestJournalUnderConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const volumes, rounds = 4, 100
	for v := range volumes {
		if err := j.Put(ctx, journal.Entry{VolumeID: fmt.Sprint("vol-", v), Backend: "disk"}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != volumes {
		t.Fatalf("journal files %q, %v", files, err)
	}

	var readers sync.WaitGroup
	reads := make([]chan struct{}, len(files))
	for i, f := range files {
		reads[i] = make(chan struct{}, 1)
		readers.Add(1)
		go func() {
			defer readers.Done()
			for range reads[i] {
				_, _ = os.ReadFile(f) // not found between a removal and the next write is fine
			}
		}()
	}
	for r := range rounds {
		for _, read := range reads {
			select {
			case read <- struct{}{}:
			default: // still reading the last round's: skips this one
			}
		}
		for v := range volumes {
			id := fmt.Sprint("vol-", v)
			if err := j.Put(ctx, journal.Entry{VolumeID: id, Backend: "disk", Staged: r%2 == 0}); err != nil {
				t.Errorf("round %d: Put under a concurrent reader: %v", r, err)
			}
			if r%10 == 9 {
				if err := j.Delete(ctx, id); err != nil {
					t.Errorf("round %d: Delete under a concurrent reader: %v", r, err)
				}
			}
		}
	}
	for _, read := range reads {
		close(read)
	}
	readers.Wait()
	if ro, err := journal.OpenReadOnly(dir); err != nil || len(ro.List(ctx)) != volumes {
		t.Fatalf("journal after the rounds: %v", err)
	}
}

// TestDurableReaderSharesDelete holds a file open through a handle that
// shares delete, as the journal's owner-checked reads open theirs (os.Root's
// open shares it too), and replaces and removes it
// meanwhile: with POSIX rename and delete semantics nothing waits for the
// reader, and the open handle still reads the old content.
func TestDurableReaderSharesDelete(t *testing.T) {
	dir := t.TempDir()
	if err := durable.WriteFile(dir, "e.json", []byte("old")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, err := root.Open("e.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := durable.WriteFile(dir, "e.json", []byte("new")); err != nil {
		t.Fatalf("WriteFile while a sharing reader holds the file: %v", err)
	}
	if b, err := root.ReadFile("e.json"); err != nil || string(b) != "new" {
		t.Fatalf("ReadFile = %q, %v; want the new content", b, err)
	}
	old := make([]byte, 8)
	if n, err := f.Read(old); err != nil || string(old[:n]) != "old" {
		t.Errorf("the open handle reads %q, %v; want the old content", old[:n], err)
	}
	if err := durable.Remove(dir, "e.json"); err != nil {
		t.Fatalf("Remove while a sharing reader holds the replaced file: %v", err)
	}
	if err := durable.WriteFile(dir, "e.json", []byte("again")); err != nil {
		t.Fatalf("WriteFile right after the removal: %v", err)
	}
	if err := durable.Remove(dir, "e.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.ReadFile("e.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a removed file = %v, want fs.ErrNotExist", err)
	}
	if err := durable.SyncDir(dir); err != nil {
		t.Fatalf("SyncDir on NTFS: %v", err)
	}
}

// TestRenameOverHeldFile reports what a POSIX-semantics rename (os.Root)
// over a file held open without FILE_SHARE_DELETE does: refused, so that
// durable's retry waits for the reader, or done at once. Both are handled;
// run with -v to see which this Windows does (docs/windows.md).
func TestRenameOverHeldFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"held", "new"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "held")) // shares read and write only
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = root.Rename("new", "held")
	f.Close()
	if err != nil {
		t.Logf("a rename over a file held open without FILE_SHARE_DELETE is refused: %v", err)
		return
	}
	t.Logf("a rename over a file held open without FILE_SHARE_DELETE succeeds at once")
}
