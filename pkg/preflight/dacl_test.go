package preflight

import (
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestBroadWriters(t *testing.T) {
	allow := func(sid string, mask uint32, flags uint8) host.ACE {
		return host.ACE{Type: host.ACEAccessAllowed, Flags: flags, Mask: mask, SID: sid}
	}
	tests := []struct {
		name string
		dacl host.DACL
		want []string
	}{
		{"SYSTEM and Administrators only", host.DACL{Protected: true, Entries: []host.ACE{
			allow("S-1-5-18", 0x1f01ff, 3), allow("S-1-5-32-544", 0x1f01ff, 3)}}, nil},
		// What a directory made below C:\ inherits: Authenticated Users may
		// create folders here and modify what is below (inherit-only).
		{"inherited from C:\\", host.DACL{Entries: []host.ACE{
			allow("S-1-5-18", 0x1f01ff, 0x13), allow("S-1-5-11", 0xe0010000, 0x1b), allow("S-1-5-11", 0x4, 0x12),
			allow("S-1-5-32-545", 0x1200a9, 0x13)}}, []string{"Authenticated Users"}},
		{"modify to Everyone", host.DACL{Entries: []host.ACE{allow("S-1-1-0", 0x1301bf, 0)}}, []string{"Everyone"}},
		{"read and execute only", host.DACL{Entries: []host.ACE{allow("S-1-5-32-545", 0x1200a9, 3), allow("S-1-1-0", 0x120089, 3)}}, nil},
		{"deny is not a grant", host.DACL{Entries: []host.ACE{{Type: host.ACEAccessDenied, Mask: 0x1f01ff, SID: "S-1-1-0"}}}, nil},
		{"several, each once", host.DACL{Entries: []host.ACE{allow("S-1-5-32-545", 0x120116, 0), allow("S-1-5-4", 0x10000000, 0),
			allow("S-1-5-32-545", 0x40000, 0)}}, []string{"Users", "Interactive"}},
		{"a NULL DACL", host.DACL{Null: true}, []string{"Everyone (a NULL DACL)"}},
		{"an empty DACL grants nothing", host.DACL{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := broadWriters(tt.dacl); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("broadWriters() = %q, want %q", got, tt.want)
			}
		})
	}
}
