package backendtest

import (
	"context"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// WithRefused is a store whose ByResource adds, to the entries of Key, the
// entry of VolumeID as one of a journal file the journal refused: what
// the journal returns on Windows for a file the plugin did not write (as
// after the DaemonSet's account changed), which off Windows it never
// refuses.
type WithRefused struct {
	backend.Store
	Key, VolumeID string
}

// ByResource implements backend.Store.
func (w WithRefused) ByResource(ctx context.Context, key string) ([]journal.Entry, error) {
	es, err := w.Store.ByResource(ctx, key)
	if key == w.Key {
		es = append(es, journal.Entry{VolumeID: w.VolumeID, StagingPath: "/k/" + w.VolumeID, ResourceKey: key, Refused: true})
	}
	return es, err
}
