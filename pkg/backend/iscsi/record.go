package iscsi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Record is what the journal keeps about an iSCSI volume: its target (the
// resource the volumes of a target share, whose last unstage logs out),
// the portals it logs in through (removed once nothing uses them), its LUN
// (to find its disk after a restart) and whether it is multipath (to
// report a path that is down).
type Record struct {
	IQN       string // lower case
	LUN       uint32
	Portals   []host.Portal
	Multipath bool
	// CHAPUser and CHAPSecretMAC are the session CHAP credential the
	// volume was staged with (backend.Credential): the user, "" without
	// CHAP, and the MAC of the secret, never the secret.
	CHAPUser, CHAPSecretMAC string
	// RootAccess is the volume's volumeRootAccess (backend.AttrRootAccess).
	RootAccess contract.RootAccess
}

var _ backend.Record = Record{}

// RecordOf returns the record of an iSCSI volume, without its credential
// (Backend.Record adds the CHAP user and the MAC of the secret).
func RecordOf(spec *contract.ISCSISpec) Record {
	return Record{IQN: normalizeIQN(spec.IQN), LUN: spec.LUN, Portals: spec.Portals, Multipath: spec.Multipath}
}

// Resource implements backend.Record: "iscsi:" and the target's IQN.
func (r Record) Resource() string { return resourceKey(r.IQN) }

// Storage implements backend.Record: the LUN and its target.
func (r Record) Storage() string {
	return fmt.Sprintf("LUN %d of target %s", r.LUN, normalizeIQN(r.IQN))
}

// Attrs implements backend.Record. The target is the entry's ResourceKey;
// the attributes hold the portals ("address:port" joined by ","), the LUN
// and the multipath setting.
func (r Record) Attrs() map[string]string {
	ps := make([]string, len(r.Portals))
	for i, p := range r.Portals {
		ps[i] = p.String()
	}
	attrs := map[string]string{
		attrPortals:   strings.Join(ps, ","),
		attrLUN:       strconv.FormatUint(uint64(r.LUN), 10),
		attrMultipath: strconv.FormatBool(r.Multipath),
	}
	if r.CHAPUser != "" {
		attrs[attrCHAPUser] = r.CHAPUser
	}
	if r.CHAPSecretMAC != "" {
		attrs[attrCHAPSecretMAC] = r.CHAPSecretMAC
	}
	backend.PutRootAccess(attrs, r.RootAccess)
	return attrs
}

// Credential is the session credential the record names.
func (r Record) Credential() backend.Credential {
	return backend.Credential{User: r.CHAPUser, SecretMAC: r.CHAPSecretMAC}
}

// The Entry.Attrs keys of an iSCSI record.
const (
	attrPortals       = "portals"
	attrLUN           = "lun"
	attrMultipath     = "multipath"
	attrCHAPUser      = "chapUser"
	attrCHAPSecretMAC = "chapSecretMAC"
)

// resourceKeyPrefix starts the ResourceKey of the volumes of a target.
const resourceKeyPrefix = "iscsi:"

// resourceKey is the ResourceKey of the volumes of target iqn.
func resourceKey(iqn string) string { return resourceKeyPrefix + normalizeIQN(iqn) }

// DecodeRecord reads the record of an iSCSI volume's journal entry. A
// portal that does not parse is skipped: the entry was written from a
// validated contract, and the other portals are still worth releasing.
func DecodeRecord(e journal.Entry) (Record, error) {
	iqn, err := backend.RecordResource(e, string(contract.KindISCSI), resourceKeyPrefix)
	if err != nil {
		return Record{}, err
	}
	lun, err := strconv.ParseUint(e.Attrs[attrLUN], 10, 32)
	if err != nil {
		return Record{}, fmt.Errorf("journal entry of volume %q: LUN %q: %w", e.VolumeID, e.Attrs[attrLUN], backend.ErrNoRecord)
	}
	r := Record{IQN: normalizeIQN(iqn), LUN: uint32(lun)}
	for _, s := range strings.Split(e.Attrs[attrPortals], ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if p, err := contract.ParsePortal(s); err == nil {
			r.Portals = append(r.Portals, p)
		}
	}
	r.Multipath, _ = strconv.ParseBool(e.Attrs[attrMultipath]) // absent or damaged: single path
	r.CHAPUser, r.CHAPSecretMAC = e.Attrs[attrCHAPUser], e.Attrs[attrCHAPSecretMAC]
	r.RootAccess = backend.RootAccessOf(e)
	return r, nil
}

// recordOf returns the iSCSI record of an entry, and false when the entry
// holds none (the journal did not know the volume at this path).
func recordOf(e journal.Entry) (Record, bool) {
	r, err := DecodeRecord(e)
	return r, err == nil
}

// listsPortal reports whether the record lists the portal with key k.
func (r Record) listsPortal(k string) bool {
	for _, p := range r.Portals {
		if portalKey(p) == k {
			return true
		}
	}
	return false
}

// Record implements the node's Backend: the record of an iSCSI volume.
func (b *Backend) Record(vol contract.Volume) (backend.Record, error) {
	if vol.ISCSI == nil {
		return nil, fmt.Errorf("volume has no iscsi spec: %w", host.ErrInvalid)
	}
	r := RecordOf(vol.ISCSI)
	c := b.credentialOf(vol.ISCSI)
	r.CHAPUser, r.CHAPSecretMAC = c.User, c.SecretMAC
	r.RootAccess = vol.RootAccess
	return r, nil
}

// DecodeRecord implements the node's Backend.
func (b *Backend) DecodeRecord(e journal.Entry) (backend.Record, error) {
	return DecodeRecord(e)
}
