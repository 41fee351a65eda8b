// Package smb runs csi-sanity in library mode on SMB volumes: one share on
// a simulated file server, a subdirectory per volume created by the
// minimal controller (as SMB controllers do), node-stage secrets with the
// share's credentials. Every identity and node spec runs except
// NodeGetStorageHealth (not offered); controller specs are skipped.
package smb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/sanitytest"
)

func TestSanity(t *testing.T) {
	l := sanitytest.NewLibrary(t, contract.Options{RequirePrivacy: true})
	if err := l.Sim.AddShare(sim.ShareSpec{Server: "fileserver", Share: "data",
		Users: map[string]string{"alice": "s3cret-pass"}}); err != nil {
		t.Fatal(err)
	}
	shareDir := filepath.Join(l.Sim.Dir(), "smb", "fileserver", "data")
	ctl := &sanitytest.Controller{Extra: func(id string) (map[string]string, error) {
		// The controller makes the volume's directory on the share.
		if err := os.MkdirAll(filepath.Join(shareDir, id), 0o750); err != nil {
			return nil, err
		}
		return map[string]string{"subDir": id}, nil
	}}
	l.Run(t, ctl, map[string]string{"source": "//fileserver/data"},
		map[string]string{"username": "alice", "password": "s3cret-pass"})

	// Every volume was unstaged: the global mapping went with the last one.
	if st := l.Sim.Snapshot(); len(st.Mappings) != 0 {
		t.Errorf("SMB mappings left after sanity: %+v", st.Mappings)
	}
	if entries, err := os.ReadDir(shareDir); err != nil || len(entries) == 0 {
		t.Errorf("no volume directories on the share: %v", err)
	}
}
