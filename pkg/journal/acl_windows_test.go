package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// TestOpenProtectsOnWindows runs the real calls: Open gives a new state
// directory the protected DACL and Administrators as owner, the entries it
// writes are owned by SYSTEM, Administrators or the process's token owner,
// and a reopen loads them (none refused). It needs an elevated
// administrator, as the plugin (SYSTEM) is; the Windows workflow's runner
// is one.
func TestOpenProtectsOnWindows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sec := osFileSecurity{}
	b, err := sec.descriptor(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := winacl.ParseDescriptor(b)
	if err != nil {
		t.Fatal(err)
	}
	if !isProtected(d) {
		t.Fatalf("state directory after Open: %s", d)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v", StagingPath: `C:\k\v`, Backend: "disk"}); err != nil {
		t.Fatal(err)
	}
	r, err := sec.read(filepath.Join(dir, fileName("v")))
	if err != nil || r.dataErr != nil {
		t.Fatal(err, r.dataErr)
	}
	owner := r.owner
	if !r.checked || r.links != 1 || !strings.Contains(string(r.data), `"volumeID": "v"`) {
		t.Fatalf("read = %+v", r)
	}
	token, err := sec.tokenOwner()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("token owner %s, entry owner %s", token, owner)
	if !systemOwner(owner) && owner != token {
		t.Fatalf("entry owned by %s, token owner %s", owner, token)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get(ctx, "v"); !ok || len(again.Refused()) != 0 {
		t.Fatalf("reopen: entry loaded %t, refused %+v", ok, again.Refused())
	}
	// A second name for the entry (a hard link, as one planted to a file
	// elsewhere would be) makes GetFileInformationByHandle count two, and
	// the entry is refused.
	if err := os.Link(filepath.Join(dir, fileName("v")), filepath.Join(t.TempDir(), "elsewhere")); err != nil {
		t.Fatal(err)
	}
	linked, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := linked.Get(ctx, "v"); ok || len(linked.Refused()) != 1 || linked.Refused()[0].Reason != "it has 2 names (a hard link to a file elsewhere)" {
		t.Fatalf("hard-linked entry: loaded %t, refused %+v", ok, linked.Refused())
	}
}

// releasing is the system's fileSecurity, with a holder of a journal file
// that lets go when a read first fails because of it.
type releasing struct {
	osFileSecurity
	release func()
	failed  int
}

func (r *releasing) read(path string) (fileRead, error) {
	f, err := r.osFileSecurity.read(path)
	if (errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(f.dataErr, windows.ERROR_SHARING_VIOLATION)) && r.release != nil {
		r.failed++
		r.release()
		r.release = nil
	}
	return f, err
}

// TestOpenWaitsForAFileHeldOnWindows: a journal file another process holds
// open without sharing it (share mode 0, as a scanner may open a file just
// written) fails the owner-checked read with ERROR_SHARING_VIOLATION (the
// open for its contents, at least); Open
// reads it again (durable.RetryRead) and loads it once the holder has let
// go. The holder lets go at the first failed read: the test is ordered by
// that event, not by time.
func TestOpenWaitsForAFileHeldOnWindows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v", StagingPath: `C:\k\v`, Backend: "disk"}); err != nil {
		t.Fatal(err)
	}
	p, err := windows.UTF16PtrFromString(filepath.Join(dir, fileName("v")))
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, 0, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatal(err)
	}
	sec := &releasing{release: func() {
		if err := windows.CloseHandle(h); err != nil {
			t.Error(err)
		}
	}}
	again, err := open(dir, sec)
	if err != nil {
		t.Fatalf("Open while a journal file is held: %v", err)
	}
	if _, ok := again.Get(ctx, "v"); !ok || sec.failed != 1 {
		t.Fatalf("entry loaded %t after %d refused reads; want it loaded after one", ok, sec.failed)
	}
}
