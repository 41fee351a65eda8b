package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]uint64{"1024": 1024, "512Mi": 512 << 20, "16Gi": 16 << 30, "1Ti": 1 << 40, "8388608Ti": 1 << 63} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5Gi", "16G", "x", "Gi", "8388609Ti", "18446744073709551616"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
}
