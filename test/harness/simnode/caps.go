package simnode

import "github.com/container-storage-interface/spec/lib/go/csi"

// MountCap is the volume capability the reliability suites stage and
// publish with: a mounted file system (the default fsType), single-node
// writer. Shared by every request; nothing may modify it.
var MountCap = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}
