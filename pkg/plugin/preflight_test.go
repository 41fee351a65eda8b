package plugin_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// fakeSystem is a node whose facts a test sets: a Windows Server 2022
// whose MSiSCSI is stopped, every other check's answer healthy.
type fakeSystem struct{}

func (fakeSystem) OS(context.Context) (host.OSInfo, error) {
	return host.OSInfo{Caption: "Windows Server 2022", Build: 20348, ProductType: host.ProductServer}, nil
}
func (fakeSystem) Token(context.Context) (host.Token, error) {
	return host.Token{User: "S-1-5-18", System: true}, nil
}
func (fakeSystem) PathVolume(context.Context, string) (host.PathVolume, error) {
	return host.PathVolume{Root: `C:\`, DriveType: host.DriveFixed, FileSystem: "NTFS"}, nil
}
func (fakeSystem) DirectoryDACL(context.Context, string) (host.DACL, error) {
	return host.DACL{Protected: true, Entries: []host.ACE{{Type: host.ACEAccessAllowed, Mask: 0x1f01ff, SID: "S-1-5-18"}}}, nil
}
func (fakeSystem) Service(_ context.Context, name string) (host.Service, error) {
	if name == preflight.ServiceISCSI {
		return host.Service{Name: name, State: host.ServiceStopped, StartType: host.StartManual}, nil
	}
	return host.Service{Name: name, State: host.ServiceRunning, StartType: host.StartAuto}, nil
}
func (fakeSystem) SetServiceAutoStart(context.Context, string) error { return host.ErrNotImplemented }
func (fakeSystem) StartService(context.Context, string) error        { return host.ErrNotImplemented }
func (fakeSystem) OptionalFeature(context.Context, string) (host.FeatureState, error) {
	return host.FeatureDisabled, nil
}
func (fakeSystem) DSMSupportedDevices(context.Context) ([]string, error) {
	return nil, host.ErrNotFound
}
func (fakeSystem) NativeNVMeRequested(context.Context) (bool, error) { return false, nil }
func (fakeSystem) NewDiskPolicy(context.Context) (host.SANPolicy, error) {
	return host.SANPolicyOfflineShared, nil
}

// The plugin runs the preflight checks once at start, read-only, and
// exports each check's result on csi_windows_node_preflight. The host
// answers nothing here (every host call fails), so the checks that read it
// fail, and MSiSCSI is stopped on a node whose default backend is iSCSI.
func TestServeRunsPreflightChecks(t *testing.T) {
	dir := t.TempDir()
	o := plugin.Options{DriverName: "test.csi.wincsi.io", NodeID: "n", KubeletDir: dir, PathStyle: winpath.POSIX,
		StateDir: filepath.Join(dir, "state"), ShutdownGrace: time.Second}
	o.Contract.DefaultKind = "iscsi"
	p, err := plugin.New(o, plugin.Host{Host: hosttest.Unimplemented(), System: fakeSystem{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, plugin.Listeners{CSI: ln}) }()

	want := map[string]string{preflight.CheckWindows: "pass", preflight.CheckISCSIInitiator: "fail",
		preflight.CheckKubeletDir: "fail", preflight.CheckStorageProvider: "fail", preflight.CheckSANPolicy: "info"}
	var got map[string]string
	for {
		got = gaugeResults(t, p)
		if len(got) == len(preflight.Checks) {
			break
		}
		select {
		case err := <-served:
			t.Fatalf("Serve returned %v before the checks ran", err)
		case <-time.After(5 * time.Millisecond): // polls; go test -timeout ends a broken run
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	for check, result := range want {
		if got[check] != result {
			t.Errorf("%s = %q, want %q (all: %v)", check, got[check], result, got)
		}
	}
}

// gaugeResults reads csi_windows_node_preflight: the result at 1 of each
// check.
func gaugeResults(t *testing.T, p *plugin.Plugin) map[string]string {
	t.Helper()
	mfs, err := p.Metrics.GetRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != preflight.GaugeName {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() != 1 {
				continue
			}
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out[l["check"]] = l["result"]
		}
	}
	return out
}
