package wmiexec

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
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

func TestLoggedParamsHideSecrets(t *testing.T) {
	const secret = "p@ssw0rd-do-not-print"
	got := loggedParams{
		{Name: "RemotePath", Value: `\\srv\share`},
		{Name: "Credential", Value: "user:" + secret, Sensitive: true},
		{Name: "RequirePrivacy", Value: true},
		{Name: "Size", Value: "1073741824"},
	}.String()
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

func TestSplitReturnValue(t *testing.T) {
	tests := []struct {
		name    string
		out     map[string]any
		want    uint32
		wantErr string // a part of the error; "" for none
	}{
		{"zero", map[string]any{"ReturnValue": int64(0), "CreatedPartition": "p"}, 0, ""},
		{"code", map[string]any{"ReturnValue": int64(41002)}, 41002, ""},
		{"uint32 max", map[string]any{"ReturnValue": int64(math.MaxUint32)}, math.MaxUint32, ""},
		{"negative keeps its 32 bits", map[string]any{"ReturnValue": int64(-1)}, math.MaxUint32, ""},
		{"int32 min", map[string]any{"ReturnValue": int64(math.MinInt32)}, 1 << 31, ""},
		{"null", map[string]any{"ReturnValue": nil}, 0, ""},
		{"absent", map[string]any{"Other": int64(5)}, 0, ""},
		{"nil map", nil, 0, ""},
		{"above 32 bits", map[string]any{"ReturnValue": int64(math.MaxUint32 + 1)}, 0, "ReturnValue 4294967296 is not a 32-bit value"},
		{"below 32 bits", map[string]any{"ReturnValue": int64(math.MinInt32 - 1)}, 0, "ReturnValue -2147483649 is not a 32-bit value"},
		{"string", map[string]any{"ReturnValue": "0"}, 0, "ReturnValue has type string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			others := len(tt.out)
			if _, ok := tt.out["ReturnValue"]; ok {
				others--
			}
			got, err := splitReturnValue(tt.out)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			case got != tt.want:
				t.Fatalf("got %d, want %d", got, tt.want)
			}
			if _, ok := tt.out["ReturnValue"]; ok || len(tt.out) != others {
				t.Fatalf("output parameters left %v, want only the others", tt.out)
			}
		})
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
