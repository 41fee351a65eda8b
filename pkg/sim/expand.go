package sim

import "context"

type expansionKey struct{}

// expansion is a NodeExpandVolume's request, as WithExpansion records it.
type expansion struct {
	volumeID string
	required uint64
}

// WithExpansion annotates ctx with a volume expansion's request. With
// Config.AutoAttach, Disks.Rescan under such a ctx first grows the disk
// whose serial is the volume ID to requiredBytes (rounded up to whole MiB)
// when it is smaller, and logs it: the stand-in for a controller's
// ControllerExpandVolume, as auto-attach stands in for its
// ControllerPublishVolume (see "Auto-attach" in the package doc). The
// plugin's wiring for --host=sim installs it as the node service's hook for
// expansions; nothing in pkg/host or the Windows host knows about it.
func WithExpansion(ctx context.Context, volumeID string, requiredBytes int64) context.Context {
	if requiredBytes <= 0 {
		return ctx
	}
	return context.WithValue(ctx, expansionKey{}, expansion{volumeID: volumeID, required: uint64(requiredBytes)})
}

func expansionFrom(ctx context.Context) (expansion, bool) {
	e, ok := ctx.Value(expansionKey{}).(expansion)
	return e, ok
}

// growForExpansion grows the disk of an expansion's volume before a rescan
// shows its size (see WithExpansion).
func (s *Sim) growForExpansion(st *State, e expansion) {
	if !s.cfg.AutoAttach || e.volumeID == "" {
		return
	}
	want := alignUp(e.required, mib)
	for i := range st.Disks {
		d := &st.Disks[i]
		if d.Serial != e.volumeID || d.Target != "" || d.critical() {
			continue
		}
		if cur := max(d.Size, d.PendingSize); cur < want {
			s.log.Info("Simulating the controller's expansion: growing the volume's disk before the rescan",
				"volumeID", e.volumeID, "diskNumber", d.Number, "from", cur, "to", want)
			d.PendingSize = want
		}
		return
	}
}
