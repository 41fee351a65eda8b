package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
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
		// C:\var\lib\kubelet\plugins_registry\ is 36 bytes and -reg.sock 9,
		// so a driver name of 62 characters makes the longest socket path
		// (107 bytes), and one of 63, which the CSI spec allows, is a byte
		// too long.
		{name: "longest registration socket", goos: "windows", args: []string{"--kubelet-registration", "--driver-name=" + strings.Repeat("d", 62)},
			socket: `C:\var\lib\kubelet\plugins_registry\` + strings.Repeat("d", 62) + "-reg.sock",
			path:   `C:\var\lib\kubelet\plugins\` + strings.Repeat("d", 62) + `\csi.sock`},
		{name: "registration socket too long", goos: "windows", args: []string{"--kubelet-registration", "--driver-name=" + strings.Repeat("d", 63)},
			wantErr: "--kubelet-registration: the registration socket below --kubelet-dir, named after --driver-name: socket path C:\\var\\lib\\kubelet\\plugins_registry\\" + strings.Repeat("d", 63) + "-reg.sock is 108 bytes long; a unix socket's path can have at most 107"},
		{name: "registration path too long", goos: "windows", args: []string{"--kubelet-registration", `--kubelet-registration-path=C:\` + strings.Repeat("p", 120)},
			wantErr: "--kubelet-registration-path: kubelet dials it: socket path"},
		{name: "sim", goos: "linux", args: []string{"--host=sim", "--sim-dir=/s", "--kubelet-dir=/k", "--kubelet-registration", "--endpoint=unix:///run/csi.sock"},
			socket: "/k/plugins_registry/disk.csi.example.com-reg.sock", path: "/run/csi.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plugin.FromConfig(flags(t, tt.goos, append([]string{"--driver-name=disk.csi.example.com"}, tt.args...)...), tt.goos) // a later --driver-name wins
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

// TestClaimRegistrationRefusesLinks: the registration socket and its lock
// are confined to the kubelet directory like every path of the plugin: a
// link on the way to either that leads out of it is refused, naming the
// link, before anything is created through it.
func TestClaimRegistrationRefusesLinks(t *testing.T) {
	style := winpath.POSIX
	if runtime.GOOS == "windows" {
		style = winpath.Windows
	}
	for _, link := range []string{"plugins_registry", filepath.Join("plugins", "a.b")} {
		t.Run(filepath.ToSlash(link), func(t *testing.T) {
			k := filepath.Join(t.TempDir(), "kubelet")
			outside := t.TempDir()
			if err := os.MkdirAll(filepath.Dir(filepath.Join(k, link)), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(k, link)); err != nil {
				t.Fatal(err)
			}
			o := plugin.Options{DriverName: "a.b", KubeletDir: k, PathStyle: style, KubeletRegistration: true,
				RegistrationSocket: filepath.Join(k, "plugins_registry", "a.b-reg.sock")}
			claim, err := plugin.ClaimRegistration(context.Background(), o)
			if err == nil {
				claim.Release()
				t.Fatal("ClaimRegistration through a link out of the kubelet directory = nil error")
			}
			if !errors.Is(err, winpath.ErrLinkEscapes) || !strings.Contains(err.Error(), "--kubelet-registration") {
				t.Errorf("err = %v, want ErrLinkEscapes naming --kubelet-registration", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(k, link)) {
				t.Errorf("err = %v, want one naming the link %s", err, filepath.Join(k, link))
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("created %v outside the kubelet directory", entries)
			}
		})
	}
}
