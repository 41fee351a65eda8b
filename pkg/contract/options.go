package contract

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Options are the node-wide settings that shape parsing. They come from
// node flags; call Validate once at start-up.
type Options struct {
	// DefaultKind is the backend of volumes that do not set backend; ""
	// means auto: smb when source is set, iscsi when iqn is set, else
	// disk. Node flag --default-backend.
	DefaultKind Kind
	// Aliases maps a vendor key onto a contract key (--context-alias
	// VENDORKEY=ourKey, repeatable; see ParseAlias).
	Aliases map[string]string
	// Presets are vendor disk conventions (--disk-preset, repeatable):
	// "azure-disk", "aws-ebs", "gce-pd", "vsphere".
	Presets []string
	// VolumeIDDisk is "" or "serial". With "serial", a disk volume with
	// no selector selects the disk whose serial number equals the volume
	// ID (the simulated host uses this so any controller can drive it).
	VolumeIDDisk string
	// RequirePrivacy is the default of requirePrivacy for smb volumes
	// (--smb-require-privacy, default true).
	RequirePrivacy bool
	// DefaultDomain qualifies a bare smb user name when the secret has no
	// domain (--smb-default-domain, default none).
	DefaultDomain string
	// DefaultRootAccess is volumeRootAccess for disk and iscsi volumes that
	// do not set it (--volume-root-access, default none).
	DefaultRootAccess string
}

// VolumeIDDiskSerial is the one non-empty value of Options.VolumeIDDisk.
const VolumeIDDiskSerial = "serial"

// ParseKind parses a backend name (case-insensitive), as the backend key
// and --default-backend take it.
func ParseKind(s string) (Kind, error) {
	k, ok := kindOf(s)
	if !ok {
		return "", fmt.Errorf("backend %q is not disk, smb or iscsi", s)
	}
	return k, nil
}

func kindOf(s string) (Kind, bool) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case KindDisk, KindSMB, KindISCSI:
		return k, true
	}
	return "", false
}

// presetAliases are the vendor keys each preset aliases onto a contract
// key. aws-ebs and gce-pd add fallbacks instead (see disk.go).
var presetAliases = map[string]map[string]string{
	// azuredisk-csi-driver publishes the LUN under publish_context key
	// "LUN" (kubernetes-sigs/azuredisk-csi-driver@d983d61
	// pkg/azureconstants/azure_constants.go). The alias moves it onto
	// diskLUN, where parseDisk reads it as DiskSelector.AzureLUN.
	presetAzureDisk: {keyAzureLUN: keyDiskLUN},
	// vsphere-csi-driver publishes the disk's page 83 identifier as
	// publish_context "diskUUID" (kubernetes-sigs/vsphere-csi-driver@bf80902
	// pkg/csi/service/osutils/windows_os_utils.go). The alias moves it
	// onto diskPage83, where parseDisk reads it as
	// DiskSelector.VSphereUUID.
	presetVSphere: {keyVSphereUUID: keyDiskPage83},
	presetAWSEBS:  nil,
	presetGCEPD:   nil,
}

// ValidatePreset reports whether name is a known disk preset.
func ValidatePreset(name string) error {
	if _, ok := presetAliases[name]; !ok {
		names := make([]string, 0, len(presetAliases))
		for n := range presetAliases {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("disk preset %q is unknown (known: %s)", name, strings.Join(names, ", "))
	}
	return nil
}

// ParseAlias parses one --context-alias value, "VENDORKEY=ourKey". ourKey
// must be a volume_context/publish_context key of the contract (matched
// case-insensitively; the canonical spelling is returned). vendorKey must
// be non-empty and must not be a contract key itself, except a key of
// another backend: "LUN=diskLUN" is allowed although "lun" is the iscsi
// LUN, and applies to disk volumes only.
func ParseAlias(s string) (vendorKey, ourKey string, err error) {
	v, o, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("context alias %q: want VENDORKEY=ourKey", s)
	}
	v, o = strings.TrimSpace(v), strings.TrimSpace(o)
	if err := checkAlias(v, o); err != nil {
		return "", "", err
	}
	return v, contextKeys[fold(o)].Name, nil
}

func checkAlias(vendor, our string) error {
	if vendor == "" {
		return fmt.Errorf("context alias %q=%q: vendor key is empty", vendor, our)
	}
	target, ok := contextKeys[fold(our)]
	if !ok {
		if _, secret := secretKeys[fold(our)]; secret {
			return fmt.Errorf("context alias %q=%q: %q is a node-stage secret key; aliases apply to volume_context and publish_context only", vendor, our, our)
		}
		return fmt.Errorf("context alias %q=%q: %q is not a contract key", vendor, our, our)
	}
	if fold(vendor) == fold(our) {
		return fmt.Errorf("context alias %q=%q: a key cannot alias itself", vendor, our)
	}
	if strings.HasPrefix(fold(vendor), csiPrefix) {
		return fmt.Errorf("context alias %q=%q: keys under %s are reserved", vendor, our, csiPrefix)
	}
	if own, ok := contextKeys[fold(vendor)]; ok && overlaps(own.Backends, target.Backends) {
		return fmt.Errorf("context alias %q=%q: %q is itself a contract key for the same backend", vendor, our, own.Name)
	}
	if _, ok := secretKeys[fold(vendor)]; ok {
		return fmt.Errorf("context alias %q=%q: %q is a node-stage secret key", vendor, our, vendor)
	}
	return nil
}

// Validate checks the options as a whole: the default backend, the
// presets, every alias and that no vendor key is aliased twice (aliases
// and presets together; vendor keys compare case-insensitively).
func (o Options) Validate() error {
	var errs []error
	if o.DefaultKind != "" {
		if _, ok := kindOf(string(o.DefaultKind)); !ok || Kind(strings.ToLower(string(o.DefaultKind))) != o.DefaultKind {
			errs = append(errs, fmt.Errorf("default backend %q is not disk, smb or iscsi", o.DefaultKind))
		}
	}
	if o.DefaultRootAccess != "" {
		if _, e := parseRootAccess(NodeRootAccessFlag, o.DefaultRootAccess); e != nil {
			errs = append(errs, e)
		}
	}
	if o.VolumeIDDisk != "" && o.VolumeIDDisk != VolumeIDDiskSerial {
		errs = append(errs, fmt.Errorf("volume ID disk selection %q is not %q", o.VolumeIDDisk, VolumeIDDiskSerial))
	}
	type seenAlias struct{ vendor, target, from string }
	seen := map[string]seenAlias{} // by folded vendor key
	add := func(vendor, target, from string) {
		prev, ok := seen[fold(vendor)]
		if ok && fold(prev.target) != fold(target) {
			errs = append(errs, fmt.Errorf("context alias %s=%s (%s) conflicts with %s=%s (%s)",
				vendor, target, from, prev.vendor, prev.target, prev.from))
			return
		}
		seen[fold(vendor)] = seenAlias{vendor, target, from}
	}
	for _, p := range o.Presets {
		if err := ValidatePreset(p); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, vendor := range sortedKeys(presetAliases[p]) {
			add(vendor, presetAliases[p][vendor], "preset "+p)
		}
	}
	for _, vendor := range sortedKeys(o.Aliases) {
		our := o.Aliases[vendor]
		if err := checkAlias(vendor, our); err != nil {
			errs = append(errs, err)
			continue
		}
		add(vendor, our, "--context-alias")
	}
	return errors.Join(errs...)
}

// alias is one compiled alias.
type alias struct {
	vendor string // folded
	target KeyDoc
	// ownKey is set when the vendor key is a contract key of another
	// backend; such an alias applies only once the kind is known.
	ownKey bool
	// preset is the preset the alias comes from; "" for --context-alias.
	preset string
}

// compileAliases merges preset and user aliases; a user alias replaces a
// preset alias of the same vendor key. Invalid entries are skipped
// (Validate reports them). The result is sorted by vendor key.
func compileAliases(o Options) []alias {
	m := map[string]alias{}
	put := func(vendor, our, preset string) {
		if checkAlias(vendor, our) != nil {
			return
		}
		_, own := contextKeys[fold(vendor)]
		m[fold(vendor)] = alias{vendor: fold(vendor), target: contextKeys[fold(our)], ownKey: own, preset: preset}
	}
	for _, p := range o.Presets {
		for _, vendor := range sortedKeys(presetAliases[p]) {
			put(vendor, presetAliases[p][vendor], p)
		}
	}
	for _, vendor := range sortedKeys(o.Aliases) {
		put(vendor, o.Aliases[vendor], "")
	}
	out := make([]alias, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].vendor < out[j].vendor })
	return out
}

func (o Options) hasPreset(name string) bool {
	for _, p := range o.Presets {
		if p == name {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
