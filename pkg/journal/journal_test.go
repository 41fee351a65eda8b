package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var ctx = context.Background()

// volumeIDs lists the volume IDs of entries.
func volumeIDs(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.VolumeID
	}
	return out
}

func TestPutGetDeleteSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{VolumeID: "vol/with:odd*chars", StagingPath: "/k/s", Backend: "smb",
		ResourceKey: `smb:\\srv\share`, Attrs: map[string]string{"user": "alice"}}
	if err := j.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v2", Backend: "smb", ResourceKey: `smb:\\srv\share`, Staged: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v3", Backend: "disk"}); err != nil {
		t.Fatal(err)
	}

	j2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := j2.Get(ctx, e.VolumeID)
	if !ok || got.StagingPath != "/k/s" || got.Attrs["user"] != "alice" {
		t.Fatalf("after reopen: %+v %v", got, ok)
	}
	if got, _ := j2.ByResource(ctx, `smb:\\srv\share`); strings.Join(volumeIDs(got), " ") != "v2 vol/with:odd*chars" {
		t.Fatalf("ByResource = %v, want both SMB volumes (the intent included), by ID", volumeIDs(got))
	}
	if got, _ := j2.ByResource(ctx, ""); len(got) != 0 {
		t.Fatalf("ByResource(\"\") = %v, want nothing", volumeIDs(got))
	}
	if err := j2.Delete(ctx, e.VolumeID); err != nil {
		t.Fatal(err)
	}
	if err := j2.Delete(ctx, "never-there"); err != nil {
		t.Fatalf("deleting a missing entry: %v", err)
	}
	j3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := j3.Get(ctx, e.VolumeID); ok {
		t.Fatal("deleted entry came back")
	}
	if got := len(j3.List(ctx)); got != 2 {
		t.Fatalf("List = %d, want 2", got)
	}
}

func TestGetReturnsCopy(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v", Attrs: map[string]string{"a": "1"}}); err != nil {
		t.Fatal(err)
	}
	e, _ := j.Get(ctx, "v")
	e.Attrs["a"] = "changed"
	again, _ := j.Get(ctx, "v")
	if again.Attrs["a"] != "1" {
		t.Fatal("caller mutated the journal's copy")
	}
}

func TestOpenRemovesLeftoversAndRejectsCorruption(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json.123.tmp"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("leftover temp file should be cleaned, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.json.123.tmp")); !os.IsNotExist(err) {
		t.Fatalf("leftover not removed: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dir, fileName("v")), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("corrupt entry accepted")
	}
	// An entry stored under another volume's file name is rejected too.
	if err := os.WriteFile(filepath.Join(dir, fileName("v")), []byte(`{"volumeID":"other"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("mismatched entry: err = %v", err)
	}
}

func TestConcurrentPutsAndDeletes(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("vol-%d", i)
			for k := 0; k < 5; k++ {
				if err := j.Put(ctx, Entry{VolumeID: id, Attrs: map[string]string{"k": fmt.Sprint(k)}}); err != nil {
					t.Error(err)
				}
				if err := j.PutNote(ctx, "n/"+id, fmt.Sprint(k)); err != nil {
					t.Error(err)
				}
			}
			if i%2 == 0 {
				if err := j.Delete(ctx, id); err != nil {
					t.Error(err)
				}
				if err := j.DeleteNote(ctx, "n/"+id); err != nil {
					t.Error(err)
				}
			}
		}(i)
	}
	wg.Wait()
	re, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(re.List(ctx)); got != 16 || len(j.List(ctx)) != 16 {
		t.Fatalf("entries on disk %d, in memory %d; want 16", got, len(j.List(ctx)))
	}
	for _, e := range re.List(ctx) {
		if e.Attrs["k"] != "4" {
			t.Fatalf("entry %s holds %v, want the last write", e.VolumeID, e.Attrs)
		}
		if v, ok, _ := re.Note(ctx, "n/"+e.VolumeID); !ok || v != "4" {
			t.Fatalf("note of %s = %q %v", e.VolumeID, v, ok)
		}
	}
}

// TestIndexesFollowWrites checks ByResource and ByBackend against a plain
// filter of List after every write: a replaced entry leaves its old
// resource, a deleted one leaves both indexes.
func TestIndexesFollowWrites(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"intent on share a", func() error { return j.Put(ctx, Entry{VolumeID: "v1", Backend: "smb", ResourceKey: "smb:a"}) }},
		{"second volume on a", func() error {
			return j.Put(ctx, Entry{VolumeID: "v2", Backend: "smb", ResourceKey: "smb:a", Staged: true})
		}},
		{"disk", func() error { return j.Put(ctx, Entry{VolumeID: "v3", Backend: "disk"}) }},
		{"v1 moves to share b", func() error { return j.Put(ctx, Entry{VolumeID: "v1", Backend: "smb", ResourceKey: "smb:b"}) }},
		{"v3 becomes iscsi", func() error { return j.Put(ctx, Entry{VolumeID: "v3", Backend: "iscsi", ResourceKey: "iscsi:t"}) }},
		{"delete v2", func() error { return j.Delete(ctx, "v2") }},
		{"delete v1", func() error { return j.Delete(ctx, "v1") }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for _, key := range []string{"smb:a", "smb:b", "iscsi:t"} {
			var want []string
			for _, e := range j.List(ctx) {
				if e.ResourceKey == key {
					want = append(want, e.VolumeID)
				}
			}
			got, err := j.ByResource(ctx, key)
			if err != nil || fmt.Sprint(volumeIDs(got)) != fmt.Sprint(want) && len(want)+len(got) > 0 {
				t.Errorf("%s: ByResource(%s) = %v, %v; want %v", st.name, key, volumeIDs(got), err, want)
			}
		}
		for _, b := range []string{"smb", "disk", "iscsi"} {
			var want []string
			for _, e := range j.List(ctx) {
				if e.Backend == b {
					want = append(want, e.VolumeID)
				}
			}
			got, err := j.ByBackend(ctx, b)
			if err != nil || fmt.Sprint(volumeIDs(got)) != fmt.Sprint(want) && len(want)+len(got) > 0 {
				t.Errorf("%s: ByBackend(%s) = %v, %v; want %v", st.name, b, volumeIDs(got), err, want)
			}
		}
	}
	if len(j.byResource) != 1 || len(j.byBackend) != 1 {
		t.Errorf("indexes keep empty keys: %v %v", j.byResource, j.byBackend)
	}
}

// TestWritesAndEndedContexts: an ended ctx does not stop a write (what it
// records happened on the host), while a live ctx bounds the wait for
// another writer of the same entry.
func TestWritesAndEndedContexts(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := j.Put(ended, Entry{VolumeID: "v", Backend: "disk"}); err != nil {
		t.Fatalf("Put with an ended ctx: %v", err)
	}
	if err := j.PutNote(ended, "k", "v"); err != nil {
		t.Fatalf("PutNote with an ended ctx: %v", err)
	}
	// Another writer holds the entry's file: a live ctx gives up when it ends.
	unlock, err := j.files.Lock(ctx, fileName("v"))
	if err != nil {
		t.Fatal(err)
	}
	live, stop := context.WithCancel(ctx)
	wait := &doneWatcher{Context: live, asked: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- j.Delete(wait, "v") }()
	<-wait.asked // the delete waits for the file's lock
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Delete while another writer holds the file: %v, want context.Canceled", err)
	}
	unlock()
	if _, ok := j.Get(ctx, "v"); !ok {
		t.Fatal("the entry went although the delete gave up")
	}
	if err := j.Delete(ended, "v"); err != nil {
		t.Fatalf("Delete with an ended ctx: %v", err)
	}
	if _, ok := j.Get(ctx, "v"); ok {
		t.Fatal("the entry is still there")
	}
}

// doneWatcher closes asked when Done is first called: then the caller is
// about to wait on it.
type doneWatcher struct {
	context.Context
	asked chan struct{}
	once  sync.Once
}

func (c *doneWatcher) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenReadOnly(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory: %v, want os.ErrNotExist", err)
	}
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v", Backend: "smb", ResourceKey: "smb:a"}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutNote(ctx, "smb/mapping/a", "alice"); err != nil {
		t.Fatal(err)
	}
	// A write of the running plugin in progress.
	tmp := filepath.Join(dir, fileName("w")+".123.tmp")
	if err := os.WriteFile(tmp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("read-only open touched a temporary file: %v", err)
	}
	if got, _ := ro.ByResource(ctx, "smb:a"); len(got) != 1 {
		t.Fatalf("ByResource = %v", volumeIDs(got))
	}
	if v, ok, _ := ro.Note(ctx, "smb/mapping/a"); !ok || v != "alice" {
		t.Fatalf("Note = %q, %v", v, ok)
	}
	for name, err := range map[string]error{
		"Put":        ro.Put(ctx, Entry{VolumeID: "x"}),
		"Delete":     ro.Delete(ctx, "v"),
		"PutNote":    ro.PutNote(ctx, "k", "v"),
		"DeleteNote": ro.DeleteNote(ctx, "smb/mapping/a"),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only journal: %v, want ErrReadOnly", name, err)
		}
	}
	if _, ok := j.Get(ctx, "v"); !ok {
		t.Fatal("the read-only journal removed an entry")
	}
}

// TestSeal: Seal waits for a write in progress and holds back the writes
// that come after it, so that a process exiting at once never cuts one.
func TestSeal(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A write in progress: the file lock of "v1" and the write lock held,
	// as Put holds them while it writes.
	unlock, err := j.lockFile(ctx, fileName("v1"))
	if err != nil {
		t.Fatal(err)
	}
	sealed := make(chan error, 1)
	go func() { sealed <- j.Seal(ctx) }()
	// Seal cannot finish while the write runs; a bounded Seal says so.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := j.Seal(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("Seal with an ended context while a write runs: %v", err)
	}
	select {
	case err := <-sealed:
		t.Fatalf("Seal returned %v while a write was in progress", err)
	default:
	}
	unlock()
	if err := <-sealed; err != nil {
		t.Fatal(err)
	}
	// A write after Seal does not start.
	put := make(chan error, 1)
	go func() { put <- j.Put(ctx, Entry{VolumeID: "v2"}) }()
	select {
	case err := <-put:
		t.Fatalf("Put after Seal returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := j.Get(ctx, "v2"); ok {
		t.Fatal("a write after Seal took effect")
	}
}

// TestCredentialKey: the key is made once and kept across reopenings, in
// no entry or note; a read-only journal does not make one; a damaged key
// is refused with what to do.
func TestCredentialKey(t *testing.T) {
	dir := t.TempDir()
	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := ro.CredentialKey(); k != nil || err != nil {
		t.Fatalf("read-only journal without a key: %x, %v; want none", k, err)
	}
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := j.CredentialKey()
	if err != nil || len(k1) != keyLen {
		t.Fatalf("key %x, %v", k1, err)
	}
	fi, err := os.Stat(filepath.Join(dir, keyFile))
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("key file %v, %v: want readable by the owner only", fi, err)
	}
	j2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k2, err := j2.CredentialKey(); err != nil || string(k2) != string(k1) {
		t.Fatalf("key after reopening %x, %v; want %x", k2, err, k1)
	}
	if len(j2.List(ctx)) != 0 {
		t.Fatal("the key file was read as an entry")
	}
	if err := os.WriteFile(filepath.Join(dir, keyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j3.CredentialKey(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged key: %v", err)
	}
}
