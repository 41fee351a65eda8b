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
		if sel.Page83 = normalizePage83(v.val); v.preset == presetVSphere {
			// vsphere-csi-driver's diskUUID: a UUID, which the disk
			// backend finds under the vsphere rules.
			if len(sel.Page83) != 32 || !isHex(sel.Page83) {
				return nil, errorf(v.key, "%q is not a disk UUID (32 hex digits, dashes allowed)", v.val)
			}
			sel.VSphereUUID, sel.Page83 = sel.Page83, ""
		}
	}
	if v, ok := p.get(keyDiskLocation); ok {
		sel.Location = v.val
	}
	if v, ok := p.get(keyDiskAdapterSerial); ok {
		sel.AdapterSerial = v.val
	}
	for _, f := range []struct {
		key    string
		digits int
		dst    *string
	}{{keyDiskEUI, 16, &sel.EUI}, {keyDiskNGUID, 32, &sel.NGUID}} {
		if v, ok := p.get(f.key); ok {
			if *f.dst, e = nvmeID(v, f.digits); e != nil {
				return nil, e
			}
		}
	}
	for _, f := range []struct {
		key string
		dst **uint32
	}{{keyDiskLUN, &sel.LUN}, {keyDiskTarget, &sel.Target}, {keyDiskBus, &sel.Bus}, {keyDiskNumber, &sel.Number}, {keyDiskNVMeNSID, &sel.NVMeNSID}} {
		if *f.dst, e = p.uint32Ptr(f.key); e != nil {
			return nil, e
		}
	}
	if v, ok := p.get(keyDiskNVMeNSID); ok && (*sel.NVMeNSID == 0 || *sel.NVMeNSID > maxNSID) {
		// Windows reports a namespace as a storport LUN of one byte,
		// NSID − 1: namespaces above 256 cannot be told apart.
		return nil, errorf(v.key, "%q is not a namespace ID the plugin can find (1 to %d)", v.val, maxNSID)
	}
	if v, ok := p.get(keyDiskLUN); ok && v.preset == presetAzureDisk {
		// azuredisk-csi-driver's LUN, found under the azure-disk rules; on
		// NVMe sizes it is the storport LUN − 1, one byte.
		if *sel.LUN > maxAzureLUN {
			return nil, errorf(v.key, "%q is out of range for an Azure data disk LUN (at most %d)", v.val, maxAzureLUN)
		}
		sel.AzureLUN, sel.LUN = sel.LUN, nil
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
		if sel, ok, e = fallbackSelector(p, volumeID, o); e != nil {
			return nil, e
		}
		if !ok {
			return nil, errorf(keyDiskSerial, "no disk selector: one of diskSerial, diskPage83, diskLUN, diskLocation, diskNVMeNSID, diskEUI, diskNGUID, diskAdapterSerial or diskNumber is required (or a disk preset that derives one%s)", presetHint(volumeID, o))
		}
	}
	return &DiskSpec{Selector: sel}, nil
}

const (
	// maxNSID is the largest namespace ID a storport LUN (a UCHAR, NSID
	// − 1) can carry.
	maxNSID = 256
	// maxAzureLUN is the largest Azure LUN whose NVMe storport LUN (LUN +
	// 1) fits a UCHAR.
	maxAzureLUN = 254
)

// nvmeID normalises an EUI-64 or NGUID: an optional "eui." prefix (the
// form Linux and nvme-cli print), then hex digits with any of "_", ".",
// "-", ":" and spaces between them (Windows writes an NVMe serial as
// "E6D8_6642_…_AF1B."), lower-cased; exactly digits hex digits.
func nvmeID(e entry, digits int) (string, *Error) {
	v := strings.ToLower(e.val)
	v = strings.TrimPrefix(v, "eui.")
	v = strings.Map(func(r rune) rune {
		switch r {
		case '_', '.', '-', ':', ' ':
			return -1
		}
		return r
	}, v)
	if len(v) != digits || !isHex(v) {
		return "", errorf(e.key, "%q is not %d hex digits (separators _ . - : and an eui. prefix allowed)", e.val, digits)
	}
	return v, nil
}

// normalizePage83 turns a binary identifier written in hex (16 or more hex
// digits, an even count, dashes allowed: NAA, EUI-64, a vSphere disk UUID)
// into the form host.Page83 reports binary identifiers in: lower
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
func fallbackSelector(p params, volumeID string, o Options) (DiskSelector, bool, *Error) {
	if o.hasPreset(presetGCEPD) {
		if name, ok := gceDeviceName(volumeID); ok {
			return DiskSelector{GCEDeviceName: name}, true, nil
		}
	}
	if o.hasPreset(presetAWSEBS) {
		if strings.HasPrefix(volumeID, ebsLocalPrefix) {
			// A local EBS volume's handle names a device; the controller
			// publishes the real volume ID as "volumeID"
			// (kubernetes-sigs/aws-ebs-csi-driver@429e202
			// pkg/driver/controller.go, node.go).
			v, ok := p.get(keyEBSVolumeID)
			switch {
			case !ok:
				return DiskSelector{}, false, errorf(keyEBSVolumeID, "is required for the local EBS volume %q: the aws-ebs controller publishes the EBS volume ID under it", volumeID)
			case !isEBSVolumeID(v.val):
				return DiskSelector{}, false, errorf(v.key, "%q is not an EBS volume ID (vol- and 8 or more lower-case hex digits)", v.val)
			}
			return DiskSelector{EBSVolumeID: v.val}, true, nil
		}
		if isEBSVolumeID(volumeID) {
			return DiskSelector{EBSVolumeID: volumeID}, true, nil
		}
	}
	if o.VolumeIDDisk == VolumeIDDiskSerial {
		return DiskSelector{Serial: volumeID}, true, nil
	}
	return DiskSelector{}, false, nil
}

// ebsLocalPrefix starts the handle of a local EBS volume
// (NodeLocalVolumeHandlePrefix, kubernetes-sigs/aws-ebs-csi-driver@429e202
// pkg/driver/constants.go).
const ebsLocalPrefix = "local-ebs://"

// presetHint says why the presets derived nothing from the volume ID.
func presetHint(volumeID string, o Options) string {
	var hints []string
	if o.hasPreset(presetAWSEBS) {
		hints = append(hints, "aws-ebs: the volume ID "+quote(volumeID)+" is not vol- and 8 or more lower-case hex digits")
	}
	if o.hasPreset(presetGCEPD) {
		hints = append(hints, "gce-pd: the volume ID "+quote(volumeID)+" is not projects/<p>/zones|regions/<z>/disks/<name>")
	}
	if len(hints) == 0 {
		return ""
	}
	return "; " + strings.Join(hints, "; ")
}

// isEBSVolumeID reports whether id looks like an EBS volume ID, vol-<hex>
// (at least 8 lower-case hex digits: the old IDs have 8, the new 17). The
// preset is limited to such IDs: the disk backend compares the serial's
// first field with the ID exactly, and a short string is no identity.
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
