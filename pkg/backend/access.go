package backend

import (
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
