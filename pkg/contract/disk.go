package contract

import (
	"strings"
	"unicode"
)

func parseDisk(p params, volumeID string, o Options) (*DiskSpec, *Error) {
	var sel DiskSelector
	var e *Error
	if v, ok := p.get(keyDiskSerial); ok {
		sel.Serial = v.val
	}
	if v, ok := p.get(keyDiskPage83); ok {
		sel.Page83 = normalizePage83(v.val)
	}
	if v, ok := p.get(keyDiskLocation); ok {
		sel.Location = v.val
	}
	for _, f := range []struct {
		key string
		dst **uint32
	}{{keyDiskLUN, &sel.LUN}, {keyDiskTarget, &sel.Target}, {keyDiskBus, &sel.Bus}, {keyDiskNumber, &sel.Number}} {
		if *f.dst, e = p.uint32Ptr(f.key); e != nil {
			return nil, e
		}
	}
	if sel.LUN == nil {
		for _, k := range []string{keyDiskTarget, keyDiskBus} {
			if v, ok := p.get(k); ok {
				return nil, errorf(v.key, "needs diskLUN: a target or bus alone does not identify a disk")
			}
		}
	}
	if sel.IsZero() {
		var ok bool
		if sel, ok = fallbackSelector(volumeID, o); !ok {
			return nil, errorf(keyDiskSerial, "no disk selector: one of diskSerial, diskPage83, diskLUN, diskLocation or diskNumber is required (or a disk preset that derives one)")
		}
	}
	return &DiskSpec{Selector: sel}, nil
}

// normalizePage83 turns a binary identifier written in hex (16 or more hex
// digits, an even count, dashes allowed: NAA, EUI-64, a vSphere disk UUID)
// into the form host.Disks.Page83 reports binary identifiers in: lower
// case, no dashes. Anything else (an ASCII identifier such as GCE's
// "Google  <device-name>") is kept as given.
func normalizePage83(s string) string {
	h := strings.ReplaceAll(s, "-", "")
	if len(h) >= 16 && len(h)%2 == 0 && isHex(h) {
		return strings.ToLower(h)
	}
	return s
}

// fallbackSelector derives a selector from the volume ID when the volume
// names none: the gce-pd and aws-ebs presets (each only for volume IDs of
// its own shape), then Options.VolumeIDDisk.
func fallbackSelector(volumeID string, o Options) (DiskSelector, bool) {
	if o.hasPreset(presetGCEPD) {
		if name, ok := gceDeviceName(volumeID); ok {
			return DiskSelector{Page83: name, Page83Match: MatchLastField}, true
		}
	}
	if o.hasPreset(presetAWSEBS) && isEBSVolumeID(volumeID) {
		// aws-ebs-csi-driver (FindDevicePath on Windows) picks the disk
		// whose SerialNumber contains the volume ID without dashes
		// (kubernetes-sigs/aws-ebs-csi-driver@429e202
		// pkg/mounter/mount_windows_proxyV2.go): "vol-0abc" -> "vol0abc".
		return DiskSelector{Serial: strings.ReplaceAll(volumeID, "-", ""), SerialMatch: MatchContains}, true
	}
	if o.VolumeIDDisk == VolumeIDDiskSerial {
		return DiskSelector{Serial: volumeID}, true
	}
	return DiskSelector{}, false
}

// isEBSVolumeID reports whether id looks like an EBS volume ID, vol-<hex>.
// The preset is limited to such IDs because MatchContains on an arbitrary
// short string could select the wrong disk.
func isEBSVolumeID(id string) bool {
	hex, ok := strings.CutPrefix(id, "vol-")
	return ok && len(hex) >= 8 && isHex(hex) && strings.ToLower(hex) == hex
}

// gceDeviceName returns the device name a GCE PD volume is attached under,
// from a volume ID projects/<p>/zones/<z>/disks/<name> or
// projects/<p>/regions/<r>/disks/<name>. On SCSI (non-NVMe) machine types
// the disk's page 83 identifier is "Google  <device-name>", and the
// gcp-compute-persistent-disk-csi-driver matches its last field
// (kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
// pkg/mount-manager/safe-mounter-v1_windows.go).
//
// The device name is the disk name for zonal disks. For regional disks
// that driver attaches under <name>_regional (pkg/common/utils.go
// GetDeviceName, regionalDeviceNameSuffix, read at b560165); this is
// uncertain for volumes attached by other controller versions and is not
// verified on a Windows node.
func gceDeviceName(id string) (string, bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 6 || parts[0] != "projects" || parts[4] != "disks" {
		return "", false
	}
	for _, s := range parts {
		// A device name with white space could never equal the last
		// field of the page 83 identifier.
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
			return "", false
		}
	}
	switch parts[2] {
	case "zones":
		return parts[5], true
	case "regions":
		return parts[5] + "_regional", true
	}
	return "", false
}
