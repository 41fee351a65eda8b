package backend

import (
	"encoding/json"
	"maps"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// AttrRootAccess is the Entry.Attrs key under which the records of disk and
// iSCSI volumes keep the volume's volumeRootAccess, in its canonical form
// (contract.RootAccess.String), so that diagnose can show the grant and
// tell when the root's ACL no longer has it. Absent when the volume asks
// for none (and in entries written before the parameter existed).
const AttrRootAccess = "rootAccess"

// PutRootAccess records a in attrs (nothing when a grants nothing).
func PutRootAccess(attrs map[string]string, a contract.RootAccess) {
	if s := a.String(); s != "" {
		attrs[AttrRootAccess] = s
	}
}

// RootAccessOf reads back the volumeRootAccess an entry records; none when
// it records none or what it holds does not parse.
func RootAccessOf(e journal.Entry) contract.RootAccess {
	s, ok := e.Attrs[AttrRootAccess]
	if !ok {
		return contract.RootAccess{}
	}
	a, err := contract.ParseRootAccess(contract.KeyVolumeRootAccess, s)
	if err != nil {
		return contract.RootAccess{}
	}
	return a
}

// AttrRootAccessSIDs is the Entry.Attrs key under which the records of disk
// and iSCSI volumes keep the SIDs their stage resolved the account names of
// volumeRootAccess to (LookupAccountName), as a JSON object from name (as
// the grant writes it) to SID. The stock-take reads the SIDs from it rather
// than asking a domain controller for every grant of every volume, and a
// restage falls back to it when the domain cannot be reached. Absent when
// no grant names an account (SIDs and the documented names need no
// lookup), and in entries written before it existed.
const AttrRootAccessSIDs = "rootAccessSIDs"

// PutRootAccessSIDs records sids (account name to SID) in attrs; nothing
// when there are none.
func PutRootAccessSIDs(attrs, sids map[string]string) {
	if len(sids) == 0 {
		return
	}
	b, err := json.Marshal(sids)
	if err != nil { // cannot happen: a map of strings
		panic("encode the SIDs of account names: " + err.Error())
	}
	attrs[AttrRootAccessSIDs] = string(b)
}

// RootAccessSIDs reads back the SIDs recorded in attrs (nil attrs: none); a
// value that does not parse records none.
func RootAccessSIDs(attrs map[string]string) map[string]string {
	s, ok := attrs[AttrRootAccessSIDs]
	if !ok {
		return nil
	}
	var sids map[string]string
	if json.Unmarshal([]byte(s), &sids) != nil {
		return nil
	}
	return maps.Clone(sids)
}
