// Package iscsi runs csi-sanity in library mode on iSCSI volumes: one
// simulated target with a LUN per volume (the minimal controller hands out
// LUN numbers as an array would), reached through two portals with
// multipath and session CHAP. Every identity and node spec runs except
// NodeGetStorageHealth (not offered); controller specs are skipped.
package iscsi

import (
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/sanitytest"
)

const iqn = "iqn.2024-01.io.wincsi.sim:array1"

func TestSanity(t *testing.T) {
	l := sanitytest.NewLibrary(t, contract.Options{RequirePrivacy: true})
	var luns []sim.LUNSpec
	for i := uint32(1); i <= 32; i++ {
		luns = append(luns, sim.LUNSpec{LUN: i, Size: 16 << 30})
	}
	if err := l.Sim.AddTarget(sim.TargetSpec{IQN: iqn,
		Portals: []host.Portal{{Address: "10.0.0.1", Port: 3260}, {Address: "10.0.0.2", Port: 3260}},
		LUNs:    luns,
		CHAP:    &host.CHAP{User: "node1", Secret: host.NewSecret("chap-secret-12")},
	}); err != nil {
		t.Fatal(err)
	}
	var alloc sanitytest.LUNs
	ctl := &sanitytest.Controller{Extra: func(id string) (map[string]string, error) {
		return map[string]string{"lun": sanitytest.Itoa(alloc.For(id))}, nil
	}}
	l.Run(t, ctl, map[string]string{
		"targetPortal": "10.0.0.1:3260", "portals": "10.0.0.2", "iqn": iqn, "sessionCHAPAuth": "true",
	}, map[string]string{"node.session.auth.username": "node1", "node.session.auth.password": "chap-secret-12"})

	// Every volume was unstaged: no session and no portal is left.
	st := l.Sim.Snapshot()
	if len(st.Sessions) != 0 || len(st.Portals) != 0 {
		t.Errorf("iSCSI state left after sanity: sessions %+v portals %+v", st.Sessions, st.Portals)
	}
}
