//go:build linux

// Linux only: the simulated host runs only on Linux (its mount points are
// Linux symlinks and its paths POSIX paths; see doc.go).

package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// TestHostContract runs the host contract (pkg/host/hosttest) against the
// simulated host, twice, so that each answer it can give where Windows'
// own is uncertain (sim.WindowsAnswers) is met once: the contract accepts
// every one.
func TestHostContract(t *testing.T) {
	for _, w := range []sim.WindowsAnswers{
		{OfflineReadOnly: sim.OfflineReadOnlyAccept, SecondPersistentLogin: sim.SecondPersistentLoginReplace},
		{OfflineReadOnly: sim.OfflineReadOnlyRefuse, SecondPersistentLogin: sim.SecondPersistentLoginAdd},
	} {
		t.Run("offlineReadOnly="+w.OfflineReadOnly+",secondPersistentLogin="+w.SecondPersistentLogin, func(t *testing.T) {
			hosttest.Run(t, simEnv{windows: w})
		})
	}
}

type simEnv struct{ windows sim.WindowsAnswers }

func (env simEnv) Prepare(t *testing.T, c *hosttest.Case) hosttest.Fixture {
	s, err := sim.New(sim.Config{Dir: filepath.Join(t.TempDir(), "sim"), Windows: env.windows})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	dir := filepath.Join(t.TempDir(), "kubelet", "dir")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	f := hosttest.Fixture{
		Host:          s.Host(),
		Dir:           dir,
		Path:          func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) },
		MissingDisk:   99,
		MissingVolume: `\\?\Volume{00000000-0000-0000-0000-000000000099}\`,
		MissingShare:  `\\nosuchserver\share`,
		MissingPortal: host.Portal{Address: "192.0.2.1", Port: host.DefaultISCSIPort},
		MissingTarget: "iqn.2000-01.invalid:none",
		DropServer: func(t *testing.T) {
			if err := s.SetServerReachable("files", false); err != nil {
				t.Fatal(err)
			}
		},
		Reboot: func(t *testing.T) {
			if err := s.Reboot(); err != nil {
				t.Fatal(err)
			}
		},
	}
	ctx := context.Background()
	attach := func(spec sim.DiskSpec) host.Disk {
		spec.Adapter, spec.LUN = 1, 1 // not the boot disk's location
		n, err := s.AttachDisk(spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.Host.Disks.Get(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	withVolume := func(spec sim.DiskSpec) {
		f.Disk = attach(spec)
		parts, err := f.Host.Disks.Partitions(ctx, f.Disk)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if !p.IsReserved() {
				f.Partition = p
			}
		}
		if f.Volume, err = f.Host.Volumes.OfPartition(ctx, f.Partition); err != nil {
			t.Fatal(err)
		}
	}
	switch c.Given {
	case hosttest.Nothing:
	case hosttest.OfflineDisk:
		f.Disk = attach(sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT, Offline: true})
	case hosttest.OfflineBlankDisk:
		f.Disk = attach(sim.DiskSpec{Offline: true, ReadOnly: true})
	case hosttest.BlankDisk:
		f.Disk = attach(sim.DiskSpec{})
	case hosttest.ReadOnlyBlankDisk:
		f.Disk = attach(sim.DiskSpec{ReadOnly: true})
	case hosttest.OnlineDisk:
		f.Disk = attach(sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT})
	case hosttest.CriticalDisk:
		if f.Disk, err = f.Host.Disks.Get(ctx, 0); err != nil {
			t.Fatal(err)
		}
	case hosttest.RawVolume:
		withVolume(sim.DiskSpec{PartitionStyle: host.PartitionStyleGPT, Partitions: []sim.PartitionSpec{{}}})
	case hosttest.FormattedVolume:
		withVolume(sim.DiskSpec{FileSystem: "NTFS"})
	case hosttest.ReadOnlyVolume:
		withVolume(sim.DiskSpec{FileSystem: "NTFS", ReadOnly: true})
	case hosttest.DirWithFile:
		withVolume(sim.DiskSpec{FileSystem: "NTFS"})
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	case hosttest.SMBShares:
		for _, sh := range []sim.ShareSpec{
			{Server: "files", Share: "data", Users: map[string]string{"alice": "alice-password"}},
			{Server: "files", Share: "other", Users: map[string]string{"alice": "alice-password", "bob": "bob-password"}},
		} {
			if err := s.AddShare(sh); err != nil {
				t.Fatal(err)
			}
		}
		f.Share, f.OtherShare = `\\files\data`, `\\files\other`
		f.User = host.Credential{User: "alice", Password: host.NewSecret("alice-password")}
		f.OtherUser = host.Credential{User: "bob", Password: host.NewSecret("bob-password")}
	case hosttest.ISCSITarget, hosttest.BusyISCSITarget:
		f.Portal, f.Target = host.Portal{Address: "10.0.0.5", Port: host.DefaultISCSIPort}, "iqn.2026-01.io.example:contract"
		f.CHAP = host.CHAP{User: "node1", Secret: host.NewSecret("node1-secret12")}
		chap := f.CHAP
		if err := s.AddTarget(sim.TargetSpec{IQN: f.Target, Portals: []host.Portal{f.Portal}, LUNs: []sim.LUNSpec{{LUN: 0}}, CHAP: &chap}); err != nil {
			t.Fatal(err)
		}
		if c.Given == hosttest.BusyISCSITarget {
			hosttest.LoginAndMount(t, &f)
		}
	default:
		t.Fatalf("the simulated host cannot set up %q", c.Given)
	}
	return f
}
