package simnode

import (
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// Leftovers describes what the host state st still holds once every volume
// was unstaged: mount points, SMB mappings, iSCSI sessions, target portals
// and persistent logins, and the data disks OnlineDisks lists. It is empty
// when nothing is left.
func Leftovers(st sim.State) []string {
	var out []string
	out = appendLeft(out, "mount points", st.Mounts)
	out = appendLeft(out, "SMB mappings", st.Mappings)
	out = appendLeft(out, "iSCSI sessions", st.Sessions)
	out = appendLeft(out, "iSCSI portals", st.Portals)
	out = appendLeft(out, "persistent logins", st.PersistentLogins)
	return append(out, OnlineDisks(st)...)
}

// OnlineDisks describes the disks of st left online apart from the boot
// and system disks: unstage takes a data disk offline.
func OnlineDisks(st sim.State) []string {
	var out []string
	for _, d := range st.Disks {
		if !d.Boot && !d.System && !d.Offline {
			out = append(out, fmt.Sprintf("disk %d (serial %s) left online", d.Number, d.Serial))
		}
	}
	return out
}

func appendLeft[T any](out []string, what string, left []T) []string {
	if len(left) == 0 {
		return out
	}
	return append(out, fmt.Sprintf("%d %s left, e.g. %+v", len(left), what, left[0]))
}
