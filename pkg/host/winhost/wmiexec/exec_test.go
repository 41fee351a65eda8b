package wmiexec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host/winhost"
)

func TestOps(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"query", queryOp("SELECT Number, Location FROM MSFT_Disk WHERE Number = 3").String(), "wmi Query MSFT_Disk"},
		{"query lower case", queryOp("select * from msft_volume").String(), "wmi Query msft_volume"},
		{"query without FROM", queryOp("SELECT").String(), "wmi Query ?"},
		{"associators", associatorsOp("MSFT_PartitionToVolume", "MSFT_Volume").String(), "wmi Associators MSFT_PartitionToVolume MSFT_Volume"},
		{"associators any", associatorsOp("", "").String(), "wmi Associators * *"},
		{"call", callOp(winhost.Method{Class: "MSFT_Disk", Name: "Online"}).String(), "wmi MSFT_Disk.Online"},
		{"win32", win32Op("SetVolumeMountPoint").String(), "win32 SetVolumeMountPoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestParamsForLogHidesSecrets(t *testing.T) {
	const secret = "p@ssw0rd-do-not-print"
	got := paramsForLog([]winhost.Param{
		{Name: "RemotePath", Value: `\\srv\share`},
		{Name: "Credential", Value: "user:" + secret, Sensitive: true},
		{Name: "RequirePrivacy", Value: true},
		{Name: "Size", Value: "1073741824"},
	})
	if strings.Contains(got, secret) {
		t.Fatalf("log line %q contains the secret", got)
	}
	lazy := loggedParams{{Name: "Credential", Value: secret, Sensitive: true}}
	if s := fmt.Sprint(lazy); strings.Contains(s, secret) || !strings.Contains(s, "Credential=[sensitive]") {
		t.Errorf("fmt of loggedParams = %q", s)
	}
	if m, ok := lazy.MarshalLog().(string); !ok || strings.Contains(m, secret) {
		t.Errorf("MarshalLog of loggedParams = %#v", lazy.MarshalLog())
	}
	for _, want := range []string{`RemotePath="\\\\srv\\share"`, "Credential=[sensitive]", "RequirePrivacy=true", `Size="1073741824"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log line %q lacks %q", got, want)
		}
	}
}

func TestFindPattern(t *testing.T) {
	tests := map[string]string{
		`C:\dir`:                `C:\dir\*`,
		`C:\dir\`:               `C:\dir\*`,
		`\\?\C:\var\lib\x`:      `\\?\C:\var\lib\x\*`,
		`\\?\Volume{abc}\`:      `\\?\Volume{abc}\*`,
		`C:/forward/slash/`:     `C:/forward/slash/*`,
		`C:\dir with spaces\d2`: `C:\dir with spaces\d2\*`,
	}
	for in, want := range tests {
		if got := findPattern(in); got != want {
			t.Errorf("findPattern(%q) = %q, want %q", in, got, want)
		}
	}
}
