package disk

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/cloud"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

// fakeDisks is a host.Disks with a fixed disk table, device identifiers and
// SCSI addresses, counting the per-disk IOCTLs; the lookup's other calls
// fail (hosttest.Unimplemented).
type fakeDisks struct {
	host.Disks
	disks    []host.Disk
	ids      map[uint32][]host.Designator
	idsErr   map[uint32]error
	addrs    map[uint32]host.SCSIAddress
	addrErr  map[uint32]error
	listErr  error
	rescan   error
	get      func(n uint32) (host.Disk, error)
	idReads  map[uint32]int
	adrReads map[uint32]int
}

func (f *fakeDisks) List(context.Context) ([]host.Disk, error) { return f.disks, f.listErr }
func (f *fakeDisks) Rescan(context.Context) error              { return f.rescan }
func (f *fakeDisks) Get(_ context.Context, n uint32) (host.Disk, error) {
	if f.get != nil {
		return f.get(n)
	}
	for _, d := range f.disks {
		if d.Number == n {
			return d, nil
		}
	}
	return host.Disk{}, fmt.Errorf("disk %d: %w", n, host.ErrNotFound)
}

func (f *fakeDisks) DeviceIDs(_ context.Context, d host.Disk) ([]host.Designator, error) {
	f.idReads[d.Number]++
	if err := f.idsErr[d.Number]; err != nil {
		return nil, err
	}
	return f.ids[d.Number], nil
}

func (f *fakeDisks) SCSIAddress(_ context.Context, d host.Disk) (host.SCSIAddress, error) {
	f.adrReads[d.Number]++
	if err := f.addrErr[d.Number]; err != nil {
		return host.SCSIAddress{}, err
	}
	a, ok := f.addrs[d.Number]
	if !ok {
		return host.SCSIAddress{}, fmt.Errorf("disk %d: no address: %w", d.Number, host.ErrNotFound)
	}
	return a, nil
}

func newFake(disks ...host.Disk) *fakeDisks {
	return &fakeDisks{Disks: hosttest.Unimplemented().Disks, disks: disks,
		ids: map[uint32][]host.Designator{}, idsErr: map[uint32]error{},
		addrs: map[uint32]host.SCSIAddress{}, addrErr: map[uint32]error{},
		idReads: map[uint32]int{}, adrReads: map[uint32]int{}}
}

// once never waits: a lookup that finds nothing ends after one listing.
var once = backend.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}

func backendOn(f *fakeDisks, o Options) *Backend {
	h := hosttest.Unimplemented()
	h.Disks = f
	if o.Backoff == (backend.Backoff{}) {
		o.Backoff = once
	}
	return New(h, nil, o)
}

func u32(v uint32) *uint32 { return &v }

func bin(h string) []byte {
	b, err := hex.DecodeString(h)
	if err != nil {
		panic(err)
	}
	return b
}

// Disks in the shapes the platforms report them (test/system/platforms/testdata
// gives each value's source).
const (
	nvmePath    = `\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&0000%s#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`
	nvmeLoc     = "Integrated : Bus 12606208 : Device 0 : Function 0 : Adapter 0"
	accelerator = "MSFT NVMe Accelerator v1.0"
)

func osDisk() host.Disk {
	return host.Disk{Number: 0, IsBoot: true, IsSystem: true, SerialNumber: "BOOT", BusType: host.BusTypeSAS,
		Location: "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0", Path: `\\?\scsi#disk&ven_msft&prod_virtual_disk#5&1&0&000000#{x}`}
}

func scsiDisk(n, adapter, lun uint32) host.Disk {
	return host.Disk{Number: n, BusType: host.BusTypeSAS, FriendlyName: "Msft Virtual Disk",
		Location: fmt.Sprintf("Integrated : Adapter %d : Port 0 : Target 0 : LUN %d", adapter, lun),
		Path:     fmt.Sprintf(`\\?\scsi#disk&ven_msft&prod_virtual_disk#5&23db5f40&0&0000%02d#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`, lun)}
}

func nvmeDisk(n uint32, tail string) host.Disk {
	return host.Disk{Number: n, BusType: host.BusTypeNVMe, FriendlyName: accelerator, Location: nvmeLoc,
		Path: fmt.Sprintf(nvmePath, tail), AdapterSerialNumber: "SN: 000001"}
}

type findCase struct {
	name  string
	fake  func() *fakeDisks
	sel   contract.DiskSelector
	opts  Options
	want  uint32
	err   error    // the sentinel, nil for success
	in    []string // what the error must say
	notIn []string // what it must not
	// reads checks the per-disk IOCTLs made (nil: not checked).
	reads func(t *testing.T, f *fakeDisks)
}

func runFind(t *testing.T, cases []findCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fake()
			d, err := backendOn(f, tt.opts).Find(context.Background(), tt.sel)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("Find: %v", err)
			case tt.err == nil && d.Number != tt.want:
				t.Fatalf("Find = disk %d, want %d", d.Number, tt.want)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("Find = disk %d, %v; want %v", d.Number, err, tt.err)
			}
			for _, s := range tt.in {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v does not say %q", err, s)
				}
			}
			for _, s := range tt.notIn {
				if err != nil && strings.Contains(err.Error(), s) {
					t.Errorf("error %v says %q", err, s)
				}
			}
			if tt.reads != nil {
				tt.reads(t, f)
			}
		})
	}
}

func noReadsOf(n uint32) func(t *testing.T, f *fakeDisks) {
	return func(t *testing.T, f *fakeDisks) {
		if f.idReads[n]+f.adrReads[n] != 0 {
			t.Errorf("disk %d's IOCTL identifiers were read (%d, %d)", n, f.idReads[n], f.adrReads[n])
		}
	}
}

func TestFindFields(t *testing.T) {
	two := func() *fakeDisks {
		a := scsiDisk(1, 1, 1)
		a.SerialNumber, a.AdapterSerialNumber = "SER-A ", "ADP-1"
		b := scsiDisk(2, 1, 2)
		b.SerialNumber = "vol0a1b2c3d4e5f60718_00000001."
		c := scsiDisk(3, 2, 1)
		c.SerialNumber, c.Location = "Google  PersistentDisk pd-1", "Integrated : Adapter 2 : Port 3 : Target 4 : LUN 1"
		return newFake(osDisk(), a, b, c)
	}
	runFind(t, []findCase{
		{name: "number", fake: two, sel: contract.DiskSelector{Number: u32(2)}, want: 2},
		{name: "serial, padding and case aside", fake: two, sel: contract.DiskSelector{Serial: "ser-a"}, want: 1},
		{name: "serial without the trailing dot", fake: two, sel: contract.DiskSelector{Serial: "vol0a1b2c3d4e5f60718_00000001"}, want: 2},
		{name: "serial contains", fake: two, sel: contract.DiskSelector{Serial: "A1B2C3", SerialMatch: contract.MatchContains}, want: 2},
		{name: "serial's last field", fake: two, sel: contract.DiskSelector{Serial: "PD-1", SerialMatch: contract.MatchLastField}, want: 3},
		{name: "location", fake: two, sel: contract.DiskSelector{Location: " integrated : adapter 1 : port 0 : target 0 : lun 2 "}, want: 2},
		{name: "adapter serial", fake: two, sel: contract.DiskSelector{AdapterSerial: "adp-1"}, want: 1},
		{name: "LUN, target and bus", fake: two, sel: contract.DiskSelector{LUN: u32(1), Target: u32(4), Bus: u32(3)}, want: 3},
		{name: "LUN and another target", fake: two, sel: contract.DiskSelector{LUN: u32(1), Target: u32(0)}, want: 1},
		{name: "LUN and another bus", fake: two, sel: contract.DiskSelector{LUN: u32(1), Bus: u32(0)}, want: 1},
		{name: "the boot disk's LUN too", fake: two, sel: contract.DiskSelector{LUN: u32(1)}, err: host.ErrConflict, in: []string{"disks 1 [", ", 3 ["}},
		{name: "a serial and a LUN that disagree", fake: two, sel: contract.DiskSelector{Serial: "SER-A", LUN: u32(2)}, err: host.ErrNotFound,
			in: []string{`no disk matches disk selector serial="SER-A",lun=2`}},
		{name: "the boot disk by number", fake: two, sel: contract.DiskSelector{Number: u32(0)}, err: host.ErrConflict,
			in: []string{"disk 0 [serial \"BOOT\"", "the boot or system disk", "refusing to use it"}},
		{name: "nothing", fake: two, sel: contract.DiskSelector{Serial: "nope"}, err: host.ErrNotFound},
		{name: "an empty selector", fake: two, sel: contract.DiskSelector{}, err: host.ErrInvalid},
	})
}

// Blank serials name nothing, whatever the match mode: Hyper-V VHDs report
// "" (kubernetes-csi/csi-proxy PR #116), GCE disks twenty spaces
// (csi-proxy@eeba470 integrationtests/disk_v1_test.go).
func TestFindBlankSerials(t *testing.T) {
	blank := func() *fakeDisks {
		a, b := scsiDisk(1, 1, 1), scsiDisk(2, 1, 2)
		b.SerialNumber = "                    "
		c := scsiDisk(3, 1, 3)
		c.SerialNumber = "disk 3."
		return newFake(osDisk(), a, b, c)
	}
	for _, mode := range []contract.MatchMode{contract.MatchExact, contract.MatchContains, contract.MatchLastField} {
		runFind(t, []findCase{
			{name: fmt.Sprintf("a blank value, mode %d", mode), fake: blank, sel: contract.DiskSelector{Serial: " . ", SerialMatch: mode}, err: host.ErrNotFound},
		})
	}
	runFind(t, []findCase{
		{name: "contains a space", fake: blank, sel: contract.DiskSelector{Serial: "k 3", SerialMatch: contract.MatchContains}, want: 3},
		{name: "last field", fake: blank, sel: contract.DiskSelector{Serial: "3", SerialMatch: contract.MatchLastField}, want: 3},
		{name: "the adapter serial is blank everywhere", fake: blank, sel: contract.DiskSelector{AdapterSerial: "."}, err: host.ErrNotFound},
	})
}

func TestFindPage83(t *testing.T) {
	naa := host.Designator{Type: host.DesignatorFCPHName, CodeSet: host.CodeSetBinary, Value: bin("60022480f48d294f40f18727df9a6349")}
	eui := host.Designator{Type: host.DesignatorEUI64, CodeSet: host.CodeSetBinary, Value: bin("000c2968595e0d8d")}
	table := func() *fakeDisks {
		f := newFake(osDisk(), scsiDisk(1, 1, 1), scsiDisk(2, 1, 2), scsiDisk(3, 1, 3), scsiDisk(4, 1, 4))
		f.ids[0] = []host.Designator{naa}
		// Disk 1 does not answer the query, and is listed before the
		// target.
		f.idsErr[1] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
		f.ids[2] = []host.Designator{{Type: host.DesignatorVendorID, CodeSet: host.CodeSetASCII, Value: []byte("Google  persistent-disk-7")}}
		f.ids[3] = []host.Designator{naa}
		f.ids[4] = []host.Designator{eui}
		return f
	}
	runFind(t, []findCase{
		{name: "after a disk whose page 83 cannot be read", fake: table, sel: contract.DiskSelector{Page83: "60022480f48d294f40f18727df9a6349"}, want: 3,
			reads: func(t *testing.T, f *fakeDisks) {
				noReadsOf(0)(t, f)
				if f.idReads[1] != 1 || f.idReads[3] != 1 {
					t.Errorf("reads %v", f.idReads)
				}
			}},
		// A 16-digit (EUI-64) page 83 value: the contract keeps it as hex.
		{name: "an EUI-64 page 83 value", fake: table, sel: contract.DiskSelector{Page83: "000c2968595e0d8d"}, want: 4},
		{name: "ASCII, last field", fake: table, sel: contract.DiskSelector{Page83: "persistent-disk-7", Page83Match: contract.MatchLastField}, want: 2},
		{name: "ASCII, exact", fake: table, sel: contract.DiskSelector{Page83: "Google  persistent-disk-7"}, want: 2},
		{name: "ASCII, contains", fake: table, sel: contract.DiskSelector{Page83: "disk-7", Page83Match: contract.MatchContains}, want: 2},
		{name: "the boot disk's identifier is never read", fake: table, sel: contract.DiskSelector{Page83: "60022480f48d294f40f18727df9a6349", Number: u32(0)},
			err: host.ErrNotFound, reads: noReadsOf(0)},
		// Found by review: a clone that does not answer the query, with
		// the identifier as UniqueId, beside the disk that answers.
		{name: "unanswered, with the identifier as UniqueId", fake: with(table, func(f *fakeDisks) {
			f.disks[1].UniqueID, f.disks[1].UniqueIDFormat = "60022480F48D294F40F18727DF9A6349", host.UniqueIDFCPHName
		}), sel: contract.DiskSelector{Page83: "60022480f48d294f40f18727df9a6349"}, err: host.ErrConflict,
			in: []string{"disks 3 [", ", 1 [", `UniqueId "60022480F48D294F40F18727DF9A6349" (FCPH Name) is the identifier looked for`}},
		{name: "unanswered, with another UniqueId", fake: with(table, func(f *fakeDisks) {
			f.disks[1].UniqueID, f.disks[1].UniqueIDFormat = "60022480F48D294F40F18727DF9A6340", host.UniqueIDFCPHName
		}), sel: contract.DiskSelector{Page83: "60022480f48d294f40f18727df9a6349"}, want: 3},
		{name: "unanswered, with the identifier's last field as UniqueId", fake: with(table, func(f *fakeDisks) {
			f.disks[1].UniqueID, f.disks[1].UniqueIDFormat = "Google  persistent-disk-7", host.UniqueIDVendorID
		}), sel: contract.DiskSelector{Page83: "persistent-disk-7", Page83Match: contract.MatchLastField}, err: host.ErrConflict,
			in: []string{"disks 2 [", ", 1 [", "(Vendor Id)"}},
		{name: "unanswered, with a blank UniqueId", fake: with(table, func(f *fakeDisks) { f.disks[1].UniqueID = " " }),
			sel: contract.DiskSelector{Page83: " ", Page83Match: contract.MatchContains}, err: host.ErrNotFound},
		// A failure other than "not answered" may pass: the disk may be
		// the one.
		{name: "unreadable this time", fake: with(table, func(f *fakeDisks) {
			f.idsErr[1] = fmt.Errorf("access denied: %w", host.ErrAccessDenied)
		}), sel: contract.DiskSelector{Page83: "60022480f48d294f40f18727df9a6349"}, err: host.ErrConflict,
			in: []string{"disks 3 [", ", 1 [", "its device-ID page cannot be read: access denied"}},
		{name: "only cheaper matches are read", fake: table, sel: contract.DiskSelector{Page83: "000c2968595e0d8d", Number: u32(4)}, want: 4,
			reads: func(t *testing.T, f *fakeDisks) {
				if f.idReads[1]+f.idReads[2]+f.idReads[3] != 0 || f.idReads[4] != 1 {
					t.Errorf("reads %v", f.idReads)
				}
			}},
	})
}

func TestFindNVMeIdentifiers(t *testing.T) {
	nguid := "e6d8664250d847bd916eaf1b0a1b2c3d"
	table := func() *fakeDisks {
		boot := nvmeDisk(0, "00")
		boot.IsBoot, boot.IsSystem, boot.SerialNumber = true, true, "E6D8_6642_50D8_47BD_916E_AF1B_0A1B_2C3D."
		bySerial := nvmeDisk(1, "01")
		bySerial.SerialNumber = "DE0A_1747_BE29_4DA6_B31F_4AF8_1122_3344."
		byUID := nvmeDisk(2, "02")
		byUID.UniqueID, byUID.UniqueIDFormat = "FFD2F0E829474C8585EC076655667788", host.UniqueIDEUI64
		notUID := nvmeDisk(3, "03")
		notUID.UniqueID, notUID.UniqueIDFormat = "0011223344556677", host.UniqueIDFCPHName
		byID := nvmeDisk(4, "04")
		euiSerial := nvmeDisk(5, "05")
		euiSerial.SerialNumber = "0000_0000_0000_0005."
		f := newFake(boot, bySerial, byUID, notUID, byID, euiSerial)
		f.ids[4] = []host.Designator{
			{Type: host.DesignatorEUI64, CodeSet: host.CodeSetBinary, Value: bin("a1a2a3a4a5a6a7a8")},
			{Type: host.DesignatorEUI64, CodeSet: host.CodeSetBinary, Value: bin("b1b2b3b4b5b6b7b8b9babbbcbdbebfc0")},
			{Type: host.DesignatorEUI64, CodeSet: host.CodeSetBinary, Association: host.AssociationPort, Value: bin("c1c2c3c4c5c6c7c8")},
		}
		return f
	}
	runFind(t, []findCase{
		{name: "NGUID in the serial", fake: table, sel: contract.DiskSelector{NGUID: "de0a1747be294da6b31f4af811223344"}, want: 1},
		{name: "NGUID as UniqueId of format EUI64", fake: table, sel: contract.DiskSelector{NGUID: "ffd2f0e829474c8585ec076655667788"}, want: 2},
		{name: "UniqueId of another format is not an EUI", fake: table, sel: contract.DiskSelector{EUI: "0011223344556677"}, err: host.ErrNotFound},
		{name: "EUI-64 designator", fake: table, sel: contract.DiskSelector{EUI: "a1a2a3a4a5a6a7a8"}, want: 4},
		{name: "NGUID designator", fake: table, sel: contract.DiskSelector{NGUID: "b1b2b3b4b5b6b7b8b9babbbcbdbebfc0"}, want: 4},
		{name: "an NGUID is no EUI-64", fake: table, sel: contract.DiskSelector{EUI: "b1b2b3b4b5b6b7b8"}, err: host.ErrNotFound},
		{name: "a port's EUI-64 is not the disk's", fake: table, sel: contract.DiskSelector{EUI: "c1c2c3c4c5c6c7c8"}, err: host.ErrNotFound},
		{name: "EUI-64 in the serial", fake: table, sel: contract.DiskSelector{EUI: "0000000000000005"}, want: 5},
		{name: "the boot disk's NGUID", fake: table, sel: contract.DiskSelector{NGUID: nguid}, err: host.ErrConflict, in: []string{"disk 0 ["}},
		{name: "unanswered, with the NGUID as UniqueId of another format", fake: with(table, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.disks[3].UniqueID, f.disks[3].UniqueIDFormat = "DE0A1747-BE29-4DA6-B31F-4AF811223344", host.UniqueIDVendorSpecific
		}), sel: contract.DiskSelector{NGUID: "de0a1747be294da6b31f4af811223344"}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 3 [", "(Vendor Specific) is the identifier looked for"}},
		{name: "unanswered, with another UniqueId", fake: with(table, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
		}), sel: contract.DiskSelector{NGUID: "de0a1747be294da6b31f4af811223344"}, want: 1},
		{name: "unanswered, with a UniqueId that is no hex", fake: with(table, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.disks[3].UniqueID = "SCSI\\DISK&VEN_NVME\\5&1"
		}), sel: contract.DiskSelector{EUI: "a1a2a3a4a5a6a7a8"}, want: 4},
		{name: "an EUI-64 unreadable this time", fake: with(table, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("busy: %w", host.ErrBusy)
		}), sel: contract.DiskSelector{EUI: "a1a2a3a4a5a6a7a8"}, err: host.ErrConflict,
			in: []string{"disks 4 [", ", 3 [", "its device-ID page cannot be read: busy"}},
	})
}

func TestFindNamespace(t *testing.T) {
	base := func() *fakeDisks {
		boot := nvmeDisk(0, "00")
		boot.IsBoot = true
		f := newFake(boot, nvmeDisk(1, "01"), nvmeDisk(2, "03"), scsiDisk(3, 1, 3))
		f.addrs[1] = host.SCSIAddress{Port: 1, LUN: 1}
		f.addrs[2] = host.SCSIAddress{Port: 1, LUN: 3}
		return f
	}
	with := func(edit func(f *fakeDisks)) func() *fakeDisks {
		return func() *fakeDisks { f := base(); edit(f); return f }
	}
	runFind(t, []findCase{
		{name: "namespace 4 is storport LUN 3", fake: base, sel: contract.DiskSelector{NVMeNSID: u32(4)}, want: 2,
			reads: func(t *testing.T, f *fakeDisks) {
				noReadsOf(0)(t, f)
				noReadsOf(3)(t, f) // a SCSI disk is no namespace
			}},
		{name: "namespace 2", fake: base, sel: contract.DiskSelector{NVMeNSID: u32(2)}, want: 1},
		{name: "namespace 3 is not attached", fake: base, sel: contract.DiskSelector{NVMeNSID: u32(3)}, err: host.ErrNotFound},
		// The boot namespace is never read, and its path alone does not
		// tell it: nothing else is namespace 1.
		{name: "namespace 1 is the boot disk's", fake: base, sel: contract.DiskSelector{NVMeNSID: u32(1)}, err: host.ErrNotFound, reads: noReadsOf(0)},
		// The device path alone, read as the storport LUN (NSID - 1) and
		// as the NSID (azuredisk-csi-driver PR #3632): where the two
		// readings disagree, the disk may be the namespace and is refused;
		// where both rule it out, it is not the namespace.
		{name: "the path where the IOCTL does not answer: storport's reading", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
		}), sel: contract.DiskSelector{NVMeNSID: u32(4)}, err: host.ErrConflict,
			in: []string{"disk 2 [", "its device path alone does not tell namespace 4", "the path reads as LUN 3", "PR #3632"}},
		{name: "the path where the IOCTL does not answer: PR #3632's reading", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
		}), sel: contract.DiskSelector{NVMeNSID: u32(3)}, err: host.ErrConflict,
			in: []string{"disk 2 [", "does not tell namespace 3", "the path reads as LUN 3"}},
		{name: "the path where the IOCTL does not answer: neither reading", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
		}), sel: contract.DiskSelector{NVMeNSID: u32(6)}, err: host.ErrNotFound},
		{name: "the path where the IOCTL does not answer, beside a namespace the IOCTL names", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2) // path LUN 3: namespace 4, or 3
			f.addrs[1] = host.SCSIAddress{Port: 1, LUN: 2}
			f.disks[1].Path = fmt.Sprintf(nvmePath, "02")
		}), sel: contract.DiskSelector{NVMeNSID: u32(3)}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 2 [", "does not tell namespace 3"}},
		{name: "the IOCTL and the path disagree", fake: with(func(f *fakeDisks) {
			f.addrs[2] = host.SCSIAddress{LUN: 5}
		}), sel: contract.DiskSelector{NVMeNSID: u32(6)}, err: host.ErrConflict,
			in: []string{"disk 2 [", "IOCTL_SCSI_GET_ADDRESS reports LUN 5, its device path reads as LUN 3"}},
		{name: "a path read two ways", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
			f.disks[2].Path = fmt.Sprintf(nvmePath, "10")
		}), sel: contract.DiskSelector{NVMeNSID: u32(11)}, err: host.ErrConflict,
			in: []string{"disk 2 [", "its device path reads as LUN 16 (hex) or 10 (decimal)", "cannot be told apart"}},
		{name: "the hex reading of such a path", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
			f.disks[2].Path = fmt.Sprintf(nvmePath, "10")
		}), sel: contract.DiskSelector{NVMeNSID: u32(17)}, err: host.ErrConflict, in: []string{"disk 2 ["}},
		{name: "a path only hex can read", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
			f.disks[2].Path = fmt.Sprintf(nvmePath, "0a")
		}), sel: contract.DiskSelector{NVMeNSID: u32(11)}, err: host.ErrConflict,
			in: []string{"disk 2 [", "the path reads as LUN 10,"}},
		{name: "a path read two ways, by PR #3632's reading", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
			f.disks[2].Path = fmt.Sprintf(nvmePath, "10")
		}), sel: contract.DiskSelector{NVMeNSID: u32(10)}, err: host.ErrConflict,
			in: []string{"disk 2 [", "the path reads as LUN 16 (hex) or 10 (decimal)"}},
		{name: "the IOCTL settles a path read two ways", fake: with(func(f *fakeDisks) {
			f.disks[2].Path = fmt.Sprintf(nvmePath, "10")
			f.addrs[2] = host.SCSIAddress{LUN: 10}
		}), sel: contract.DiskSelector{NVMeNSID: u32(11)}, want: 2},
		{name: "no namespace ID at all", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
			f.addrErr[2] = fmt.Errorf("no address: %w", host.ErrNotFound)
			f.disks[2].Path = `\\?\nvme#disk&ven_msft#1&2#{x}`
		}), sel: contract.DiskSelector{NVMeNSID: u32(2)}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 2 [", "no namespace ID"}},
		// The IOCTL failing this time, rather than not answering: what it
		// would say is unknown, whatever the path says.
		{name: "the IOCTL fails this time", fake: with(func(f *fakeDisks) {
			delete(f.addrs, 2)
			f.addrErr[2] = fmt.Errorf("device gone: %w", host.ErrNotReady)
		}), sel: contract.DiskSelector{NVMeNSID: u32(2)}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 2 [", "IOCTL_SCSI_GET_ADDRESS cannot be read: device gone"}},
		{name: "scoped to a controller", fake: with(func(f *fakeDisks) {
			other := nvmeDisk(4, "03")
			other.AdapterSerialNumber = "SN: 000002"
			f.disks = append(f.disks, other)
			f.addrs[4] = host.SCSIAddress{Port: 2, LUN: 3}
		}), sel: contract.DiskSelector{NVMeNSID: u32(4), AdapterSerial: "SN: 000002"}, want: 4},
		// Found by review: the adapter serial alone took the data
		// namespace of the OS disk's controller.
		{name: "an adapter serial alone, the OS namespace beside", fake: func() *fakeDisks {
			boot := nvmeDisk(0, "00")
			boot.IsBoot = true
			return newFake(boot, nvmeDisk(1, "01"))
		}, sel: contract.DiskSelector{AdapterSerial: "SN: 000001"}, err: host.ErrConflict,
			in: []string{"reaches disks 0 [", ", 1 [", "diskNVMeNSID"}},
		{name: "an adapter serial alone, two data namespaces", fake: base, sel: contract.DiskSelector{AdapterSerial: "sn: 000001"},
			err: host.ErrConflict, in: []string{"disks 0 [", ", 1 [", ", 2 ["}, notIn: []string{", 3 ["}},
		{name: "an adapter serial alone, one namespace", fake: with(func(f *fakeDisks) {
			f.disks[2].AdapterSerialNumber = "SN: 000002"
		}), sel: contract.DiskSelector{AdapterSerial: "SN: 000002"}, want: 2},
		{name: "two controllers, one namespace ID", fake: with(func(f *fakeDisks) {
			other := nvmeDisk(4, "03")
			other.AdapterSerialNumber = "SN: 000002"
			f.disks = append(f.disks, other)
			f.addrs[4] = host.SCSIAddress{Port: 2, LUN: 3}
		}), sel: contract.DiskSelector{NVMeNSID: u32(4)}, err: host.ErrConflict, in: []string{"disks 2 [", ", 4 ["}},
	})
}

// with returns a table made by table and then edited.
func with(table func() *fakeDisks, edit func(f *fakeDisks)) func() *fakeDisks {
	return func() *fakeDisks { f := table(); edit(f); return f }
}

func TestFindAzure(t *testing.T) {
	scsi := func() *fakeDisks {
		temp := scsiDisk(1, 0, 1) // the temporary disk, on the OS disk's adapter
		return newFake(osDisk(), temp, scsiDisk(3, 1, 1), scsiDisk(4, 3, 2))
	}
	nvme := func() *fakeDisks {
		boot := nvmeDisk(0, "00")
		boot.IsBoot, boot.IsSystem = true, true
		premium := nvmeDisk(2, "03")
		premium.FriendlyName = "Virtual_Disk NVMe Premium"
		temp := nvmeDisk(3, "00")
		temp.FriendlyName, temp.AdapterSerialNumber = "Microsoft NVMe Direct Disk v2", "68e8d42a7ed4e5f90001"
		scsiTemp := scsiDisk(4, 0, 1)
		other := nvmeDisk(5, "02")
		other.FriendlyName = "Some NVMe Disk"
		f := newFake(boot, nvmeDisk(1, "01"), premium, temp, scsiTemp, other)
		f.addrs[1], f.addrs[2], f.addrs[3], f.addrs[5] = host.SCSIAddress{Port: 1, LUN: 1}, host.SCSIAddress{Port: 1, LUN: 3}, host.SCSIAddress{Port: 2}, host.SCSIAddress{Port: 1, LUN: 2}
		return f
	}
	runFind(t, []findCase{
		{name: "SCSI: never the temporary disk at the same LUN", fake: scsi, sel: contract.DiskSelector{AzureLUN: u32(1)}, want: 3},
		{name: "SCSI: any data adapter", fake: scsi, sel: contract.DiskSelector{AzureLUN: u32(2)}, want: 4},
		{name: "SCSI: not attached", fake: scsi, sel: contract.DiskSelector{AzureLUN: u32(0)}, err: host.ErrNotFound,
			in: []string{"an adapter other than the OS disk's adapter [0]"}},
		{name: "SCSI: two data adapters at one LUN", fake: func() *fakeDisks {
			f := scsi()
			f.disks = append(f.disks, scsiDisk(5, 2, 1))
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict, in: []string{"disks 3 [", ", 5 ["}},
		// A Gen1 VM: the OS disk on IDE, no LUN in its location
		// (ansible-collections/community.windows#622); its temporary
		// disk is on a channel of its own, reported where no source shows.
		{name: "SCSI: an IDE OS disk (Generation 1)", fake: func() *fakeDisks {
			f := scsi()
			f.disks[0].Location = "PCI Slot 1 : Adapter 0 : Channel 1 : Device 0"
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict,
			in: []string{"disk 0 [", "its location names no LUN", "Generation 1", "diskLUN"}},
		{name: "SCSI: an ATA OS disk (Generation 1)", fake: func() *fakeDisks {
			f := scsi()
			f.disks[0].BusType = host.BusTypeATA
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict, in: []string{"disk 0 [", "bus type ATA", "Generation 1"}},
		{name: "SCSI: an ATAPI OS disk", fake: func() *fakeDisks {
			f := scsi()
			f.disks[0].BusType = host.BusTypeATAPI
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict, in: []string{"bus type ATAPI"}},
		{name: "SCSI: an OS disk on another bus", fake: func() *fakeDisks {
			f := scsi()
			f.disks[0].BusType = host.BusTypeISCSI
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict, in: []string{"disk 0 [", "bus type iSCSI, not the SAS or SCSI"}},
		{name: "SCSI: an OS disk on SCSI", fake: func() *fakeDisks {
			f := scsi()
			f.disks[0].BusType = host.BusTypeSCSI
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, want: 3},
		// What an Azure data disk is: Msft Virtual Disk, SAS or SCSI,
		// target 0, an adapter that is not the OS disk's
		// (Azure/azure-vm-utils@4113392 udev/80-azure-disk.rules).
		{name: "SCSI: a data disk on SCSI", fake: with(scsi, func(f *fakeDisks) { f.disks[2].BusType = host.BusTypeSCSI }),
			sel: contract.DiskSelector{AzureLUN: u32(1)}, want: 3},
		{name: "SCSI: vendor and product without the friendly name", fake: with(scsi, func(f *fakeDisks) {
			f.disks[2].FriendlyName, f.disks[2].Manufacturer, f.disks[2].Model = "", "MSFT ", " virtual disk"
		}), sel: contract.DiskSelector{AzureLUN: u32(1)}, want: 3},
		{name: "SCSI: another vendor", fake: with(scsi, func(f *fakeDisks) {
			f.disks[2].FriendlyName, f.disks[2].Manufacturer, f.disks[2].Model = "LIO-ORG disk", "Msft", "disk"
		}),
			sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrNotFound},
		{name: "SCSI: another product", fake: with(scsi, func(f *fakeDisks) {
			f.disks[2].FriendlyName, f.disks[2].Manufacturer, f.disks[2].Model = "", "LIO-ORG", "Virtual Disk"
		}),
			sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrNotFound},
		// Reproduced by review: an iSCSI LUN 0 of the node, staged and
		// formatted as the Azure data disk at LUN 0.
		{name: "SCSI: never an iSCSI LUN", fake: with(scsi, func(f *fakeDisks) {
			lun := scsiDisk(5, 3, 0)
			lun.BusType = host.BusTypeISCSI
			f.disks = append(f.disks, lun)
		}), sel: contract.DiskSelector{AzureLUN: u32(0)}, err: host.ErrNotFound},
		{name: "SCSI: never a file-backed or USB disk", fake: with(scsi, func(f *fakeDisks) {
			vhd, usb := scsiDisk(5, 3, 0), scsiDisk(6, 4, 0)
			vhd.BusType, usb.BusType = host.BusTypeFileBacked, host.BusTypeUSB
			f.disks = append(f.disks, vhd, usb)
		}), sel: contract.DiskSelector{AzureLUN: u32(0)}, err: host.ErrNotFound},
		// Azure Disk Encryption's key volume (kubernetes-sigs/azuredisk-csi-driver#2034).
		{name: "SCSI: not at target 0", fake: with(scsi, func(f *fakeDisks) {
			bek := scsiDisk(5, 2, 0)
			bek.Location = "Integrated : Adapter 2 : Port 0 : Target 1 : LUN 0"
			f.disks = append(f.disks, bek)
		}), sel: contract.DiskSelector{AzureLUN: u32(0)}, err: host.ErrNotFound, in: []string{"at target 0 and that LUN"}},
		{name: "SCSI: a location without a target", fake: with(scsi, func(f *fakeDisks) {
			f.disks[2].Location = "Integrated : Adapter 1 : Port 0 : LUN 1"
		}), sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrNotFound},
		{name: "SCSI: a boot disk without an adapter", fake: func() *fakeDisks {
			f := scsi()
			f.disks[0].Location = ""
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict, in: []string{"cannot tell which adapter holds the OS disk"}},
		{name: "SCSI: no boot disk", fake: func() *fakeDisks {
			f := scsi()
			f.disks = f.disks[1:]
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict, in: []string{"no disk is the boot or system disk"}},
		{name: "SCSI: a system disk's adapter counts too", fake: func() *fakeDisks {
			f := scsi()
			sys := scsiDisk(6, 1, 5)
			sys.IsSystem = true
			f.disks = append(f.disks, sys)
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrNotFound},

		{name: "NVMe: LUN 2 is storport LUN 3", fake: nvme, sel: contract.DiskSelector{AzureLUN: u32(2)}, want: 2,
			reads: func(t *testing.T, f *fakeDisks) {
				for _, n := range []uint32{0, 3, 4, 5} {
					noReadsOf(n)(t, f)
				}
			}},
		{name: "NVMe: LUN 0 is storport LUN 1", fake: nvme, sel: contract.DiskSelector{AzureLUN: u32(0)}, want: 1},
		{name: "NVMe: never the temporary NVMe disk or another model", fake: nvme, sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrNotFound,
			in: []string{"an MSFT NVMe Accelerator namespace at storport LUN = LUN + 1"}},
		{name: "NVMe: the largest LUN", fake: func() *fakeDisks {
			f := nvme()
			f.addrs[2] = host.SCSIAddress{LUN: 255}
			f.disks[2].Path = fmt.Sprintf(nvmePath, "ff")
			return f
		}, sel: contract.DiskSelector{AzureLUN: u32(254)}, want: 2},
		{name: "NVMe: beyond a storport LUN", fake: nvme, sel: contract.DiskSelector{AzureLUN: u32(255)}, err: host.ErrNotFound},
		// Found by review: a namespace of a second accelerator controller
		// was staged as LUN 1 (Azure/azure-vm-utils@4113392
		// doc/disk-identification.md: "future implementations may leverage
		// multiple controllers").
		{name: "NVMe: a second accelerator controller", fake: with(nvme, func(f *fakeDisks) {
			second := nvmeDisk(6, "02")
			second.FriendlyName, second.AdapterSerialNumber = "Virtual_Disk NVMe Premium", "SN: 000002"
			f.disks = append(f.disks, second)
			f.addrs[6] = host.SCSIAddress{Port: 3, LUN: 2}
		}), sel: contract.DiskSelector{AzureLUN: u32(1)}, err: host.ErrConflict,
			in: []string{"on 2 controllers", `adapter serial "SN: 000001"`, "disks 0 [", `adapter serial "SN: 000002"`, "disk 6 [", "refusing to guess"}},
		{name: "NVMe: a second controller at another location", fake: with(nvme, func(f *fakeDisks) {
			f.disks[2].Location = "Integrated : Bus 12606209 : Device 0 : Function 0 : Adapter 0"
		}), sel: contract.DiskSelector{AzureLUN: u32(2)}, err: host.ErrConflict, in: []string{"on 2 controllers", "disk 2 ["}},
		{name: "NVMe: a namespace whose controller cannot be told", fake: with(nvme, func(f *fakeDisks) {
			f.disks[1].AdapterSerialNumber, f.disks[1].Location = " ", ""
		}), sel: contract.DiskSelector{AzureLUN: u32(2)}, err: host.ErrConflict, in: []string{"namespace 1 [", "controller cannot be told"}},
		{name: "NVMe: an OS disk that is no accelerator namespace", fake: with(nvme, func(f *fakeDisks) {
			f.disks[0].FriendlyName = "Some NVMe Disk"
		}), sel: contract.DiskSelector{AzureLUN: u32(2)}, err: host.ErrConflict, in: []string{"disk 0 [", "no Azure accelerator namespace"}},
		{name: "NVMe: the OS disk's controller, the other fields aside", fake: with(nvme, func(f *fakeDisks) {
			f.disks[2].AdapterSerialNumber = " SN: 000001 "
		}), sel: contract.DiskSelector{AzureLUN: u32(2)}, want: 2},
	})
}

func TestFindAWS(t *testing.T) {
	table := func() *fakeDisks {
		boot := host.Disk{Number: 0, IsBoot: true, BusType: host.BusTypeNVMe, SerialNumber: "vol02190fee5da4d75e3_00000001."}
		store := host.Disk{Number: 1, BusType: host.BusTypeNVMe, FriendlyName: "NVMe Amazon EC2 NVMe", SerialNumber: "AWS24BBF51AF55097008_00000001."}
		// Windows Server 2016: the ID as AdapterSerialNumber; 2012 R2:
		// as SerialNumber (awsdocs/amazon-ec2-user-guide-windows@1020606
		// doc_source/nvme-ebs-volumes.md).
		ws2016 := host.Disk{Number: 2, BusType: host.BusTypeNVMe, AdapterSerialNumber: "vol0651a78c608e09c6a"}
		ws2012 := host.Disk{Number: 3, BusType: host.BusTypeNVMe, SerialNumber: "vol01257d42be427a58b_00000001."}
		both := host.Disk{Number: 4, BusType: host.BusTypeNVMe, SerialNumber: "VOL0D577FDABD6001831_00000001. ", AdapterSerialNumber: " vol0d577fdabd6001831"}
		long := host.Disk{Number: 5, BusType: host.BusTypeNVMe, SerialNumber: "vol1a2b3c4d5e6f7a8b9_00000001."}
		return newFake(boot, store, ws2016, ws2012, both, long)
	}
	runFind(t, []findCase{
		{name: "AdapterSerialNumber", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-0651a78c608e09c6a"}, want: 2},
		{name: "SerialNumber", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-01257d42be427a58b"}, want: 3},
		{name: "both, padding and case aside", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-0d577fdabd6001831"}, want: 4},
		{name: "an 8-digit ID, exactly", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-1a2b3c4d"}, err: host.ErrNotFound},
		{name: "the two fields disagree", fake: func() *fakeDisks {
			f := table()
			f.disks[4].AdapterSerialNumber = "vol0fffffffffffffff1"
			return f
		}, sel: contract.DiskSelector{EBSVolumeID: "vol-0d577fdabd6001831"}, err: host.ErrConflict,
			in: []string{"SerialNumber names vol0d577fdabd6001831, AdapterSerialNumber vol0fffffffffffffff1"}},
		{name: "the boot volume", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-02190fee5da4d75e3"}, err: host.ErrConflict,
			in: []string{"boot or system"}},
		// AWS's PV driver on Xen instances: a SCSI disk.
		{name: "a SCSI disk", fake: with(table, func(f *fakeDisks) { f.disks[3].BusType = host.BusTypeSCSI }),
			sel: contract.DiskSelector{EBSVolumeID: "vol-01257d42be427a58b"}, want: 3},
		{name: "never an iSCSI, file-backed or USB disk", fake: with(table, func(f *fakeDisks) {
			f.disks[3].BusType = host.BusTypeISCSI
			f.disks[2].BusType = host.BusTypeFileBacked
			f.disks[4].BusType = host.BusTypeUSB
		}), sel: contract.DiskSelector{EBSVolumeID: "vol-01257d42be427a58b"}, err: host.ErrNotFound},
		{name: "never a file-backed disk", fake: with(table, func(f *fakeDisks) { f.disks[2].BusType = host.BusTypeFileBacked }),
			sel: contract.DiskSelector{EBSVolumeID: "vol-0651a78c608e09c6a"}, err: host.ErrNotFound},
		{name: "an NVMe path on another bus type", fake: with(table, func(f *fakeDisks) {
			f.disks[2].BusType, f.disks[2].Path = host.BusTypeSAS, `\\?\scsi#disk&ven_nvme&prod_amazon_elastic_b#5&1&0&000002#{x}`
		}), sel: contract.DiskSelector{EBSVolumeID: "vol-0651a78c608e09c6a"}, want: 2},
		{name: "not vol- and 8 hex digits", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-0651a78"}, err: host.ErrInvalid,
			in: []string{`"vol-0651a78" is not an EBS volume ID`}},
		{name: "upper case", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-0651A78C608E09C6A"}, err: host.ErrInvalid},
		{name: "not hex", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol-0651a78g"}, err: host.ErrInvalid},
		{name: "no vol- prefix", fake: table, sel: contract.DiskSelector{EBSVolumeID: "vol0651a78c608e09c6a"}, err: host.ErrInvalid},
	})
}

func TestFindGCE(t *testing.T) {
	ns := uint64(0x10CC9636B6E3CE3B)
	list := func(entries ...cloud.GCEDisk) func(context.Context) ([]cloud.GCEDisk, error) {
		return func(context.Context) ([]cloud.GCEDisk, error) { return entries, nil }
	}
	pd := cloud.GCEDisk{DeviceName: "pvc-4a5b6c7d", Interface: "NVME", Type: "PERSISTENT", NVMeNamespaceID: &ns}
	nvmeTable := func() *fakeDisks {
		boot := host.Disk{Number: 0, IsBoot: true, BusType: host.BusTypeNVMe, FriendlyName: "nvme_card-pd",
			SerialNumber: "10CC_9636_B6E3_CE3B_0000_0000_0000_0009."}
		vol := host.Disk{Number: 1, BusType: host.BusTypeNVMe, FriendlyName: "nvme_card-pd", SerialNumber: "10CC_9636_B6E3_CE3B_0000_0000_0000_0000."}
		other := host.Disk{Number: 2, BusType: host.BusTypeNVMe, FriendlyName: "nvme_card-pd", SerialNumber: "10CC_9636_B6E3_CE3C_0000_0000_0000_0000."}
		byID := host.Disk{Number: 3, BusType: host.BusTypeNVMe, FriendlyName: "nvme_card-pd"}
		ssd := host.Disk{Number: 4, BusType: host.BusTypeNVMe, FriendlyName: "nvme_card", SerialNumber: "nvme_card_00000001."}
		f := newFake(boot, vol, other, byID, ssd)
		f.ids[3] = []host.Designator{{Type: host.DesignatorEUI64, CodeSet: host.CodeSetBinary, Value: bin("10cc9636b6e3ce3d0000000000000000")}}
		return f
	}
	scsiTable := func() *fakeDisks {
		f := newFake(osDisk(), scsiDisk(1, 0, 1), scsiDisk(2, 0, 2))
		f.ids[1] = []host.Designator{{Type: host.DesignatorVendorID, CodeSet: host.CodeSetASCII, Value: []byte("Google  pvc-9f8e7d6c")}}
		f.ids[2] = []host.Designator{{Type: host.DesignatorVendorID, CodeSet: host.CodeSetASCII, Value: []byte("Google  other")}}
		return f
	}
	runFind(t, []findCase{
		{name: "NVMe: the namespace the metadata server names", fake: nvmeTable, opts: Options{GCEDisks: list(pd)},
			sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, want: 1},
		{name: "NVMe: by a 16-byte designator", fake: nvmeTable,
			opts: Options{GCEDisks: list(cloud.GCEDisk{DeviceName: "d", Interface: "nvme", NVMeNamespaceID: func() *uint64 { v := uint64(0x10CC9636B6E3CE3D); return &v }()})},
			sel:  contract.DiskSelector{GCEDeviceName: "d"}, want: 3},
		{name: "NVMe: unanswered, with the identifier in UniqueId", fake: with(nvmeTable, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.disks[3].UniqueID = "10CC9636B6E3CE3B0000000000000001"
		}), opts: Options{GCEDisks: list(pd)}, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 3"}},
		// Found by review: a namespace whose NGUID cannot be read was
		// taken for no match. Windows writes the NGUID or the EUI-64 into
		// the serial (which one when a namespace has both is not
		// documented), and the UniqueId may be either too: such a
		// namespace may be the device, and the lookup refuses naming it.
		{name: "NVMe: unanswered, an EUI-64 UniqueId", fake: with(nvmeTable, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.disks[3].UniqueID = "10CC9636B6E3CE3B"
		}), opts: Options{GCEDisks: list(pd)}, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 3 (its NGUID cannot be read", `UniqueId "10CC9636B6E3CE3B" is none`}},
		{name: "NVMe: unanswered, an EUI-64 serial", fake: with(nvmeTable, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.disks[3].SerialNumber = "10CC_9636_B6E3_CE3B."
		}), opts: Options{GCEDisks: list(pd)}, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, err: host.ErrConflict,
			in: []string{"disks 1 [", `3 [serial "10CC_9636_B6E3_CE3B."] (its NGUID cannot be read`}},
		{name: "NVMe: unanswered, nothing else", fake: with(nvmeTable, func(f *fakeDisks) {
			f.idsErr[3] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
		}), opts: Options{GCEDisks: list(pd)}, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, err: host.ErrConflict,
			in: []string{"disks 1 [", ", 3 (its NGUID cannot be read"}},
		{name: "NVMe: answered with an EUI-64 only", fake: with(nvmeTable, func(f *fakeDisks) {
			f.ids[3] = []host.Designator{{Type: host.DesignatorEUI64, CodeSet: host.CodeSetBinary, Value: bin("10cc9636b6e3ce3b")}}
		}), opts: Options{GCEDisks: list(pd)}, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, want: 1},
		{name: "NVMe: unanswered, the NGUID-form serial decides", fake: with(nvmeTable, func(f *fakeDisks) {
			f.idsErr[1] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.idsErr[2] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
		}), opts: Options{GCEDisks: list(pd)}, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}, want: 1},
		{name: "NVMe: a device the metadata server does not list", fake: nvmeTable, opts: Options{GCEDisks: list(pd)},
			sel: contract.DiskSelector{GCEDeviceName: "pvc-x"}, err: host.ErrNotFound, in: []string{`lists no disk with device name "pvc-x"`}},
		{name: "NVMe: listed without a namespace identifier", fake: nvmeTable, opts: Options{GCEDisks: list(cloud.GCEDisk{DeviceName: "d", Interface: "NVME"})},
			sel: contract.DiskSelector{GCEDeviceName: "d"}, err: host.ErrConflict, in: []string{"without an nvmeNamespaceIdentifier"}},
		{name: "NVMe: not attached", fake: nvmeTable,
			opts: Options{GCEDisks: list(cloud.GCEDisk{DeviceName: "d", Interface: "NVME", NVMeNamespaceID: func() *uint64 { v := uint64(7); return &v }()})},
			sel:  contract.DiskSelector{GCEDeviceName: "d"}, err: host.ErrNotFound, in: []string{"NGUID starts with 0000000000000007"}},
		{name: "NVMe: the metadata server fails", fake: nvmeTable,
			opts: Options{GCEDisks: func(context.Context) ([]cloud.GCEDisk, error) { return nil, errors.New("connection refused") }},
			sel:  contract.DiskSelector{GCEDeviceName: "d"}, err: host.ErrUnreachable, in: []string{"connection refused"}},
		{name: "NVMe: without the metadata server", fake: nvmeTable, sel: contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"},
			err: host.ErrConflict, in: []string{"--cloud=gce", "diskNGUID", "disks 0 [", ", 1 [", ", 2 [", ", 3"}, notIn: []string{", 4"}},
		{name: "SCSI: the page 83 identifier's last field", fake: scsiTable, sel: contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}, want: 1},
		{name: "SCSI: a device the metadata server lists on SCSI", fake: scsiTable, opts: Options{GCEDisks: list(cloud.GCEDisk{DeviceName: "pvc-9f8e7d6c", Interface: "SCSI"})},
			sel: contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}, want: 1},
		{name: "SCSI: not attached, no NVMe disk", fake: scsiTable, sel: contract.DiskSelector{GCEDeviceName: "pvc-x"}, err: host.ErrNotFound},
		{name: "SCSI: on SCSI", fake: with(scsiTable, func(f *fakeDisks) { f.disks[1].BusType = host.BusTypeSCSI }),
			sel: contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}, want: 1},
		{name: "SCSI: never an iSCSI disk", fake: with(scsiTable, func(f *fakeDisks) { f.disks[1].BusType = host.BusTypeISCSI }),
			sel: contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}, err: host.ErrNotFound},
		{name: "SCSI: unanswered, the device name in UniqueId", fake: with(scsiTable, func(f *fakeDisks) {
			f.idsErr[2] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
			f.disks[2].UniqueID, f.disks[2].UniqueIDFormat = "Google  pvc-9f8e7d6c", host.UniqueIDVendorID
		}), sel: contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}, err: host.ErrConflict, in: []string{"disks 1 [", ", 2 ["}},
		{name: "SCSI: a local NVMe SSD is no reason to refuse", fake: func() *fakeDisks {
			f := scsiTable()
			f.disks = append(f.disks, host.Disk{Number: 3, BusType: host.BusTypeNVMe, FriendlyName: "NVMe nvme_card"})
			return f
		}, sel: contract.DiskSelector{GCEDeviceName: "pvc-x"}, err: host.ErrNotFound},
	})
}

func TestFindVSphere(t *testing.T) {
	uuid := "6000c29a98d05e384a43f0ef189aaf5a"
	table := func() *fakeDisks {
		f := newFake(osDisk(), scsiDisk(1, 0, 1), scsiDisk(2, 0, 2))
		f.ids[1] = []host.Designator{{Type: host.DesignatorFCPHName, CodeSet: host.CodeSetBinary, Value: bin(uuid)}}
		return f
	}
	vnvme := func() *fakeDisks {
		f := table()
		f.disks[1].BusType = host.BusTypeNVMe
		f.disks[1].FriendlyName = "VMware Virtual NVMe Disk"
		return f
	}
	runFind(t, []findCase{
		{name: "PVSCSI", fake: table, sel: contract.DiskSelector{VSphereUUID: uuid}, want: 1},
		{name: "not attached", fake: table, sel: contract.DiskSelector{VSphereUUID: "6000c29a98d05e384a43f0ef189aaf5b"}, err: host.ErrNotFound},
		{name: "vNVMe fails closed", fake: vnvme, sel: contract.DiskSelector{VSphereUUID: uuid}, err: host.ErrConflict,
			in: []string{"disk 1 [", "virtual NVMe", "PVSCSI", "diskNGUID"}, reads: noReadsOf(1)},
		{name: "an NVMe boot disk is no reason to refuse", fake: func() *fakeDisks {
			f := table()
			f.disks[0].BusType = host.BusTypeNVMe
			return f
		}, sel: contract.DiskSelector{VSphereUUID: "6000c29a98d05e384a43f0ef189aaf5b"}, err: host.ErrNotFound},
		{name: "on SCSI (LSI Logic)", fake: with(table, func(f *fakeDisks) { f.disks[1].BusType = host.BusTypeSCSI }),
			sel: contract.DiskSelector{VSphereUUID: uuid}, want: 1},
		{name: "never a file-backed disk", fake: with(table, func(f *fakeDisks) { f.disks[1].BusType = host.BusTypeFileBacked }),
			sel: contract.DiskSelector{VSphereUUID: uuid}, err: host.ErrNotFound},
		{name: "another disk unreadable this time", fake: with(table, func(f *fakeDisks) {
			f.idsErr[2] = fmt.Errorf("busy: %w", host.ErrBusy)
		}), sel: contract.DiskSelector{VSphereUUID: uuid}, err: host.ErrConflict, in: []string{"disks 1 [", ", 2 [", "busy"}},
		// Outside the preset, diskPage83 finds the NVMe disk as asked.
		{name: "plain diskPage83 on NVMe", fake: vnvme, sel: contract.DiskSelector{Page83: uuid}, want: 1},
	})
}

func TestFindTemporaryDisks(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    host.Disk
		want string
	}{
		// Azure/azure-vm-utils@4113392 udev/80-azure-disk.rules.
		{"Azure local NVMe", host.Disk{FriendlyName: "Microsoft NVMe Direct Disk v2"}, "Azure"},
		{"Azure local NVMe by model", host.Disk{Model: "Microsoft NVMe Direct Disk"}, "Azure"},
		{"EC2 instance store", host.Disk{FriendlyName: "NVMe Amazon EC2 NVMe"}, "instance-store"},
		{"EC2 instance store by model", host.Disk{Model: "Amazon EC2 NVMe Instance Storage"}, "instance-store"},
		{"EC2 instance store by serial", host.Disk{BusType: host.BusTypeNVMe, SerialNumber: " AWS24BBF51AF55097008"}, "instance-store"},
		{"Google local SSD", host.Disk{FriendlyName: "NVMe nvme_card"}, "local SSD"},
		{"Google local SSD beside the PD model", host.Disk{FriendlyName: "nvme_card-pd", Model: "nvme_card"}, "local SSD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.d.Number = 1
			why, ok := ephemeral(tt.d)
			if !ok || !strings.Contains(why, tt.want) {
				t.Fatalf("ephemeral = %q, %v; want %q", why, ok, tt.want)
			}
			runFind(t, []findCase{{name: "never chosen", fake: func() *fakeDisks { return newFake(tt.d) },
				sel: contract.DiskSelector{Number: u32(1)}, err: host.ErrConflict, in: []string{"disk 1", "temporary", "refusing to use it"}}})
		})
	}
	for _, d := range []host.Disk{
		{FriendlyName: "nvme_card-pd"},
		{FriendlyName: "NVMe Amazon Elastic B", SerialNumber: "vol0abc"},
		{BusType: host.BusTypeSAS, SerialNumber: "AWS-SCSI-SERIAL"},
		{FriendlyName: "MSFT NVMe Accelerator v1.0"},
	} {
		if why, ok := ephemeral(d); ok {
			t.Errorf("%+v is not temporary (%s)", d, why)
		}
	}
}

func TestFindHostFailures(t *testing.T) {
	runFind(t, []findCase{
		{name: "list", fake: func() *fakeDisks {
			f := newFake()
			f.listErr = fmt.Errorf("wmi: %w", host.ErrUnreachable)
			return f
		}, sel: contract.DiskSelector{Serial: "a"}, err: host.ErrUnreachable},
	})
	f := newFake()
	f.rescan = fmt.Errorf("wmi: %w", host.ErrBusy)
	b := backendOn(f, Options{Backoff: backend.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}})
	if _, err := b.Find(context.Background(), contract.DiskSelector{Serial: "a"}); !errors.Is(err, host.ErrBusy) {
		t.Fatalf("Find = %v, want the rescan's failure", err)
	}
	// Locate's match refuses the same selectors Find does.
	if _, err := b.match(context.Background(), nil, contract.DiskSelector{EBSVolumeID: "vol-1"}); !errors.Is(err, host.ErrInvalid) {
		t.Fatalf("match = %v, want ErrInvalid", err)
	}
}

// A disk whose identifier cannot be read is logged, at -v=2 for a failure
// and -v=4 for a disk that does not implement the IOCTL.
func TestFindLogsUnreadableIdentifiers(t *testing.T) {
	f := newFake(scsiDisk(1, 1, 1), scsiDisk(2, 1, 2))
	f.idsErr[1] = fmt.Errorf("denied: %w", host.ErrAccessDenied)
	f.idsErr[2] = fmt.Errorf("incorrect function: %w", host.ErrNotFound)
	var buf bytes.Buffer
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.Verbosity(2))))
	// The failure leaves disk 1 a possible match; the disk that does not
	// answer is none.
	if _, err := backendOn(f, Options{}).Find(ctx, contract.DiskSelector{Page83: "60"}); !errors.Is(err, host.ErrConflict) ||
		strings.Contains(err.Error(), ", 2") {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, `diskNumber=1 identifier="device identifiers"`) || strings.Contains(out, "diskNumber=2") {
		t.Fatalf("log at -v=2:\n%s", out)
	}
}

func TestDescribe(t *testing.T) {
	all := contract.DiskSelector{Serial: "s", SerialMatch: contract.MatchContains, Page83: "p", Page83Match: contract.MatchLastField,
		LUN: u32(1), Target: u32(2), Bus: u32(3), Location: "l", NVMeNSID: u32(4), EUI: "e", NGUID: "g", AdapterSerial: "a",
		AzureLUN: u32(5), EBSVolumeID: "vol-1", GCEDeviceName: "d", VSphereUUID: "u", Number: u32(6)}
	want := `disk selector serial contains "s",page83's last field="p",lun=1,target=2,bus=3,location="l",nvmeNSID=4,eui=e,nguid=g,` +
		`adapterSerial="a",azure-disk LUN=5,aws-ebs volume=vol-1,gce-pd device="d",vsphere diskUUID=u,number=6`
	if got := describe(all); got != want {
		t.Errorf("describe =\n%s\nwant\n%s", got, want)
	}
	if got := describe(contract.DiskSelector{}); got != "an empty disk selector" {
		t.Errorf("describe of nothing = %q", got)
	}
	if got := describe(contract.DiskSelector{Serial: "s"}); got != `disk selector serial="s"` {
		t.Errorf("describe = %q", got)
	}
	for _, tt := range []struct {
		d    host.Disk
		want string
	}{
		{host.Disk{Number: 3}, "3"},
		{host.Disk{Number: 3, SerialNumber: "  "}, "3"},
		{host.Disk{Number: 3, Path: "p"}, `3 [path "p"]`},
		{host.Disk{Number: 3, Path: "p", Location: "l", SerialNumber: " s "}, `3 [serial "s", location "l"]`},
	} {
		if got := diskName(tt.d); got != tt.want {
			t.Errorf("diskName(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestPathLUN(t *testing.T) {
	for _, tt := range []struct {
		path string
		want []uint8
		ok   bool
	}{
		// kubernetes-sigs/azuredisk-csi-driver#2661 and PR #3632.
		{`\\?\scsi#disk&ven_msft&prod_virtual_disk#5&23db5f40&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`, []uint8{1}, true},
		{`\\?\SCSI#Disk&Ven_NVMe&Prod_MSFT_NVMe_Accele#6&CA10229&0&000009#{x}`, []uint8{9}, true},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&00000A#{x}`, []uint8{10}, true},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&0000a0#{x}`, []uint8{160}, true},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&000010#{x}`, []uint8{16, 10}, true},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&000099#{x}`, []uint8{153, 99}, true},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&0000ff#{x}`, []uint8{255}, true},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&00000g#{x}`, nil, false},
		{`\\?\scsi#disk&ven_nvme#6&ca10229&0&00001#{x}`, nil, false},
		{`\\?\scsi#disk&ven_nvme#6&ca10229#{x}`, nil, false},
		{`\\?\scsi#disk&ven_nvme#{x}`, nil, false},
		{`\\?\nvme#disk&ven_msft#6&ca10229&0&000001#{x}`, nil, false},
		{``, nil, false},
	} {
		got, ok := pathLUN(tt.path)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("pathLUN(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSerialHex(t *testing.T) {
	for in, want := range map[string]string{
		"E6D8_6642_50D8_47BD_916E_AF1B_0A1B_2C3D.": "e6d8664250d847bd916eaf1b0a1b2c3d",
		" 0000_0000_0000_0005. ":                   "0000000000000005",
		"0000_0000_0000_005.":                      "",
		"0000_0000_0000_00050":                     "",
		"vol02190fee5da4d75e3_00000001.":           "",
		"":                                         "",
		"ZZZZ_0000_0000_0000":                      "",
	} {
		if got := serialHex(in); got != want {
			t.Errorf("serialHex(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchStrings(t *testing.T) {
	for _, tt := range []struct {
		have, want string
		mode       contract.MatchMode
		ok         bool
	}{
		{"SER-A", "ser-a", contract.MatchExact, true},
		{"SER-A.", "SER-A", contract.MatchExact, true},
		{"SER-A", "SER-B", contract.MatchExact, false},
		{"", "", contract.MatchExact, false},
		{"Google  pd-1", "PD-1", contract.MatchLastField, true},
		{"Google  pd-1", "Google", contract.MatchLastField, false},
		{"abcdef", "CDE", contract.MatchContains, true},
		{"abcdef", "xyz", contract.MatchContains, false},
	} {
		if got := matchString(tt.have, tt.want, tt.mode); got != tt.ok {
			t.Errorf("matchString(%q, %q, %d) = %v", tt.have, tt.want, tt.mode, got)
		}
	}
	for _, tt := range []struct {
		have, want string
		ok         bool
	}{
		{"6000C298-595E-0D8D", "6000c298595e0d8d", true},
		{" 6000c298595e0d8d ", "6000c298595e0d8d", true},
		{"Google  pd-1", "Google  pd-1", true},
		{"Google  PD-1", "Google  pd-1", false},
		{"", "", false},
	} {
		if got := matchPage83(tt.have, tt.want, contract.MatchExact); got != tt.ok {
			t.Errorf("matchPage83(%q, %q) = %v", tt.have, tt.want, got)
		}
	}
	if !matchPage83("Google  pd-1", "pd-1", contract.MatchLastField) {
		t.Error("matchPage83 last field")
	}
	for in, want := range map[string]bool{"": false, "0aF9": true, "0g": false, "-": false} {
		if isHex(in) != want {
			t.Errorf("isHex(%q) = %v", in, !want)
		}
	}
}

func TestDefaults(t *testing.T) {
	if b := New(hosttest.Unimplemented(), nil, Options{}); b.opts.Backoff != backend.DefaultBackoff {
		t.Errorf("Backoff %+v, want the default", b.opts.Backoff)
	}
	custom := backend.Backoff{Initial: time.Second, Max: time.Minute}
	if b := New(hosttest.Unimplemented(), nil, Options{Backoff: custom}); b.opts.Backoff != custom {
		t.Errorf("Backoff %+v, want %+v", b.opts.Backoff, custom)
	}
	if ownType(host.PartitionStyleRAW, host.Partition{GptType: host.GptTypeBasicData}) {
		t.Error("a partition of a RAW disk is the plugin's")
	}
	// Locate reads the lookup's own message.
	_, err := backendOn(newFake(), Options{}).match(context.Background(), nil, contract.DiskSelector{Serial: "a"})
	if !errors.Is(err, backend.ErrRetry) || err.Error() != `no disk matches disk selector serial="a"` {
		t.Errorf("match = %v", err)
	}
}

// A disk that is never chosen does not make a lookup uncertain: its
// identifiers are not read, and what cannot be told of it is no doubt.
func TestFindNeverChosenIsNoDoubt(t *testing.T) {
	boot := nvmeDisk(0, "00")
	boot.IsBoot, boot.Path = true, `\\?\nvme#disk#1#{x}`
	temp := nvmeDisk(1, "00")
	temp.FriendlyName, temp.Path = "Microsoft NVMe Direct Disk v2", `\\?\nvme#disk#2#{x}`
	runFind(t, []findCase{
		{name: "a namespace ID", fake: func() *fakeDisks { return newFake(boot, temp) }, sel: contract.DiskSelector{NVMeNSID: u32(2)},
			err: host.ErrNotFound, reads: func(t *testing.T, f *fakeDisks) { noReadsOf(0)(t, f); noReadsOf(1)(t, f) }},
	})
}
