package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
