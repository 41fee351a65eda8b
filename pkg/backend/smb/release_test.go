package smb

import (
	"context"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/backendtest"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// unmaps counts Unmap calls; the rest of the SMB host is unimplemented.
type unmaps struct {
	host.SMB
	n int
}

func (u *unmaps) Unmap(context.Context, string) error { u.n++; return nil }

// TestRefusedEntryKeepsTheMapping: the last unstage of a share keeps the
// global mapping while one journal file the plugin refused names the share
// (it may be a volume of the plugin's own that still uses it), and removes
// it once no entry does.
func TestRefusedEntryKeepsTheMapping(t *testing.T) {
	const root = `\\srv\data`
	ctx := context.Background()
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := hosttest.Unimplemented()
	u := &unmaps{SMB: h.SMB}
	h.SMB = u
	for _, tc := range []struct {
		name      string
		store     backend.Store
		wantUnmap int
	}{
		{name: "one refused entry names the share", store: backendtest.WithRefused{Store: jr, Key: resourceKey(root), VolumeID: "vol-refused"}, wantUnmap: 0},
		{name: "none does", store: jr, wantUnmap: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u.n = 0
			if err := New(h, tc.store, Options{}).releaseShare(ctx, "vol-1", root, false); err != nil {
				t.Fatalf("release: %v", err)
			}
			if u.n != tc.wantUnmap {
				t.Fatalf("%d Unmap calls, want %d", u.n, tc.wantUnmap)
			}
		})
	}
}
