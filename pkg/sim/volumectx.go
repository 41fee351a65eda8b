package sim

import "context"

type volumeKey struct{}

// WithVolume annotates ctx with the ID of the volume its host calls are
// made for. With Config.AutoAttach, Disks.Rescan under such a ctx attaches a
// disk for that volume when none has its serial (see "Auto-attach" in the
// package doc): the stand-in for a controller's ControllerPublishVolume.
//
// The key belongs to the simulated host: the plugin's wiring for
// --host=sim installs WithVolume as the node service's per-volume context
// hook (plugin.Host.ForVolume), and nothing in pkg/host or the Windows host
// knows about it.
func WithVolume(ctx context.Context, volumeID string) context.Context {
	return context.WithValue(ctx, volumeKey{}, volumeID)
}

// volumeFrom returns the volume ID set by WithVolume, or "".
func volumeFrom(ctx context.Context) string {
	v, _ := ctx.Value(volumeKey{}).(string)
	return v
}
