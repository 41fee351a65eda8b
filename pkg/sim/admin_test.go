//go:build linux

// Linux only: it tests the simulated host, which runs only on Linux.

package sim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

func openSim(t *testing.T, dir string) *sim.Sim {
	t.Helper()
	s, err := sim.New(sim.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The node's services start as a fresh Windows Server has them; the
// change --fix makes is durable.
func TestAdminServices(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sim")
	s := openSim(t, dir)
	sys := s.Admin().System
	svc, err := sys.Service(ctx, "MSiSCSI")
	if err != nil || svc.State != host.ServiceStopped || svc.StartType != host.StartManual {
		t.Fatalf("MSiSCSI = %+v, %v; want stopped, manual", svc, err)
	}
	if _, err := sys.Service(ctx, "nosuch"); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("Service(nosuch) = %v, want ErrNotFound", err)
	}
	if err := sys.SetServiceAutoStart(ctx, "MSiSCSI"); err != nil {
		t.Fatal(err)
	}
	if err := sys.StartService(ctx, "MSiSCSI"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetService("LanmanWorkstation", host.ServiceStopped, host.StartDisabled); err != nil {
		t.Fatal(err)
	}
	if err := sys.StartService(ctx, "LanmanWorkstation"); !errors.Is(err, host.ErrConflict) {
		t.Errorf("StartService(disabled) = %v, want ErrConflict", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSim(t, dir)
	defer s.Close()
	svc, err = s.Admin().System.Service(ctx, "msiscsi")
	if err != nil || svc.State != host.ServiceRunning || svc.StartType != host.StartAuto {
		t.Errorf("MSiSCSI after the fix and a reopen = %+v, %v; want running, automatic", svc, err)
	}
}

func TestAdminSecurityFromPermissions(t *testing.T) {
	ctx := context.Background()
	s := openSim(t, filepath.Join(t.TempDir(), "sim"))
	defer s.Close()
	dir := t.TempDir()
	for _, tt := range []struct {
		mode       os.FileMode
		everyone   bool
		usersRead  bool
		missingErr bool
	}{{0o700, false, false, false}, {0o755, false, true, false}, {0o777, true, true, false}} {
		if err := os.Chmod(dir, tt.mode); err != nil {
			t.Fatal(err)
		}
		d, err := s.Admin().System.DirectoryDACL(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		has := func(sid string) bool {
			return slices.ContainsFunc(d.Entries, func(e host.ACE) bool { return e.SID == sid })
		}
		if has("S-1-1-0") != tt.everyone || has("S-1-5-32-545") != tt.usersRead {
			t.Errorf("mode %o: %+v", tt.mode, d)
		}
	}
	if _, err := s.Admin().System.DirectoryDACL(ctx, filepath.Join(dir, "missing")); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("Security(missing) = %v, want ErrNotFound", err)
	}
}

// A VHDX: created as a file, attached as an online file-backed disk,
// grown (seen after a rescan), detached with its partitions kept, attached
// again with them, and removable only while detached.
func TestAdminVirtualDiskLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openSim(t, filepath.Join(t.TempDir(), "sim"))
	defer s.Close()
	a, h := s.Admin(), s.Host()
	vhdx := filepath.Join(t.TempDir(), "csiwn-st-1.vhdx")
	if err := a.VirtualDisks.Create(ctx, vhdx, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := a.VirtualDisks.Create(ctx, vhdx, 1<<30); !errors.Is(err, host.ErrAlreadyExists) {
		t.Errorf("Create(existing) = %v, want ErrAlreadyExists", err)
	}
	n, err := a.VirtualDisks.Attach(ctx, vhdx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Disks.Get(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if d.BusType != host.BusTypeFileBacked || d.IsOffline || d.IsReadOnly || d.Size != 1<<30 {
		t.Fatalf("attached VHDX = %+v", d)
	}
	if _, err := a.VirtualDisks.Attach(ctx, vhdx); !errors.Is(err, host.ErrInUse) {
		t.Errorf("second Attach = %v, want ErrInUse", err)
	}
	if err := h.Disks.Initialize(ctx, d, host.PartitionStyleGPT); err != nil {
		t.Fatal(err)
	}
	if err := a.VirtualDisks.Resize(ctx, vhdx, 2<<30); err != nil {
		t.Fatal(err)
	}
	if d, _ = h.Disks.Get(ctx, n); d.Size != 1<<30 {
		t.Errorf("size before a rescan = %d, want the old size", d.Size)
	}
	if err := h.Disks.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ = h.Disks.Get(ctx, n); d.Size != 2<<30 {
		t.Errorf("size after a rescan = %d, want 2 GiB", d.Size)
	}
	if err := a.FileData.RemoveFile(ctx, vhdx); !errors.Is(err, host.ErrInUse) {
		t.Errorf("RemoveFile(attached) = %v, want ErrInUse", err)
	}
	if err := a.VirtualDisks.Detach(ctx, vhdx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Disks.Get(ctx, n); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("disk after Detach = %v, want ErrNotFound", err)
	}
	if err := a.VirtualDisks.Detach(ctx, vhdx); err != nil {
		t.Errorf("Detach of a detached disk = %v, want nil (the sim's answer)", err)
	}
	if n, err = a.VirtualDisks.Attach(ctx, vhdx); err != nil {
		t.Fatal(err)
	}
	if d, _ = h.Disks.Get(ctx, n); d.PartitionStyle != host.PartitionStyleGPT || d.Size != 2<<30 {
		t.Errorf("re-attached VHDX = %+v, want its GPT and 2 GiB back", d)
	}
	if err := a.VirtualDisks.Detach(ctx, vhdx); err != nil {
		t.Fatal(err)
	}
	if err := a.FileData.RemoveFile(ctx, vhdx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vhdx); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VHDX file after RemoveFile: %v", err)
	}
	if _, err := a.VirtualDisks.Attach(ctx, vhdx); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("Attach(removed) = %v, want ErrNotFound", err)
	}
}

// A local share maps through the node's own SMB client with the local
// user's password, and no longer once the user is gone.
func TestAdminLocalShare(t *testing.T) {
	ctx := context.Background()
	s := openSim(t, filepath.Join(t.TempDir(), "sim"))
	defer s.Close()
	a, h := s.Admin(), s.Host()
	info, err := a.System.OS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pw := host.NewSecret("Aa1!secret")
	if err := a.LocalSMB.CreateUser(ctx, "csiwn-st-1", pw); err != nil {
		t.Fatal(err)
	}
	if err := a.LocalSMB.CreateUser(ctx, "csiwn-st-1", pw); !errors.Is(err, host.ErrAlreadyExists) {
		t.Errorf("CreateUser(existing) = %v", err)
	}
	if err := a.LocalSMB.CreateShare(ctx, "csiwn-st-1", dir, "csiwn-st-1"); err != nil {
		t.Fatal(err)
	}
	shares, err := a.LocalSMB.Shares(ctx)
	if err != nil || !reflect.DeepEqual(shares, []host.LocalShare{{Name: "csiwn-st-1", Path: dir}}) {
		t.Errorf("Shares() = %+v, %v", shares, err)
	}
	unc := `\\` + info.ComputerName + `\csiwn-st-1`
	if err := h.SMB.Map(ctx, unc, host.Credential{User: "csiwn-st-1", Password: host.NewSecret("wrong")}, false); !errors.Is(err, host.ErrLogonFailure) {
		t.Errorf("Map with a wrong password = %v, want ErrLogonFailure", err)
	}
	if err := h.SMB.Map(ctx, unc, host.Credential{User: "csiwn-st-1", Password: pw}, false); err != nil {
		t.Fatal(err)
	}
	if err := h.SMB.Unmap(ctx, unc); err != nil {
		t.Fatal(err)
	}
	if err := a.LocalSMB.DeleteUser(ctx, "csiwn-st-1"); err != nil {
		t.Fatal(err)
	}
	if err := h.SMB.Map(ctx, unc, host.Credential{User: "csiwn-st-1", Password: pw}, false); !errors.Is(err, host.ErrLogonFailure) {
		t.Errorf("Map after the user is gone = %v, want ErrLogonFailure", err)
	}
	if err := a.LocalSMB.DeleteShare(ctx, "csiwn-st-1"); err != nil {
		t.Fatal(err)
	}
	if err := a.LocalSMB.DeleteShare(ctx, "csiwn-st-1"); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("DeleteShare(missing) = %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the shared directory is gone after DeleteShare: %v", err)
	}
}

func TestAdminFileDataAndReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sim")
	s := openSim(t, dir)
	defer s.Close()
	fd := s.Admin().FileData
	f := filepath.Join(t.TempDir(), "data")
	if err := fd.WriteFile(ctx, f, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if b, err := fd.ReadFile(ctx, f); err != nil || string(b) != "hello" {
		t.Errorf("ReadFile() = %q, %v", b, err)
	}
	if err := fd.RemoveFile(ctx, f); err != nil {
		t.Fatal(err)
	}
	if _, err := fd.ReadFile(ctx, f); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("ReadFile(removed) = %v, want ErrNotFound", err)
	}

	// What preflight reads, a read-only sim answers (diagnose); the fix it
	// refuses.
	ro, err := sim.OpenReadOnly(dir, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Admin().System.Service(ctx, "MSiSCSI"); err != nil {
		t.Errorf("read-only Service() = %v", err)
	}
	if err := ro.Admin().System.SetServiceAutoStart(ctx, "MSiSCSI"); !errors.Is(err, sim.ErrReadOnly) {
		t.Errorf("read-only SetServiceAutoStart() = %v, want ErrReadOnly", err)
	}
}
