//go:build windows && integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

// TestHostContract runs the host contract (pkg/host/hosttest) against
// winhost over the real executor: the same cases the simulated host and
// the scripted executor answer in make test, here answered by Windows, on
// VHDX disks. A case that fails here shows where the documentation (and so
// the other two) is wrong.
func TestHostContract(t *testing.T) {
	requireHost(t)
	hosttest.Run(t, windowsEnv{})
}

type windowsEnv struct{}

// Disk states are set with the Storage cmdlets in test setup (never by
// the plugin): Initialize-Disk, New-Partition, Format-Volume and Set-Disk.
const (
	psInitialize = `Initialize-Disk -Number ([uint32]$Env:CSI_IT_DISK) -PartitionStyle GPT`
	psPartition  = psInitialize + `; New-Partition -DiskNumber ([uint32]$Env:CSI_IT_DISK) -UseMaximumSize -AssignDriveLetter:$false | Out-Null`
	psFormat     = psPartition + `; Get-Partition -DiskNumber ([uint32]$Env:CSI_IT_DISK) | Where-Object Type -eq Basic | Format-Volume -FileSystem NTFS -Confirm:$false | Out-Null`
	psReadOnly   = `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsReadOnly $true`
	psOffline    = `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsOffline $true`
	psOnline     = `$d = Get-Disk -Number ([uint32]$Env:CSI_IT_DISK); if ($d.IsOffline) { Set-Disk -Number $d.Number -IsOffline $false }; if ($d.IsReadOnly) { Set-Disk -Number $d.Number -IsReadOnly $false }`
)

func (windowsEnv) Prepare(t *testing.T, c *hosttest.Case) hosttest.Fixture {
	w := newWinNode(t)
	dir := filepath.Join(w.kubelet, "contract", "dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := hosttest.Fixture{
		Host:          w.host,
		Dir:           dir,
		Path:          func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) },
		MissingVolume: `\\?\Volume{` + randomHex(t, 4) + `-0000-4000-8000-` + randomHex(t, 6) + `}\`,
		MissingShare:  `\\nosuchserver.invalid\share`,
		MissingPortal: host.Portal{Address: "192.0.2.1", Port: host.DefaultISCSIPort}, // TEST-NET-1, never registered
		MissingTarget: "iqn.2000-01.invalid:none",
	}
	disks, err := w.host.Disks.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.Number >= f.MissingDisk {
			f.MissingDisk = d.Number + 100
		}
		if d.IsCritical() && f.Disk.Ref == "" && c.Given == hosttest.CriticalDisk {
			f.Disk = d
		}
	}
	if c.Given == hosttest.Nothing || c.Given == hosttest.CriticalDisk {
		if c.Given == hosttest.CriticalDisk && f.Disk.Ref == "" {
			t.Skip("no boot or system disk reported")
		}
		return f
	}
	v := newVHD(t, 1<<30)
	scripts := map[hosttest.Given][]string{
		hosttest.OfflineDisk:       {psOnline, psInitialize, psOffline},
		hosttest.OfflineBlankDisk:  {psOnline, psReadOnly, psOffline},
		hosttest.BlankDisk:         {psOnline},
		hosttest.ReadOnlyBlankDisk: {psOnline, psReadOnly},
		hosttest.OnlineDisk:        {psOnline, psInitialize},
		hosttest.RawVolume:         {psOnline, psPartition},
		hosttest.FormattedVolume:   {psOnline, psFormat},
		hosttest.ReadOnlyVolume:    {psOnline, psFormat, psReadOnly},
		hosttest.DirWithFile:       {psOnline, psFormat},
	}
	steps, ok := scripts[c.Given]
	if !ok {
		t.Fatalf("no setup for %q", c.Given)
	}
	for _, s := range steps {
		mustPowershell(t, s, v.env())
	}
	if f.Disk, err = w.host.Disks.Get(ctx, v.disk); err != nil {
		t.Fatal(err)
	}
	switch c.Given {
	case hosttest.RawVolume, hosttest.FormattedVolume, hosttest.ReadOnlyVolume, hosttest.DirWithFile:
		parts, err := w.host.Disks.Partitions(ctx, f.Disk)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if !p.IsReserved() {
				f.Partition = p
			}
		}
		if f.Volume, err = w.host.Volumes.OfPartition(ctx, f.Partition); err != nil {
			t.Fatal(fmt.Errorf("the volume of disk %d: %w", v.disk, err))
		}
	}
	if c.Given == hosttest.DirWithFile {
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}
