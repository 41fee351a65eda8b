package sim

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// SetupDisk is a disk of a setup file (docs/sim-config.md, "disks"). Its
// keys are MSFT_Disk's properties, so that a node's Get-Disk output can be
// copied, plus what the per-disk IOCTLs answer. Outside a disk table a disk
// comes up as a cloud attaches one: blank (RAW), offline by SAN policy, on
// SCSI adapter 1, the adapter of auto-attached disks, unless its keys say
// otherwise.
type SetupDisk struct {
	// Serial is MSFT_Disk.SerialNumber (key serialNumber, or serial): what
	// identifies a disk outside a table, where it is required; in a table
	// it may be blank or padding, as real serials are.
	Serial string
	Size   uint64  // 0: 1 GiB
	Page83 string  // page83 as hex: one binary NAA identifier; "": derived from the serial, outside tables
	LUN    *uint32 // nil: the next LUN no disk on adapter 1 has (outside tables)

	// Number makes the disk part of a disk table: the node's whole disk
	// table (Setup.Table).
	Number         *uint32
	Location       *string
	BusType        *host.BusType
	IsBoot         bool
	IsSystem       bool
	IsReadOnly     bool
	IsOffline      *bool
	PartitionStyle *host.PartitionStyle
	// Identity holds the other identification keys; nil when none is set.
	Identity *DiskIdentity
}

// Table reports whether the setup declares the node's whole disk table:
// its disks set number (ParseSetup refuses a mix).
func (s *Setup) Table() bool { return len(s.Disks) > 0 && s.Disks[0].Number != nil }

// busTypeNames are MSFT_Disk.BusType's values by name (the MSFT_Disk
// page, learn.microsoft.com/windows-hardware/drivers/storage/msft-disk),
// lower case without spaces.
var busTypeNames = map[string]host.BusType{
	"unknown": 0, "scsi": 1, "atapi": 2, "ata": 3, "1394": 4, "ssa": 5, "fibrechannel": 6, "usb": 7,
	"raid": 8, "iscsi": 9, "sas": 10, "sata": 11, "sd": 12, "mmc": 13, "virtual": 14,
	"filebackedvirtual": 15, "storagespaces": 16, "nvme": 17,
}

// uniqueIDFormatNames are MSFT_Disk.UniqueIdFormat's values by name.
var uniqueIDFormatNames = map[string]host.UniqueIDFormat{
	"vendorspecific": 0, "vendorid": 1, "eui64": 2, "fcphname": 3, "scsinamestring": 8,
}

// designatorTypeNames and codeSetNames are STORAGE_IDENTIFIER_TYPE and
// STORAGE_IDENTIFIER_CODE_SET by name (ntddstor.h), plus "naa" for
// FCPHName.
var (
	designatorTypeNames = map[string]host.DesignatorType{
		"vendorspecific": 0, "vendorid": 1, "eui64": 2, "fcphname": 3, "naa": 3, "portrelative": 4,
		"targetportgroup": 5, "logicalunitgroup": 6, "md5logicalunitidentifier": 7, "scsinamestring": 8,
	}
	codeSetNames     = map[string]host.CodeSet{"binary": 1, "ascii": 2, "utf8": 3, "utf-8": 3}
	associationNames = map[string]host.Association{"device": 0, "port": 1, "target": 2}
	styleNames       = map[string]host.PartitionStyle{"raw": 0, "unknown": 0, "mbr": 1, "gpt": 2}
)

// enum decodes a number up to max or one of the names (case and spaces
// do not matter).
func enum[T ~uint8 | ~uint16](p *setupParser, n *yaml.Node, at string, max uint64, names map[string]T) T {
	v, ok := p.scalar(n, at)
	if !ok {
		return 0
	}
	if u, err := strconv.ParseUint(v, 10, 64); err == nil && u <= max {
		return T(u)
	}
	if t, ok := names[strings.ToLower(strings.ReplaceAll(v, " ", ""))]; ok {
		return t
	}
	p.fail(n, at, "%q: want a number up to %d or one of %s", v, max, strings.Join(slices.Sorted(keysOf(names)), ", "))
	return 0
}

func keysOf[T any](m map[string]T) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// text decodes a string as Windows reports it: blank and padded values are
// kept; control characters are refused.
func (p *setupParser) text(n *yaml.Node, at string) string {
	v, ok := p.scalar(n, at)
	if ok && strings.IndexFunc(v, unicode.IsControl) >= 0 {
		p.fail(n, at, "%q holds a control character", v)
	}
	return v
}

func (p *setupParser) byteNum(n *yaml.Node, at string) uint8 {
	v, ok := p.scalar(n, at)
	if !ok {
		return 0
	}
	u, err := strconv.ParseUint(v, 10, 8)
	if err != nil {
		p.fail(n, at, "%q: want 0 to 255", v)
	}
	return uint8(u)
}

func (d *SetupDisk) identity() *DiskIdentity {
	if d.Identity == nil {
		d.Identity = &DiskIdentity{}
	}
	return d.Identity
}

func (p *setupParser) disk(n *yaml.Node, at string) SetupDisk {
	var d SetupDisk
	var serialKey string
	serial := func(key string) func(n *yaml.Node, at string) {
		return func(n *yaml.Node, at string) {
			if serialKey != "" {
				p.fail(n, at, "give serial or serialNumber, not both")
			}
			serialKey, d.Serial = key, p.text(n, at)
		}
	}
	str := func(dst func(*SetupDisk) *string) func(n *yaml.Node, at string) {
		return func(n *yaml.Node, at string) { *dst(&d) = p.text(n, at) }
	}
	flag := func(dst *bool) func(n *yaml.Node, at string) {
		return func(n *yaml.Node, at string) { *dst = p.boolean(n, at) }
	}
	p.object(n, at, fields{
		"serial":       serial("serial"),
		"serialNumber": serial("serialNumber"),
		"size":         func(n *yaml.Node, at string) { d.Size = p.size(n, at) },
		"page83":       func(n *yaml.Node, at string) { p.designators(n, at, &d) },
		"lun": func(n *yaml.Node, at string) {
			l := p.lun(n, at)
			d.LUN = &l
		},
		"number": func(n *yaml.Node, at string) {
			v, ok := p.scalar(n, at)
			u, err := strconv.ParseUint(v, 10, 32)
			if ok && err != nil {
				p.fail(n, at, "%q: want a disk number", v)
			}
			num := uint32(u)
			d.Number = &num
		},
		"friendlyName":        str(func(d *SetupDisk) *string { return &d.identity().FriendlyName }),
		"manufacturer":        str(func(d *SetupDisk) *string { return &d.identity().Manufacturer }),
		"model":               str(func(d *SetupDisk) *string { return &d.identity().Model }),
		"uniqueId":            str(func(d *SetupDisk) *string { return &d.identity().UniqueID }),
		"path":                str(func(d *SetupDisk) *string { return &d.identity().Path }),
		"adapterSerialNumber": str(func(d *SetupDisk) *string { return &d.identity().AdapterSerialNumber }),
		"location": func(n *yaml.Node, at string) {
			v := p.text(n, at)
			d.Location = &v
		},
		"uniqueIdFormat": func(n *yaml.Node, at string) {
			d.identity().UniqueIDFormat = enum(p, n, at, 0xffff, uniqueIDFormatNames)
		},
		"busType": func(n *yaml.Node, at string) {
			b := enum(p, n, at, 0xffff, busTypeNames)
			d.BusType = &b
		},
		"partitionStyle": func(n *yaml.Node, at string) {
			s := enum(p, n, at, 2, styleNames)
			d.PartitionStyle = &s
		},
		"isOffline": func(n *yaml.Node, at string) {
			v := p.boolean(n, at)
			d.IsOffline = &v
		},
		"isBoot":              flag(&d.IsBoot),
		"isSystem":            flag(&d.IsSystem),
		"isReadOnly":          flag(&d.IsReadOnly),
		"deviceIdUnsupported": func(n *yaml.Node, at string) { d.identity().DeviceIDUnsupported = p.boolean(n, at) },
		"scsiAddress":         func(n *yaml.Node, at string) { p.scsiAddress(n, at, &d) },
	})
	switch {
	case d.Number == nil && serialKey == "":
		p.fail(n, at, `"serial" is required (outside a disk table, the serial names the disk)`)
	case d.Number == nil && (d.Serial == "" || strings.TrimSpace(d.Serial) != d.Serial):
		p.fail(n, at, "serial %q: outside a disk table the serial names the disk; it must not be blank or padded", d.Serial)
	case d.Number != nil && d.LUN != nil:
		p.fail(n, at, "lun: a disk of a disk table gives its location instead")
	case d.Identity != nil && d.Identity.DeviceIDUnsupported && d.Identity.Designators != nil:
		p.fail(n, at, "page83 and deviceIdUnsupported: a disk that does not answer the device-ID query has no page 83 identifiers")
	}
	return d
}

// designators decodes page83: a hex string (one binary NAA identifier, as
// before) or a list of {type, codeSet, value, association}.
func (p *setupParser) designators(n *yaml.Node, at string, d *SetupDisk) {
	if resolve(n).Kind == yaml.ScalarNode {
		d.Page83 = p.page83(n, at)
		return
	}
	ids := []DesignatorState{}
	p.list(n, at, func(n *yaml.Node, at string) {
		var ds DesignatorState
		var value string
		var valueAt *yaml.Node
		p.object(n, at, fields{
			"type":        func(n *yaml.Node, at string) { ds.Type = enum(p, n, at, 0xff, designatorTypeNames) },
			"codeSet":     func(n *yaml.Node, at string) { ds.CodeSet = enum(p, n, at, 0xff, codeSetNames) },
			"association": func(n *yaml.Node, at string) { ds.Association = enum(p, n, at, 0xff, associationNames) },
			"value":       func(n *yaml.Node, at string) { value, valueAt = p.text(n, at), n },
		}, "type", "codeSet", "value")
		if p.err != nil {
			return
		}
		switch ds.CodeSet {
		case host.CodeSetBinary:
			h := strings.ToLower(strings.ReplaceAll(value, "-", ""))
			if _, err := hex.DecodeString(h); err != nil || h == "" {
				p.fail(valueAt, at+".value", "%q: a binary identifier is an even number of hex digits", value)
			}
			ds.Value = h
		case host.CodeSetASCII, host.CodeSetUTF8:
			ds.Value = hex.EncodeToString([]byte(value))
		default:
			p.fail(n, at+".codeSet", "code set %d: want binary (1), ascii (2) or utf8 (3)", ds.CodeSet)
		}
		ids = append(ids, ds)
	})
	d.identity().Designators = ids
}

// scsiAddress decodes {port, path, target, lun} or "unsupported".
func (p *setupParser) scsiAddress(n *yaml.Node, at string, d *SetupDisk) {
	if r := resolve(n); r.Kind == yaml.ScalarNode {
		if r.Value != "unsupported" {
			p.fail(n, at, `%q: want {port, path, target, lun} or "unsupported"`, r.Value)
		}
		d.identity().SCSIAddressUnsupported = true
		return
	}
	var a host.SCSIAddress
	p.object(n, at, fields{
		"port":   func(n *yaml.Node, at string) { a.Port = p.byteNum(n, at) },
		"path":   func(n *yaml.Node, at string) { a.Path = p.byteNum(n, at) },
		"target": func(n *yaml.Node, at string) { a.Target = p.byteNum(n, at) },
		"lun":    func(n *yaml.Node, at string) { a.LUN = p.byteNum(n, at) },
	}, "lun")
	d.identity().SCSIAddress = &a
}

// claimDisks reports disks declared twice, and a mix of table and other
// entries. Outside a table a disk is its serial, page 83 identifier and
// LUN; in a table only its number and device path are unique: identifiers
// repeat on real nodes, and it is the plugin that must refuse such a
// match, not the simulated host.
func (p *setupParser) claimDisks(disks []SetupDisk, claim func(what, value, at string)) {
	table := len(disks) > 0 && disks[0].Number != nil
	for i, d := range disks {
		if (d.Number != nil) != table {
			p.err = &SetupError{Entry: fmt.Sprintf("disks[%d]", i),
				Msg: "number is set on every disk of a disk table (the node's whole disk table) or on none"}
			return
		}
		if table {
			at := fmt.Sprintf("disks[%d] (disk %d)", i, *d.Number)
			claim("disk number", strconv.FormatUint(uint64(*d.Number), 10), at)
			// The device path holds the device instance ID, which
			// "uniquely identifies a device in the system"
			// (learn.microsoft.com/windows-hardware/drivers/install/device-instance-ids):
			// unlike serials and identifiers, no two disks share one.
			if d.Identity != nil && d.Identity.Path != "" {
				claim("device path", strings.ToLower(d.Identity.Path), at)
			}
			continue
		}
		at := fmt.Sprintf("disks[%d] (serial %s)", i, d.Serial)
		claim("serial", d.Serial, at)
		if d.Page83 != "" {
			claim("page83", d.Page83, at)
		}
		if d.LUN != nil {
			claim("lun", strconv.Itoa(int(*d.LUN)), at)
		}
	}
}

// state is the disk the declaration describes; lun places a disk outside
// a table whose location is not declared.
func (d SetupDisk) state(table bool, lun uint32) DiskState {
	size := d.Size
	if size == 0 {
		size = DefaultDiskSize
	}
	var s DiskState
	if table {
		s = DiskState{Serial: d.Serial, Page83: d.Page83, Size: size, BusType: host.BusTypeSCSI,
			Health: host.HealthHealthy, PartitionStyle: host.PartitionStyleRAW}
	} else {
		page83 := d.Page83
		if page83 == "" && (d.Identity == nil || d.Identity.Designators == nil) {
			page83 = page83For(d.Serial)
		}
		s = blankDisk(d.Serial, page83, size, lun)
	}
	if d.Number != nil {
		s.Number = *d.Number
	}
	if d.Location != nil {
		s.Location = *d.Location
	}
	if d.BusType != nil {
		s.BusType = *d.BusType
	}
	if d.PartitionStyle != nil {
		s.PartitionStyle = *d.PartitionStyle
	}
	if s.PartitionStyle == host.PartitionStyleGPT {
		s.GUID = newGUID()
	}
	if d.IsOffline != nil {
		s.Offline = *d.IsOffline
	}
	s.setOffline(s.Offline)
	s.Boot, s.System, s.ReadOnly = d.IsBoot, d.IsSystem, d.IsReadOnly
	if d.Identity != nil {
		id := *d.Identity
		s.Identity = &id
	}
	s.Partitions = layoutOf(s)
	return s
}

// layoutOf lays out a declared disk's partitions: a boot or system disk
// has Windows' (GPT: EFI system, MSR and C:; MBR: C:), another GPT disk
// the MSR that Initialize makes, an MBR or RAW disk none.
func layoutOf(d DiskState) []PartitionState {
	switch {
	case d.critical():
		return bootPartitions(d.Size, d.PartitionStyle)
	case d.PartitionStyle == host.PartitionStyleGPT:
		return []PartitionState{{Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}}
	}
	return nil
}

// identityDiff compares what two disks tell Windows about themselves and
// names the differences ("friendly name \"a\", declared \"b\""), "" when
// they agree. The default device path comes from the disk's ID, which a
// declaration does not have: the state's is used.
func identityDiff(have, want DiskState) string {
	want.ID = have.ID
	fields := func(d *DiskState) []string {
		h := d.toHost()
		ids, idErr := d.deviceIDs()
		addr, addrErr := d.scsiAddress()
		return []string{
			fmt.Sprintf("serial %q", h.SerialNumber), fmt.Sprintf("location %q", h.Location),
			fmt.Sprintf("bus type %d", h.BusType), fmt.Sprintf("boot %t", h.IsBoot), fmt.Sprintf("system %t", h.IsSystem),
			fmt.Sprintf("friendly name %q", h.FriendlyName), fmt.Sprintf("manufacturer %q", h.Manufacturer),
			fmt.Sprintf("model %q", h.Model), fmt.Sprintf("path %q", h.Path),
			fmt.Sprintf("unique ID %q (format %d)", h.UniqueID, h.UniqueIDFormat),
			fmt.Sprintf("adapter serial %q", h.AdapterSerialNumber),
			fmt.Sprintf("page 83 %v (answered %t)", ids, idErr == nil), fmt.Sprintf("SCSI address %v (answered %t)", addr, addrErr == nil),
		}
	}
	h, w := fields(&have), fields(&want)
	var diff []string
	for i := range h {
		if h[i] != w[i] {
			diff = append(diff, h[i]+", declared "+w[i])
		}
	}
	return strings.Join(diff, "; ")
}

// planDisks checks the declared disks against st and returns the steps that
// add them.
func (st *State) planDisks(disks []SetupDisk) ([]func() string, error) {
	if len(disks) > 0 && disks[0].Number != nil {
		return st.planTable(disks)
	}
	var plan []func() string
	// Disks that name their LUN are attached before the others pick free
	// LUNs.
	order := make([]int, 0, len(disks))
	for pass := 0; pass < 2; pass++ {
		for i, d := range disks {
			if (d.LUN != nil) == (pass == 0) {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		d := disks[i]
		step, err := st.planDisk(d)
		if err != nil {
			return nil, fmt.Errorf("disks[%d] (serial %s): %w", i, d.Serial, err)
		}
		plan = append(plan, step)
	}
	return plan, nil
}

// planTable applies a disk table: on a fresh simulated host (its built-in
// boot disk alone) the table replaces the host's disks; on the state a
// table made, each disk must still be the one declared (a larger disk is
// the declared one, grown).
func (st *State) planTable(disks []SetupDisk) ([]func() string, error) {
	fresh := len(st.Disks) == 1 && st.Disks[0].ID == "disk-0" && st.Disks[0].Serial == bootSerial && len(st.Detached) == 0
	if fresh {
		return []func() string{func() string {
			st.Disks = st.Disks[:0]
			var nums []string
			for _, d := range disks {
				s := d.state(true, 0)
				s.ID = "disk-" + strconv.FormatUint(st.NextDiskID, 10)
				st.NextDiskID++
				st.Disks = append(st.Disks, s)
				nums = append(nums, strconv.FormatUint(uint64(s.Number), 10))
			}
			sortDisks(st)
			return "disk table: disks " + strings.Join(nums, ", ")
		}}, nil
	}
	const reset = "a disk table is the whole table of a fresh simulated host (reset its state directory)"
	if slices.ContainsFunc(st.Disks, func(d DiskState) bool { return d.ID == "disk-0" && d.Serial == bootSerial }) {
		return nil, fmt.Errorf("disks: %w", conflictf("the simulated host has run without a disk table (its built-in boot disk is there); %s", reset))
	}
	var plan []func() string
	for i, d := range disks {
		want := d.state(true, 0)
		have := st.diskByNumber(want.Number)
		if have == nil {
			return nil, fmt.Errorf("disks[%d] (disk %d): %w", i, want.Number, conflictf("the simulated host has no disk %d; %s", want.Number, reset))
		}
		if cur := max(have.Size, have.PendingSize); cur < want.Size {
			return nil, fmt.Errorf("disks[%d] (disk %d): %w", i, want.Number, conflictf("the simulated host's disk has %d bytes, fewer than the %d declared", cur, want.Size))
		}
		if diff := identityDiff(*have, want); diff != "" {
			return nil, fmt.Errorf("disks[%d] (disk %d): %w", i, want.Number, conflictf("the simulated host's disk %d has %s; %s", want.Number, diff, reset))
		}
		n := want.Number
		plan = append(plan, func() string { return fmt.Sprintf("disk %d: kept", n) })
	}
	return plan, nil
}

// planDisk checks a declared disk outside a table against st and returns
// the step that attaches it (or keeps the one attached).
func (st *State) planDisk(d SetupDisk) (func() string, error) {
	size := d.Size
	if size == 0 {
		size = DefaultDiskSize
	}
	agrees := func(have *DiskState, what string) error {
		if have.Target != "" {
			return conflictf("the simulated host has this serial as LUN %d of iSCSI target %s", have.LUN, have.Target)
		}
		if have.critical() {
			return conflictf("the serial is the simulated host's boot disk's")
		}
		// A disk only grows (a volume expansion grows it): a larger one is
		// the declared disk, expanded since.
		if cur := max(have.Size, have.PendingSize); cur < size {
			return conflictf("the %s disk with this serial has %d bytes, fewer than the %d declared", what, cur, size)
		}
		if d.Page83 != "" && have.Page83 != d.Page83 {
			return conflictf("the %s disk with this serial has page 83 identifier %s, not %s", what, have.Page83, d.Page83)
		}
		if d.LUN != nil && have.Location != autoLocation(*d.LUN) {
			return conflictf("the %s disk with this serial is at %q, not at LUN %d (%q)", what, have.Location, *d.LUN, autoLocation(*d.LUN))
		}
		// The declared identity keys, where the state's disk has the
		// values the declaration leaves open.
		var lun uint32
		if d.LUN != nil {
			lun = *d.LUN
		}
		want := d.state(false, lun)
		if d.Location == nil && d.LUN == nil {
			want.Location = have.Location
		}
		if d.Page83 == "" {
			want.Page83 = have.Page83
		}
		if d.BusType == nil {
			want.BusType = have.BusType
		}
		if diff := identityDiff(*have, want); diff != "" {
			return conflictf("the %s disk with this serial has %s", what, diff)
		}
		return nil
	}
	for i := range st.Disks {
		if have := &st.Disks[i]; have.Serial == d.Serial {
			if err := agrees(have, "attached"); err != nil {
				return nil, err
			}
			n := have.Number
			return func() string { return fmt.Sprintf("disk %s: kept (disk %d)", d.Serial, n) }, nil
		}
	}
	for i := range st.Detached {
		if have := &st.Detached[i]; have.Serial == d.Serial {
			if err := agrees(have, "detached"); err != nil {
				return nil, err
			}
			return func() string {
				n, _ := st.reattach(d.Serial, DiskSpec{}, true)
				return fmt.Sprintf("disk %s: attached again with its contents (disk %d)", d.Serial, n)
			}, nil
		}
	}
	page83 := d.state(false, 0).Page83
	for _, have := range st.Disks {
		if page83 != "" && have.Page83 == page83 {
			return nil, conflictf("disk %d (serial %s) has page 83 identifier %s already", have.Number, have.Serial, page83)
		}
		if d.LUN != nil && have.Location == autoLocation(*d.LUN) {
			return nil, conflictf("disk %d (serial %s) is at LUN %d already (%q)", have.Number, have.Serial, *d.LUN, have.Location)
		}
	}
	return func() string {
		var lun uint32
		if d.LUN != nil {
			lun = *d.LUN
		} else if d.Location == nil {
			lun = st.nextAutoLUN()
		}
		s := d.state(false, lun)
		n := st.addDisk(s)
		return fmt.Sprintf("disk %s: attached as disk %d, %q, %d bytes", d.Serial, n, s.Location, s.Size)
	}, nil
}
