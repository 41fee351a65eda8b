package journal

import (
	"path/filepath"
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
	_, owner, err := sec.read(filepath.Join(dir, fileName("v")))
	if err != nil {
		t.Fatal(err)
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
}
