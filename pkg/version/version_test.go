package version

import "testing"

func TestOrDev(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", devVersion},
		{"v1.2.3", "v1.2.3"},
		{"v1.2.3-4-gabcdef-dirty", "v1.2.3-4-gabcdef-dirty"},
	} {
		if got := orDev(tc.in); got != tc.want {
			t.Errorf("orDev(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if Version == "" {
		t.Error("Version is empty after init")
	}
}
