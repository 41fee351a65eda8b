package host

import (
	"net/netip"
	"strings"
	"testing"
)

// TestNamesErrorsAreReasons: the grammar's errors start with the quoted
// name, for the caller to say where it came from (pkg/contract prefixes
// the key, pkg/sim the setup file's line). The grammar itself is tested
// case by case through pkg/contract's parsers and fuzz targets.
func TestNamesErrorsAreReasons(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"portal zone", second(ParsePortal("[fe80::1%eth0]:3260")), `"[fe80::1%eth0]:3260" has an IPv6 zone`},
		{"portal port", second(ParsePortal("10.0.0.1:0")), `"10.0.0.1:0" has an invalid port`},
		{"iqn month", second(ValidateIQN("iqn.2024-13.io.example:t")), `"iqn.2024-13.io.example:t" has a month outside 01-12`},
		{"share drive", third(ParseSharePath(`C:\data`)), `"C:\\data" is a drive path`},
		{"share name", third(ParseSharePath(`\\srv\a*b`)), `"\\\\srv\\a*b": share name "a*b" contains "*"`},
		{"component", CheckPathComponent("a:b"), `"a:b" contains ":"`},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.HasPrefix(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to start with %s", tt.name, tt.err, tt.want)
		}
	}
	if p, err := ParsePortal("Target.Example:3261"); err != nil || p != (Portal{Address: "target.example", Port: 3261}) {
		t.Errorf("ParsePortal = %v, %v", p, err)
	}
	if s, sh, d, err := ParseSharePath("//srv/data/a/b/"); err != nil || s != "srv" || sh != "data" || d != `a\b` {
		t.Errorf("ParseSharePath = %q %q %q, %v", s, sh, d, err)
	}
}

func second[T any](_ T, err error) error { return err }

func third(_, _, _ string, err error) error { return err }

func TestPlainAddr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"10.0.0.1", "10.0.0.1"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"fe80::1%eth0", "fe80::1"},
		{"fd00::5:2", "fd00::5:2"},
	} {
		if got := PlainAddr(netip.MustParseAddr(c.in)).String(); got != c.want {
			t.Errorf("PlainAddr(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
