package hosttest

import (
	"context"
	"testing"

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
