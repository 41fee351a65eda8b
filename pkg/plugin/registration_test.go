package plugin_test

import (
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/plugin"
)

// TestFromConfigKubeletRegistration: --kubelet-registration gives the
// registration socket below the kubelet directory and tells kubelet the
// path of --endpoint unless --kubelet-registration-path says otherwise;
// without it nothing is set.
func TestFromConfigKubeletRegistration(t *testing.T) {
	tests := []struct {
		name         string
		goos         string
		args         []string
		socket, path string
		wantErr      string
	}{
		{name: "off", goos: "windows", args: nil},
		{name: "windows defaults", goos: "windows", args: []string{"--kubelet-registration"},
			socket: `C:\var\lib\kubelet\plugins_registry\disk.csi.example.com-reg.sock`,
			path:   `C:\var\lib\kubelet\plugins\disk.csi.example.com\csi.sock`},
		{name: "the path of --endpoint", goos: "windows", args: []string{"--kubelet-registration", `--endpoint=unix://D:\csi\disk.sock`, `--kubelet-dir=D:\kubelet`},
			socket: `D:\kubelet\plugins_registry\disk.csi.example.com-reg.sock`, path: `D:\csi\disk.sock`},
		{name: "registration path given", goos: "windows", args: []string{"--kubelet-registration", `--kubelet-registration-path=C:\k\plugins\x\csi.sock`},
			socket: `C:\var\lib\kubelet\plugins_registry\disk.csi.example.com-reg.sock`, path: `C:\k\plugins\x\csi.sock`},
		{name: "relative registration path", goos: "windows", args: []string{"--kubelet-registration", `--kubelet-registration-path=plugins\x\csi.sock`},
			wantErr: "--kubelet-registration-path"},
		{name: "sim", goos: "linux", args: []string{"--host=sim", "--sim-dir=/s", "--kubelet-dir=/k", "--kubelet-registration", "--endpoint=unix:///run/csi.sock"},
			socket: "/k/plugins_registry/disk.csi.example.com-reg.sock", path: "/run/csi.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plugin.FromConfig(flags(t, tt.goos, append([]string{"--driver-name=disk.csi.example.com"}, tt.args...)...), tt.goos)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.KubeletRegistration != (tt.socket != "") || got.RegistrationSocket != tt.socket || got.KubeletRegistrationPath != tt.path {
				t.Errorf("registration options %t %q %q, want %t %q %q", got.KubeletRegistration, got.RegistrationSocket, got.KubeletRegistrationPath,
					tt.socket != "", tt.socket, tt.path)
			}
		})
	}
}
