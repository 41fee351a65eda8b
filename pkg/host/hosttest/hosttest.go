package hosttest

import (
	"context"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Given names the state a case starts from. An environment sets it up
// (Env.Prepare) and describes it in a Fixture.
type Given string

// The states of the contract.
const (
	// Nothing: the host as it is. Fixture.Dir is an empty directory.
	Nothing Given = "nothing"
	// OfflineDisk: a writable disk, initialised (GPT, no data partition),
	// offline (by policy, as the SAN policy or Offline leaves it).
	OfflineDisk Given = "offline disk"
	// OfflineBlankDisk: a blank (RAW) disk, offline and read-only, as
	// re-attached disks come up (kubernetes-csi/csi-proxy#437).
	OfflineBlankDisk Given = "offline blank read-only disk"
	// BlankDisk: a blank (RAW) disk, online and writable.
	BlankDisk Given = "blank disk"
	// ReadOnlyBlankDisk: a blank (RAW) disk, online and read-only.
	ReadOnlyBlankDisk Given = "read-only blank disk"
	// OnlineDisk: an initialised (GPT) disk, online and writable.
	OnlineDisk Given = "online disk"
	// CriticalDisk: the boot or system disk.
	CriticalDisk Given = "critical disk"
	// RawVolume: an online, writable GPT disk with one data partition
	// whose volume has no file system. Fixture.Disk, Partition, Volume.
	RawVolume Given = "raw volume"
	// FormattedVolume: as RawVolume with an NTFS volume; Fixture.Dir is
	// an empty directory.
	FormattedVolume Given = "formatted volume"
	// ReadOnlyVolume: as FormattedVolume on a disk made read-only.
	ReadOnlyVolume Given = "read-only volume"
	// DirWithFile: Fixture.Dir holds one file, and Fixture.Volume is a
	// formatted volume (as FormattedVolume).
	DirWithFile Given = "directory with a file"

	// SMBShares: an SMB server that answers, with two shares
	// (Fixture.Share and Fixture.OtherShare) and two accounts
	// (Fixture.User may use Share and OtherShare, Fixture.OtherUser may
	// use OtherShare), and no global mapping of either.
	SMBShares Given = "two SMB shares of one server"
	// ISCSITarget: an iSCSI target (Fixture.Target) that answers on
	// Fixture.Portal, requires session CHAP (Fixture.CHAP) and has at
	// least one LUN; the portal is not registered and nothing is logged
	// in.
	ISCSITarget Given = "iSCSI target with CHAP"
	// BusyISCSITarget: as ISCSITarget, with the portal registered, one
	// session (Fixture.Session) made with CHAP, and a volume of the
	// target's first LUN mounted at Fixture.Dir.
	BusyISCSITarget Given = "iSCSI target with a mounted volume"
)

// Fixture is what an environment prepared for a case.
type Fixture struct {
	Host host.Host
	// Path joins elements onto Fixture.Dir in the host's path form.
	Path func(elem ...string) string
	// Dir is an existing empty directory (DirWithFile: holding a file),
	// under the directory the host manages.
	Dir string

	Disk      host.Disk
	Partition host.Partition
	Volume    host.Volume

	// MissingDisk is a disk number no disk has; MissingVolume a volume
	// GUID path no volume has; MissingShare a share root with no global
	// mapping; MissingPortal a portal that is not registered;
	// MissingTarget an IQN with no session.
	MissingDisk   uint32
	MissingVolume string
	MissingShare  string
	MissingPortal host.Portal
	MissingTarget string

	// SMBShares: two share roots (\\server\share) of one server, and
	// the accounts described there.
	Share, OtherShare string
	User, OtherUser   host.Credential
	// DropServer makes the server of Share stop answering, as a server
	// that goes down or a network that breaks (SMBShares). An environment
	// that cannot do it calls t.Skip with the reason.
	DropServer func(t *testing.T)

	// ISCSITarget, BusyISCSITarget.
	Portal  host.Portal
	Target  string
	CHAP    host.CHAP
	Session host.ISCSISession
	// Reboot restarts the host: every session ends, persistent logins are
	// restored (Register-IscsiSession: "once an iSCSI session is
	// registered, it automatically attempts to reconnect on restart"). An
	// environment that cannot do it calls t.Skip with the reason.
	Reboot func(t *testing.T)
}

// Env is an implementation under test.
type Env interface {
	// Prepare sets up the state case c starts from (c.Given) and returns
	// its fixture. An environment that cannot set the state up calls
	// t.Skip with the reason.
	Prepare(t *testing.T, c *Case) Fixture
}

// Case is one clause of the contract.
type Case struct {
	Name  string
	Given Given
	// Check runs the clause against the prepared host.
	Check func(t *testing.T, ctx context.Context, f Fixture)
}

// Run runs every case of the contract against env, each as a subtest
// named after the case.
func Run(t *testing.T, env Env) {
	for i := range Cases {
		c := &Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			f := env.Prepare(t, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c.Check(t, ctx, f)
		})
	}
}

// LoginAndMount is for an environment that sets BusyISCSITarget up
// through the host itself (the simulated host, Windows): it registers
// f.Portal, logs in to f.Target with f.CHAP, brings the first disk of the
// session online, lays one NTFS volume out on it and mounts the volume at
// f.Dir, and sets f.Session and f.Disk.
func LoginAndMount(t *testing.T, f *Fixture) {
	t.Helper()
	ctx := context.Background()
	h := f.Host
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("set up %s: %s: %v", BusyISCSITarget, what, err)
		}
	}
	must("AddPortal", h.ISCSI.AddPortal(ctx, f.Portal, "", nil))
	s, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: f.Target, Portal: f.Portal, Auth: host.AuthOneWay, CHAP: f.CHAP})
	must("Connect", err)
	f.Session = s
	disks := sessionDisks(t, ctx, *f, s)
	if len(disks) == 0 {
		t.Fatalf("set up %s: the session reaches no disk", BusyISCSITarget)
	}
	d, err := h.Disks.Get(ctx, disks[0])
	must("Get", err)
	if d.IsReadOnly {
		must("SetReadOnly", h.Disks.SetReadOnly(ctx, d, false))
	}
	if d.IsOffline {
		must("SetOnline", h.Disks.SetOnline(ctx, d, true))
	}
	if d.PartitionStyle == host.PartitionStyleRAW {
		must("Initialize", h.Disks.Initialize(ctx, d, host.PartitionStyleGPT))
		d.PartitionStyle = host.PartitionStyleGPT
	}
	p, err := h.Disks.CreatePartition(ctx, d)
	must("CreatePartition", err)
	var v host.Volume
	for attempt := 0; ; attempt++ {
		if v, err = h.Volumes.OfPartition(ctx, p); err == nil || attempt == 30 {
			break
		}
		time.Sleep(time.Second) // Windows surfaces the new volume shortly after
	}
	must("OfPartition", err)
	v, err = h.Volumes.Format(ctx, v, host.FormatOptions{FileSystem: "NTFS"})
	must("Format", err)
	must("Mount", h.Volumes.Mount(ctx, v.GUIDPath, f.Dir))
	f.Disk, err = h.Disks.Get(ctx, d.Number)
	must("Get", err)
}
