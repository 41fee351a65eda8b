package winhost_test

import (
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// FormatParams is what wmiexec logs and the scripted executor reports for
// a method's parameters: a sensitive value never shows, whatever it holds.
func TestFormatParams(t *testing.T) {
	got := winhost.FormatParams([]winhost.Param{
		{Name: "RemotePath", Value: `\\srv\share`},
		{Name: "Credential", Value: `CORP\\al\:ice:p@ss"%v`, Sensitive: true},
		{Name: "RequirePrivacy", Value: true},
		{Name: "PartitionStyle", Value: uint16(2)},
		{Name: "Size", Value: "1073741824"},
	})
	want := `RemotePath="\\\\srv\\share", Credential=[sensitive], RequirePrivacy=true, PartitionStyle=0x2, Size="1073741824"`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := winhost.FormatParams(nil); got != "" {
		t.Fatalf("no parameters: %q", got)
	}
}
