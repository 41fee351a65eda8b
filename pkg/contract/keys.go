package contract

import "strings"

// Key names, in the spelling the documentation uses. Lookups fold case.
const (
	keyVolumeID = "volume_id" // the CSI field, named in errors only

	keyBackend            = "backend"
	keyFsType             = "fsType"
	keyCSIFsType          = "csi.storage.k8s.io/fstype"
	keyFsLabel            = "fsLabel"
	keyAllocationUnitSize = "allocationUnitSize"
	keyVolumeRootAccess   = KeyVolumeRootAccess
	keyEphemeral          = "csi.storage.k8s.io/ephemeral"
	keyPVName             = "csi.storage.k8s.io/pv/name"
	keyPVCName            = "csi.storage.k8s.io/pvc/name"
	keyPVCNamespace       = "csi.storage.k8s.io/pvc/namespace"

	// csiPrefix marks keys that kubelet and external-provisioner add;
	// they are known (never Ignored) whether or not the contract uses them.
	csiPrefix = "csi.storage.k8s.io/"

	keyDiskSerial   = "diskSerial"
	keyDiskPage83   = "diskPage83"
	keyDiskLUN      = "diskLUN"
	keyDiskTarget   = "diskTarget"
	keyDiskBus      = "diskBus"
	keyDiskLocation = "diskLocation"
	keyDiskNumber   = "diskNumber"

	keyDiskNVMeNSID      = "diskNVMeNSID"
	keyDiskEUI           = "diskEUI"
	keyDiskNGUID         = "diskNGUID"
	keyDiskAdapterSerial = "diskAdapterSerial"

	keySource         = "source"
	keySubDir         = "subDir"
	keyRequirePrivacy = "requirePrivacy"
	keyNoCredentials  = "mapWithoutCredentials"
	keyUsername       = "username"
	keyPassword       = "password"
	keyDomain         = "domain"

	keyTargetPortal      = "targetPortal"
	keyPortals           = "portals"
	keyIQN               = "iqn"
	keyLUN               = "lun"
	keyDiscoveryCHAPAuth = "discoveryCHAPAuth"
	keySessionCHAPAuth   = "sessionCHAPAuth"
	keyMultipath         = "multipath"
	keyPersistent        = "persistent"
	keyInitiatorPortal   = "initiatorPortal"
	keySessionUser       = "node.session.auth.username"
	keySessionSecret     = "node.session.auth.password"
	keySessionUserIn     = "node.session.auth.username_in"
	keySessionSecretIn   = "node.session.auth.password_in"
	keyDiscoveryUser     = "node.sendtargets.auth.username"
	keyDiscoverySecret   = "node.sendtargets.auth.password"

	// Vendor keys that presets read: LUN and diskUUID are aliased onto
	// contract keys and then read under the preset's rules (parseDisk);
	// volumeID is read by the aws-ebs preset for local EBS volumes.
	keyAzureLUN    = "LUN"
	keyVSphereUUID = "diskUUID"
	keyEBSVolumeID = "volumeID"
)

// KeyVolumeRootAccess is the parameter that grants access on the root of a
// disk or iSCSI volume's file system (access.go).
const KeyVolumeRootAccess = "volumeRootAccess"

// Disk presets (Options.Presets).
const (
	presetAzureDisk = "azure-disk"
	presetVSphere   = "vsphere"
	presetAWSEBS    = "aws-ebs"
	presetGCEPD     = "gce-pd"
)

// Where a key is read from (KeyDoc.Source).
const (
	SourceContext = "volume_context/publish_context" // the two maps, merged
	SourceSecret  = "secret"                         // the node-stage secret
)

// KeyDoc describes one key the parser understands.
type KeyDoc struct {
	Name   string // canonical spelling; matching folds case
	Source string // SourceContext or SourceSecret
	// Backends lists the backends the key applies to; nil means every
	// backend.
	Backends []Kind
	// Preset is set for a vendor key that is understood only when that
	// preset is enabled (Options.Presets).
	Preset string
}

var (
	onlyDisk  = []Kind{KindDisk}
	onlySMB   = []Kind{KindSMB}
	onlyISCSI = []Kind{KindISCSI}
	blockFS   = []Kind{KindDisk, KindISCSI}
)

// keyTable is every key, in documentation order.
var keyTable = []KeyDoc{
	{Name: keyBackend, Source: SourceContext},
	{Name: keyFsType, Source: SourceContext},
	{Name: keyCSIFsType, Source: SourceContext},
	{Name: keyEphemeral, Source: SourceContext},
	{Name: keyPVName, Source: SourceContext},
	{Name: keyPVCName, Source: SourceContext},
	{Name: keyPVCNamespace, Source: SourceContext},
	{Name: keyFsLabel, Source: SourceContext, Backends: blockFS},
	{Name: keyAllocationUnitSize, Source: SourceContext, Backends: blockFS},
	{Name: keyVolumeRootAccess, Source: SourceContext, Backends: blockFS},

	{Name: keyDiskSerial, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskPage83, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskLUN, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskTarget, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskBus, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskLocation, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskNumber, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskNVMeNSID, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskEUI, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskNGUID, Source: SourceContext, Backends: onlyDisk},
	{Name: keyDiskAdapterSerial, Source: SourceContext, Backends: onlyDisk},

	{Name: keySource, Source: SourceContext, Backends: onlySMB},
	{Name: keySubDir, Source: SourceContext, Backends: onlySMB},
	{Name: keyRequirePrivacy, Source: SourceContext, Backends: onlySMB},
	{Name: keyNoCredentials, Source: SourceContext, Backends: onlySMB},
	{Name: keyUsername, Source: SourceSecret, Backends: onlySMB},
	{Name: keyPassword, Source: SourceSecret, Backends: onlySMB},
	{Name: keyDomain, Source: SourceSecret, Backends: onlySMB},

	{Name: keyTargetPortal, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyPortals, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyIQN, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyLUN, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyDiscoveryCHAPAuth, Source: SourceContext, Backends: onlyISCSI},
	{Name: keySessionCHAPAuth, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyMultipath, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyPersistent, Source: SourceContext, Backends: onlyISCSI},
	{Name: keyInitiatorPortal, Source: SourceContext, Backends: onlyISCSI},
	{Name: keySessionUser, Source: SourceSecret, Backends: onlyISCSI},
	{Name: keySessionSecret, Source: SourceSecret, Backends: onlyISCSI},
	{Name: keySessionUserIn, Source: SourceSecret, Backends: onlyISCSI},
	{Name: keySessionSecretIn, Source: SourceSecret, Backends: onlyISCSI},
	{Name: keyDiscoveryUser, Source: SourceSecret, Backends: onlyISCSI},
	{Name: keyDiscoverySecret, Source: SourceSecret, Backends: onlyISCSI},

	{Name: keyAzureLUN, Source: SourceContext, Backends: onlyDisk, Preset: presetAzureDisk},
	{Name: keyVSphereUUID, Source: SourceContext, Backends: onlyDisk, Preset: presetVSphere},
	{Name: keyEBSVolumeID, Source: SourceContext, Backends: onlyDisk, Preset: presetAWSEBS},
}

// Keys returns every key the parser understands, in documentation order.
func Keys() []KeyDoc {
	out := make([]KeyDoc, len(keyTable))
	for i, k := range keyTable {
		k.Backends = append([]Kind(nil), k.Backends...)
		if len(k.Backends) == 0 {
			k.Backends = nil
		}
		out[i] = k
	}
	return out
}

// presetKeys indexes the vendor keys a preset reads itself (not through an
// alias) by folded name, with the preset.
var presetKeys = map[string]string{fold(keyEBSVolumeID): presetAWSEBS}

// contextKeys and secretKeys index the contract's own keys (not the
// preset vendor keys) by folded name.
var contextKeys, secretKeys = func() (map[string]KeyDoc, map[string]KeyDoc) {
	c, s := map[string]KeyDoc{}, map[string]KeyDoc{}
	for _, k := range keyTable {
		switch {
		case k.Preset != "":
		case k.Source == SourceSecret:
			s[fold(k.Name)] = k
		default:
			c[fold(k.Name)] = k
		}
	}
	return c, s
}()

// fold is the case folding every key lookup uses.
func fold(k string) string { return strings.ToLower(k) }

// appliesTo reports whether a key with these backends is valid for kind.
func appliesTo(backends []Kind, kind Kind) bool {
	if len(backends) == 0 {
		return true
	}
	for _, b := range backends {
		if b == kind {
			return true
		}
	}
	return false
}

// overlaps reports whether two backend sets share a backend (nil is all).
func overlaps(a, b []Kind) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, k := range a {
		if appliesTo(b, k) {
			return true
		}
	}
	return false
}

// backendsText names a backend set for messages: "the smb backend",
// "disk and iscsi volumes".
func backendsText(b []Kind) string {
	if len(b) == 1 {
		return "the " + string(b[0]) + " backend"
	}
	parts := make([]string, len(b))
	for i, k := range b {
		parts[i] = string(k)
	}
	return strings.Join(parts, " and ") + " volumes"
}
