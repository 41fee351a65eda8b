package winhost

import (
	"context"
	"maps"
	"strings"
	"sync"
)

// Counting is an Executor that counts the calls it passes on: WMI round
// trips by "Query <Class>", "Associators <AssocClass>" and
// "<Class>.<Method>", Win32 calls by function name, each with its failures.
// It is safe for concurrent use; the metrics layer and the benchmarks read
// it through Snapshot.
type Counting struct {
	next Executor

	mu    sync.Mutex
	wmi   map[string]CallCount
	win32 map[string]CallCount
}

var _ Executor = (*Counting)(nil)

// CallCount is how often one kind of call was made and how often it failed
// (an executor error; a WMI method's non-zero return value is not counted
// as a failure here, the call itself succeeded).
type CallCount struct {
	Calls  uint64
	Errors uint64
}

// CallCounts is a copy of the counters at one moment.
type CallCounts struct {
	WMI   map[string]CallCount
	Win32 map[string]CallCount
}

// WMIRoundTrips is the total number of WMI calls.
func (c CallCounts) WMIRoundTrips() uint64 { return sum(c.WMI) }

// Win32Calls is the total number of Win32 calls.
func (c CallCounts) Win32Calls() uint64 { return sum(c.Win32) }

func sum(m map[string]CallCount) uint64 {
	var n uint64
	for _, c := range m {
		n += c.Calls
	}
	return n
}

// NewCounting wraps an executor.
func NewCounting(next Executor) *Counting {
	return &Counting{next: next, wmi: map[string]CallCount{}, win32: map[string]CallCount{}}
}

// Snapshot returns the counters so far.
func (c *Counting) Snapshot() CallCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CallCounts{WMI: maps.Clone(c.wmi), Win32: maps.Clone(c.win32)}
}

// Reset sets every counter back to zero.
func (c *Counting) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.wmi)
	clear(c.win32)
}

func (c *Counting) count(m map[string]CallCount, key string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := m[key]
	cc.Calls++
	if err != nil {
		cc.Errors++
	}
	m[key] = cc
}

// queryClass returns the class of a SELECT statement: the word after FROM.
func queryClass(wql string) string {
	f := strings.Fields(wql)
	for i := 0; i+1 < len(f); i++ {
		if strings.EqualFold(f[i], "FROM") {
			return f[i+1]
		}
	}
	return "?"
}

// Query implements Executor.
func (c *Counting) Query(ctx context.Context, namespace, wql string) ([]Instance, error) {
	r, err := c.next.Query(ctx, namespace, wql)
	c.count(c.wmi, "Query "+queryClass(wql), err)
	return r, err
}

// Associators implements Executor.
func (c *Counting) Associators(ctx context.Context, namespace, path, assocClass, resultClass string) ([]Instance, error) {
	r, err := c.next.Associators(ctx, namespace, path, assocClass, resultClass)
	c.count(c.wmi, "Associators "+assocClass, err)
	return r, err
}

// Call implements Executor.
func (c *Counting) Call(ctx context.Context, namespace string, m Method) (Result, error) {
	r, err := c.next.Call(ctx, namespace, m)
	c.count(c.wmi, m.Class+"."+m.Name, err)
	return r, err
}

// StorageDeviceIDDescriptor implements Executor.
func (c *Counting) StorageDeviceIDDescriptor(ctx context.Context, devicePath string) ([]byte, error) {
	b, err := c.next.StorageDeviceIDDescriptor(ctx, devicePath)
	c.count(c.win32, "StorageDeviceIDDescriptor", err)
	return b, err
}

// VolumeDiskExtents implements Executor.
func (c *Counting) VolumeDiskExtents(ctx context.Context, volumeName string) ([]byte, error) {
	b, err := c.next.VolumeDiskExtents(ctx, volumeName)
	c.count(c.win32, "VolumeDiskExtents", err)
	return b, err
}

// FlushVolume implements Executor.
func (c *Counting) FlushVolume(ctx context.Context, volumeName string) error {
	err := c.next.FlushVolume(ctx, volumeName)
	c.count(c.win32, "FlushVolume", err)
	return err
}

// SetVolumeMountPoint implements Executor.
func (c *Counting) SetVolumeMountPoint(ctx context.Context, mountPoint, volumeName string) error {
	err := c.next.SetVolumeMountPoint(ctx, mountPoint, volumeName)
	c.count(c.win32, "SetVolumeMountPoint", err)
	return err
}

// DeleteVolumeMountPoint implements Executor.
func (c *Counting) DeleteVolumeMountPoint(ctx context.Context, mountPoint string) error {
	err := c.next.DeleteVolumeMountPoint(ctx, mountPoint)
	c.count(c.win32, "DeleteVolumeMountPoint", err)
	return err
}

// GetVolumeNameForVolumeMountPoint implements Executor.
func (c *Counting) GetVolumeNameForVolumeMountPoint(ctx context.Context, mountPoint string) (string, error) {
	s, err := c.next.GetVolumeNameForVolumeMountPoint(ctx, mountPoint)
	c.count(c.win32, "GetVolumeNameForVolumeMountPoint", err)
	return s, err
}

// GetDiskFreeSpaceEx implements Executor.
func (c *Counting) GetDiskFreeSpaceEx(ctx context.Context, path string) (uint64, uint64, uint64, error) {
	a, t, f, err := c.next.GetDiskFreeSpaceEx(ctx, path)
	c.count(c.win32, "GetDiskFreeSpaceEx", err)
	return a, t, f, err
}

// GetFileAttributes implements Executor.
func (c *Counting) GetFileAttributes(ctx context.Context, path string) (uint32, error) {
	a, err := c.next.GetFileAttributes(ctx, path)
	c.count(c.win32, "GetFileAttributes", err)
	return a, err
}

// ReadReparsePoint implements Executor.
func (c *Counting) ReadReparsePoint(ctx context.Context, path string) ([]byte, error) {
	b, err := c.next.ReadReparsePoint(ctx, path)
	c.count(c.win32, "ReadReparsePoint", err)
	return b, err
}

// CreateDirectory implements Executor.
func (c *Counting) CreateDirectory(ctx context.Context, path string) error {
	err := c.next.CreateDirectory(ctx, path)
	c.count(c.win32, "CreateDirectory", err)
	return err
}

// RemoveDirectory implements Executor.
func (c *Counting) RemoveDirectory(ctx context.Context, path string) error {
	err := c.next.RemoveDirectory(ctx, path)
	c.count(c.win32, "RemoveDirectory", err)
	return err
}

// CreateSymbolicLink implements Executor.
func (c *Counting) CreateSymbolicLink(ctx context.Context, link, target string, flags uint32) error {
	err := c.next.CreateSymbolicLink(ctx, link, target, flags)
	c.count(c.win32, "CreateSymbolicLink", err)
	return err
}

// DirectoryHasEntries implements Executor.
func (c *Counting) DirectoryHasEntries(ctx context.Context, path string) (bool, error) {
	h, err := c.next.DirectoryHasEntries(ctx, path)
	c.count(c.win32, "DirectoryHasEntries", err)
	return h, err
}
