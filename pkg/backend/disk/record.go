package disk

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Record is what the journal keeps about a disk volume: the selector it
// was staged with, so that after a restart an unstage can find the disk to
// take offline and a health check can tell an offline disk from a
// detached one. A disk is never shared, so the record names no resource.
type Record struct {
	Selector contract.DiskSelector
	// RootAccess is the volume's volumeRootAccess (backend.AttrRootAccess).
	RootAccess contract.RootAccess
}

var _ backend.Record = Record{}

// RecordOf returns the record of a disk volume.
func RecordOf(spec *contract.DiskSpec) Record { return Record{Selector: spec.Selector} }

// Resource implements backend.Record: a disk shares nothing.
func (Record) Resource() string { return "" }

// Storage implements backend.Record: the selector, every field and match
// mode included.
func (r Record) Storage() string { return describe(r.Selector) }

// Attrs implements backend.Record. The selector is one JSON value under
// attrSelector, in the form the plugin has written since its first
// release (selectorJSON).
func (r Record) Attrs() map[string]string {
	b, err := json.Marshal(encodeSelector(r.Selector))
	if err != nil { // cannot happen: strings, integers and pointers to them
		panic(fmt.Sprintf("encode a disk selector: %v", err))
	}
	attrs := map[string]string{attrSelector: string(b)}
	backend.PutRootAccess(attrs, r.RootAccess)
	return attrs
}

// attrSelector is the Entry.Attrs key of the selector.
const attrSelector = "diskSelector"

// DecodeRecord reads the record of a disk volume's journal entry.
func DecodeRecord(e journal.Entry) (Record, error) {
	if _, err := backend.RecordResource(e, string(contract.KindDisk), ""); err != nil {
		return Record{}, err
	}
	s, ok := e.Attrs[attrSelector]
	if !ok {
		return Record{}, fmt.Errorf("journal entry of volume %q holds no disk selector: %w", e.VolumeID, backend.ErrNoRecord)
	}
	var sj selectorJSON
	if err := json.Unmarshal([]byte(s), &sj); err != nil {
		return Record{}, fmt.Errorf("journal entry of volume %q: decode the disk selector: %w: %w", e.VolumeID, err, backend.ErrNoRecord)
	}
	sel, err := sj.decode()
	if err != nil {
		return Record{}, fmt.Errorf("journal entry of volume %q: %w: %w", e.VolumeID, err, backend.ErrNoRecord)
	}
	if sel.IsZero() {
		return Record{}, fmt.Errorf("journal entry of volume %q holds an empty disk selector: %w", e.VolumeID, backend.ErrNoRecord)
	}
	return Record{Selector: sel, RootAccess: backend.RootAccessOf(e)}, nil
}

// selectorJSON is the journal form of a contract.DiskSelector. Its field
// names and the numbers of the match modes are a file format: they are
// what the first releases wrote (the Go field names of DiskSelector,
// MatchExact 0, MatchContains 1, MatchLastField 2) and must not change.
// The fields added later (NVMe identifiers, the platform selectors) are
// left out when empty, so a record of a volume that uses none of them is
// what the first releases wrote.
type selectorJSON struct {
	Serial      string  `json:"Serial"`
	SerialMatch int     `json:"SerialMatch"`
	Page83      string  `json:"Page83"`
	Page83Match int     `json:"Page83Match"`
	LUN         *uint32 `json:"LUN"`
	Target      *uint32 `json:"Target"`
	Bus         *uint32 `json:"Bus"`
	Location    string  `json:"Location"`
	Number      *uint32 `json:"Number"`

	NVMeNSID      *uint32 `json:"NVMeNSID,omitempty"`
	EUI           string  `json:"EUI,omitempty"`
	NGUID         string  `json:"NGUID,omitempty"`
	AdapterSerial string  `json:"AdapterSerial,omitempty"`
	AzureLUN      *uint32 `json:"AzureLUN,omitempty"`
	EBSVolumeID   string  `json:"EBSVolumeID,omitempty"`
	GCEDeviceName string  `json:"GCEDeviceName,omitempty"`
	VSphereUUID   string  `json:"VSphereUUID,omitempty"`
}

// matchModes maps the journal's numbers of the match modes to the
// contract's.
var matchModes = []contract.MatchMode{0: contract.MatchExact, 1: contract.MatchContains, 2: contract.MatchLastField}

func encodeMatch(m contract.MatchMode) int {
	for n, mm := range matchModes {
		if mm == m {
			return n
		}
	}
	panic(fmt.Sprintf("disk record: match mode %d has no journal number", m))
}

func decodeMatch(n int) (contract.MatchMode, error) {
	if n < 0 || n >= len(matchModes) {
		return 0, fmt.Errorf("unknown match mode %d in the disk selector", n)
	}
	return matchModes[n], nil
}

func encodeSelector(s contract.DiskSelector) selectorJSON {
	return selectorJSON{
		Serial: s.Serial, SerialMatch: encodeMatch(s.SerialMatch),
		Page83: s.Page83, Page83Match: encodeMatch(s.Page83Match),
		LUN: s.LUN, Target: s.Target, Bus: s.Bus, Location: s.Location, Number: s.Number,
		NVMeNSID: s.NVMeNSID, EUI: s.EUI, NGUID: s.NGUID, AdapterSerial: s.AdapterSerial,
		AzureLUN: s.AzureLUN, EBSVolumeID: s.EBSVolumeID, GCEDeviceName: s.GCEDeviceName, VSphereUUID: s.VSphereUUID,
	}
}

func (sj selectorJSON) decode() (contract.DiskSelector, error) {
	serial, err := decodeMatch(sj.SerialMatch)
	if err != nil {
		return contract.DiskSelector{}, err
	}
	page83, err := decodeMatch(sj.Page83Match)
	if err != nil {
		return contract.DiskSelector{}, err
	}
	return upgradeSelector(contract.DiskSelector{
		Serial: sj.Serial, SerialMatch: serial, Page83: sj.Page83, Page83Match: page83,
		LUN: sj.LUN, Target: sj.Target, Bus: sj.Bus, Location: sj.Location, Number: sj.Number,
		NVMeNSID: sj.NVMeNSID, EUI: sj.EUI, NGUID: sj.NGUID, AdapterSerial: sj.AdapterSerial,
		AzureLUN: sj.AzureLUN, EBSVolumeID: sj.EBSVolumeID, GCEDeviceName: sj.GCEDeviceName, VSphereUUID: sj.VSphereUUID,
	}), nil
}

// upgradeSelector reads the selectors the presets derived before they had
// selectors of their own as the ones they derive now, so that a volume
// staged by an earlier release unstages with today's rules and restages
// (the node compares the record's Storage with the new stage's and refuses
// a different one with AlreadyExists):
//   - aws-ebs wrote the volume ID without its dash as a serial matched by
//     "contains" ({Serial: "vol0abc…", SerialMatch: contains}): it is the
//     EBS volume "vol-0abc…", matched exactly;
//   - gce-pd wrote the device name as the last field of page 83
//     ({Page83: "<name>", Page83Match: last field}): it is the gce-pd
//     device name, found on NVMe machine types too.
//
// Only those exact forms are read anew; any other selector with a match
// mode (none was ever written but by those presets) keeps its mode.
func upgradeSelector(s contract.DiskSelector) contract.DiskSelector {
	rest := s
	rest.Serial, rest.SerialMatch, rest.Page83, rest.Page83Match = "", contract.MatchExact, "", contract.MatchExact
	if !rest.IsZero() {
		return s
	}
	switch {
	case s.Page83 == "" && s.SerialMatch == contract.MatchContains && s.Page83Match == contract.MatchExact && legacyEBSSerial(s.Serial):
		return contract.DiskSelector{EBSVolumeID: "vol-" + strings.TrimPrefix(s.Serial, "vol")}
	case s.Serial == "" && s.Page83Match == contract.MatchLastField && s.SerialMatch == contract.MatchExact && s.Page83 != "" &&
		!strings.ContainsAny(s.Page83, " \t"):
		return contract.DiskSelector{GCEDeviceName: s.Page83}
	}
	return s
}

// legacyEBSSerial reports the serial the aws-ebs preset derived from an
// EBS volume ID: "vol" and 8 or more lower-case hex digits.
func legacyEBSSerial(s string) bool {
	h, ok := strings.CutPrefix(s, "vol")
	return ok && len(h) >= 8 && isHex(h) && strings.ToLower(h) == h
}

// Record implements the node's Backend: the record of a disk volume.
func (b *Backend) Record(vol contract.Volume) (backend.Record, error) {
	if vol.Disk == nil {
		return nil, fmt.Errorf("volume has no disk spec: %w", host.ErrInvalid)
	}
	r := RecordOf(vol.Disk)
	r.RootAccess = vol.RootAccess
	return r, nil
}

// DecodeRecord implements the node's Backend.
func (b *Backend) DecodeRecord(e journal.Entry) (backend.Record, error) {
	return DecodeRecord(e)
}
