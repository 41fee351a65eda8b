package preflight

import (
	"reflect"
	"testing"
)

// DACLs as ConvertSecurityDescriptorToStringSecurityDescriptor writes them.
func TestBroadWriters(t *testing.T) {
	tests := []struct {
		name, sddl string
		want       []string
		err        bool
	}{
		{"SYSTEM and Administrators only", "O:SYG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", nil, false},
		// What a directory made below C:\ inherits: Authenticated Users may
		// create folders (LC) here and modify what is below (inherit-only).
		{"inherited from C:\\", "O:BAD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIIOID;SDGXGWGR;;;AU)(A;CIID;LC;;;AU)(A;OICIID;0x1200a9;;;BU)",
			[]string{"Authenticated Users"}, false},
		{"modify as a mask, by SID", "D:(A;;0x1301bf;;;S-1-1-0)", []string{"Everyone"}, false},
		{"read and execute only", "D:(A;OICI;0x1200a9;;;BU)(A;OICI;FR;;;WD)", nil, false},
		{"deny is not a grant", "D:(D;OICI;FA;;;WD)", nil, false},
		{"several, each once", "D:(A;;FW;;;BU)(A;;GA;;;IU)(A;;WD;;;BU)", []string{"Users", "Interactive"}, false},
		{"no DACL part", "O:SY", nil, false},
		{"with a SACL after", "D:(A;;FA;;;AU)S:(AU;SAFA;FA;;;WD)", []string{"Authenticated Users"}, false},
		{"unknown right", "D:(A;;ZZ;;;WD)", nil, true},
		{"short ACE", "D:(A;;FA)", nil, true},
		{"unterminated", "D:(A;;FA;;;WD", nil, true},
		{"bad mask", "D:(A;;0xZZ;;;WD)", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := broadWriters(tt.sddl)
			if (err != nil) != tt.err {
				t.Fatalf("broadWriters(%q) error = %v, want error %v", tt.sddl, err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("broadWriters(%q) = %q, want %q", tt.sddl, got, tt.want)
			}
		})
	}
}
