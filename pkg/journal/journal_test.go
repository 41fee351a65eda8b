package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPutGetDeleteSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{VolumeID: "vol/with:odd*chars", StagingPath: "/k/s", Backend: "smb",
		ResourceKey: `smb:\\srv\share`, Attrs: map[string]string{"user": "alice"}}
	if err := j.Put(e); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(Entry{VolumeID: "v2", Backend: "smb", ResourceKey: `smb:\\srv\share`, Staged: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(Entry{VolumeID: "v3", Backend: "disk"}); err != nil {
		t.Fatal(err)
	}

	j2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := j2.Get(e.VolumeID)
	if !ok || got.StagingPath != "/k/s" || got.Attrs["user"] != "alice" {
		t.Fatalf("after reopen: %+v %v", got, ok)
	}
	if n := len(j2.WithResource(`smb:\\srv\share`)); n != 2 {
		t.Fatalf("WithResource = %d entries, want 2", n)
	}
	if n := len(j2.WithResource("")); n != 0 {
		t.Fatalf("WithResource(\"\") = %d entries, want 0", n)
	}
	if err := j2.Delete(e.VolumeID); err != nil {
		t.Fatal(err)
	}
	if err := j2.Delete("never-there"); err != nil {
		t.Fatalf("deleting a missing entry: %v", err)
	}
	j3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := j3.Get(e.VolumeID); ok {
		t.Fatal("deleted entry came back")
	}
	if got := len(j3.List()); got != 2 {
		t.Fatalf("List = %d, want 2", got)
	}
}

func TestGetReturnsCopy(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Put(Entry{VolumeID: "v", Attrs: map[string]string{"a": "1"}}); err != nil {
		t.Fatal(err)
	}
	e, _ := j.Get("v")
	e.Attrs["a"] = "changed"
	again, _ := j.Get("v")
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
				if err := j.Put(Entry{VolumeID: id, Attrs: map[string]string{"k": fmt.Sprint(k)}}); err != nil {
					t.Error(err)
				}
				if err := j.PutNote("n/"+id, fmt.Sprint(k)); err != nil {
					t.Error(err)
				}
			}
			if i%2 == 0 {
				if err := j.Delete(id); err != nil {
					t.Error(err)
				}
				if err := j.DeleteNote("n/" + id); err != nil {
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
	if got := len(re.List()); got != 16 || len(j.List()) != 16 {
		t.Fatalf("entries on disk %d, in memory %d; want 16", got, len(j.List()))
	}
	for _, e := range re.List() {
		if e.Attrs["k"] != "4" {
			t.Fatalf("entry %s holds %v, want the last write", e.VolumeID, e.Attrs)
		}
		if v, ok := re.GetNote("n/" + e.VolumeID); !ok || v != "4" {
			t.Fatalf("note of %s = %q %v", e.VolumeID, v, ok)
		}
	}
}
