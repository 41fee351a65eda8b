package winhost_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/winhost"
	"github.com/wincsi/csi-windows-node/pkg/host/winhost/scripted"
)

func TestCountingKeys(t *testing.T) {
	e := scripted.New(t)
	c := winhost.NewCounting(e)
	h := winhost.New(c)
	ctx := context.Background()

	e.ExpectQuery(ns, wqlDisks, scripted.Reply{})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_StorageSetting", Name: "UpdateHostStorageCache"}, rv(0))
	e.ExpectAssociators(ns, partRef(3, 2), "MSFT_PartitionToVolume", "MSFT_Volume", scripted.Reply{Err: &winhost.COMError{HResult: 0x80041002}})
	e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
	e.ExpectWin32("GetDiskFreeSpaceEx", []any{staging + `\`}, scripted.Reply{})
	e.ExpectWin32("GetDiskFreeSpaceEx", []any{staging + `\`}, scripted.Reply{Err: w32("GetDiskFreeSpaceExW", winhost.ErrorNotReady)})

	if _, err := h.Disks.List(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Disks.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Volumes.OfPartition(ctx, host.Partition{Ref: partRef(3, 2), Number: 2}); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if _, err := h.Files.Stat(ctx, staging); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Volumes.FreeSpace(ctx, staging); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Volumes.FreeSpace(ctx, staging); !errors.Is(err, host.ErrNotReady) {
		t.Fatalf("err = %v", err)
	}

	got := c.Snapshot()
	want := winhost.CallCounts{
		WMI: map[string]winhost.CallCount{
			"Query MSFT_Disk": {Calls: 1},
			"MSFT_StorageSetting.UpdateHostStorageCache": {Calls: 1},
			"Associators MSFT_PartitionToVolume":         {Calls: 1, Errors: 1},
		},
		Win32: map[string]winhost.CallCount{
			"GetFileAttributes":  {Calls: 1},
			"GetDiskFreeSpaceEx": {Calls: 2, Errors: 1},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot:\n got  %+v\n want %+v", got, want)
	}
	if got.WMIRoundTrips() != uint64(e.WMIRoundTrips()) || got.WMIRoundTrips() != 3 || got.Win32Calls() != 3 {
		t.Fatalf("totals: %d WMI (scripted says %d), %d Win32", got.WMIRoundTrips(), e.WMIRoundTrips(), got.Win32Calls())
	}
	c.Reset()
	if s := c.Snapshot(); s.WMIRoundTrips() != 0 || s.Win32Calls() != 0 {
		t.Fatalf("after Reset: %+v", s)
	}
}

// nopExecutor answers every call at once with zero values; errs makes
// Query fail.
type nopExecutor struct{ errs bool }

func (n nopExecutor) Query(context.Context, string, string) ([]winhost.Instance, error) {
	if n.errs {
		return nil, errors.New("query failed")
	}
	return nil, nil
}
func (nopExecutor) Associators(context.Context, string, string, string, string) ([]winhost.Instance, error) {
	return nil, nil
}
func (nopExecutor) Call(context.Context, string, winhost.Method) (winhost.Result, error) {
	return winhost.Result{}, nil
}
func (nopExecutor) StorageDeviceIDDescriptor(context.Context, string) ([]byte, error) {
	return nil, nil
}
func (nopExecutor) VolumeDiskExtents(context.Context, string) ([]byte, error) { return nil, nil }
func (nopExecutor) FlushVolume(context.Context, string) error                 { return nil }
func (nopExecutor) SetVolumeMountPoint(context.Context, string, string) error { return nil }
func (nopExecutor) DeleteVolumeMountPoint(context.Context, string) error      { return nil }
func (nopExecutor) GetVolumeNameForVolumeMountPoint(context.Context, string) (string, error) {
	return "", nil
}
func (nopExecutor) GetDiskFreeSpaceEx(context.Context, string) (uint64, uint64, uint64, error) {
	return 0, 0, 0, nil
}
func (nopExecutor) GetFileAttributes(context.Context, string) (uint32, error)        { return 0, nil }
func (nopExecutor) ReadReparsePoint(context.Context, string) ([]byte, error)         { return nil, nil }
func (nopExecutor) CreateDirectory(context.Context, string) error                    { return nil }
func (nopExecutor) RemoveDirectory(context.Context, string) error                    { return nil }
func (nopExecutor) CreateSymbolicLink(context.Context, string, string, uint32) error { return nil }
func (nopExecutor) DirectoryHasEntries(context.Context, string) (bool, error)        { return false, nil }

// TestCountingConcurrent runs under -race: counters are shared by every
// goroutine of the plugin.
func TestCountingConcurrent(t *testing.T) {
	c := winhost.NewCounting(nopExecutor{errs: true})
	ctx := context.Background()
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				// Results are ignored on purpose: only the counters are
				// under test, and the nop executor answers zero values.
				_, _ = c.Query(ctx, ns, "SELECT Number FROM MSFT_Disk WHERE Number = 1")
				_, _ = c.Call(ctx, ns, winhost.Method{Class: "MSFT_Disk", Name: "Online"})
				_, _ = c.Associators(ctx, ns, "p", "MSFT_PartitionToVolume", "MSFT_Volume")
				_, _ = c.StorageDeviceIDDescriptor(ctx, "d")
				_, _ = c.VolumeDiskExtents(ctx, "v")
				_ = c.FlushVolume(ctx, "v")
				_ = c.SetVolumeMountPoint(ctx, "m", "v")
				_ = c.DeleteVolumeMountPoint(ctx, "m")
				_, _ = c.GetVolumeNameForVolumeMountPoint(ctx, "m")
				_, _, _, _ = c.GetDiskFreeSpaceEx(ctx, "p")
				_, _ = c.GetFileAttributes(ctx, "p")
				_, _ = c.ReadReparsePoint(ctx, "p")
				_ = c.CreateDirectory(ctx, "p")
				_ = c.RemoveDirectory(ctx, "p")
				_ = c.CreateSymbolicLink(ctx, "l", "t", 1)
				_, _ = c.DirectoryHasEntries(ctx, "p")
				c.Snapshot() // readers run alongside writers
			}
		}()
	}
	wg.Wait()
	s := c.Snapshot()
	const n = workers * each
	if s.WMIRoundTrips() != 3*n || s.Win32Calls() != 13*n {
		t.Fatalf("totals %d WMI, %d Win32; want %d, %d", s.WMIRoundTrips(), s.Win32Calls(), 3*n, 13*n)
	}
	if q := s.WMI["Query MSFT_Disk"]; q.Calls != n || q.Errors != n {
		t.Fatalf("Query MSFT_Disk = %+v", q)
	}
	if len(s.Win32) != 13 {
		t.Fatalf("Win32 keys %v", s.Win32)
	}
}
