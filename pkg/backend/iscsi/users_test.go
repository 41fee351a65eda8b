package iscsi

import (
	"context"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/backendtest"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// TestRefusedEntryIsAUser: a journal file the plugin refused that names
// the target counts as a user of its sessions (it may be a volume of the
// plugin's own), so the last unstage keeps them; without it nothing does.
func TestRefusedEntryIsAUser(t *testing.T) {
	const iqn = "iqn.2026-01.io.example:t"
	ctx := context.Background()
	jr, err := journal.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		store backend.Store
		want  string
	}{
		{name: "one refused entry names the target", store: backendtest.WithRefused{Store: jr, Key: resourceKey(iqn), VolumeID: "vol-refused"}, want: "vol-refused"},
		{name: "none does", store: jr, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(hosttest.Unimplemented(), nil, tc.store, Options{})
			var user string
			_, err := b.targets.Release(ctx, resourceKey(iqn), "vol-1", false, func(ctx context.Context, tr *shared.Transition[loggedIn]) (shared.State, error) {
				var err error
				user, err = b.otherUser(ctx, tr, iqn)
				return tr.Prev(), err
			})
			if err != nil || user != tc.want {
				t.Fatalf("other user %q, %v; want %q", user, err, tc.want)
			}
		})
	}
}
