//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// table is a disk table with every key: two disks with one serial and one
// page 83 identifier, as real tables have (kubernetes-csi/csi-proxy PR #116).
const table = `
disks:
  - number: 0
    friendlyName: Msft Virtual Disk
    serialNumber: ""
    location: "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0"
    busType: SAS
    size: 128Gi
    isBoot: true
    isSystem: true
    partitionStyle: GPT
  - number: 2
    friendlyName: Virtual_Disk NVMe Premium
    model: MSFT NVMe Accelerator v1.0
    serialNumber: "E6D8_6642_50D8_47BD_916E_AF1B_0A1B_2C3D."
    uniqueId: E6D8664250D847BD916EAF1B0A1B2C3D
    uniqueIdFormat: EUI64
    path: '\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&000003#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}'
    location: "Integrated : Bus 12606208 : Device 0 : Function 0 : Adapter 0"
    busType: 17
    adapterSerialNumber: "SN: 000001"
    size: 10Gi
    partitionStyle: RAW
    isOffline: true
    isReadOnly: true
    page83:
      - {type: EUI64, codeSet: binary, value: E6D8-6642-50D8-47BD-916E-AF1B-0A1B-2C3D}
      - {type: 8, codeSet: utf8, value: "nvme.1414-4d534654"}
      - {type: naa, codeSet: 1, value: 6002248000000001, association: port}
    scsiAddress: {port: 1, lun: 3}
  - number: 3
    serialNumber: "   "
    busType: File Backed Virtual
    partitionStyle: MBR
    page83: 4d5346542020202037fc320d6ebce047
    scsiAddress: unsupported
    deviceIdUnsupported: false
  - number: 4
    serialNumber: "   "
    busType: File Backed Virtual
    page83: 4d5346542020202037fc320d6ebce047
    deviceIdUnsupported: false
`

func TestDiskTable(t *testing.T) {
	setup := mustParse(t, table)
	if !setup.Table() || len(setup.Disks) != 4 {
		t.Fatalf("parsed %+v", setup)
	}
	s, err := applied(t, t.TempDir(), setup)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	disks, err := s.Host().Disks.List(ctx)
	if err != nil || len(disks) != 4 {
		t.Fatalf("List = %+v, %v; want the table's 4 disks and no built-in one", disks, err)
	}
	if d := disks[0]; d.Number != 0 || !d.IsBoot || !d.IsSystem || d.BusType != host.BusTypeSAS || d.PartitionStyle != host.PartitionStyleGPT || d.SerialNumber != "" {
		t.Errorf("disk 0 = %+v", d)
	}
	nvme := disks[1]
	want := host.Disk{Ref: nvme.Ref, Number: 2, FriendlyName: "Virtual_Disk NVMe Premium", Model: "MSFT NVMe Accelerator v1.0",
		SerialNumber: "E6D8_6642_50D8_47BD_916E_AF1B_0A1B_2C3D.", UniqueID: "E6D8664250D847BD916EAF1B0A1B2C3D", UniqueIDFormat: host.UniqueIDEUI64,
		Path:     `\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&000003#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`,
		Location: "Integrated : Bus 12606208 : Device 0 : Function 0 : Adapter 0", BusType: host.BusTypeNVMe, AdapterSerialNumber: "SN: 000001",
		Size: 10 << 30, PartitionStyle: host.PartitionStyleRAW, IsOffline: true, IsReadOnly: true, OfflineReason: host.OfflineReasonPolicy,
		HealthStatus: host.HealthHealthy}
	if nvme != want {
		t.Errorf("disk 2 =\n%+v\nwant\n%+v", nvme, want)
	}
	ids, err := s.Host().Disks.DeviceIDs(ctx, nvme)
	if err != nil || len(ids) != 3 || !ids[0].IsNGUID() || ids[0].Text() != "e6d8664250d847bd916eaf1b0a1b2c3d" ||
		ids[1].CodeSet != host.CodeSetUTF8 || string(ids[1].Value) != "nvme.1414-4d534654" || ids[2].Association != host.AssociationPort {
		t.Errorf("DeviceIDs = %v, %v", ids, err)
	}
	if a, err := s.Host().Disks.SCSIAddress(ctx, nvme); err != nil || a != (host.SCSIAddress{Port: 1, LUN: 3}) {
		t.Errorf("SCSIAddress = %v, %v", a, err)
	}
	// Two disks with one serial and one page 83 identifier: the host
	// reports them as they are.
	for _, d := range disks[2:] {
		ids, err := s.Host().Disks.DeviceIDs(ctx, d)
		if p, _ := host.Page83(ids); err != nil || p != "4d5346542020202037fc320d6ebce047" || d.SerialNumber != "   " {
			t.Errorf("disk %d: serial %q, page 83 %q, %v", d.Number, d.SerialNumber, p, err)
		}
	}
	if _, err := s.Host().Disks.SCSIAddress(ctx, disks[2]); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("disk 3's address: %v, want ErrNotFound (unsupported)", err)
	}
	if parts, _ := s.Host().Disks.Partitions(ctx, disks[0]); len(parts) != 3 {
		t.Errorf("the boot disk's partitions: %+v", parts)
	}

	// Again on the state it made: kept. A grown disk is still the one.
	wantErr(t, "grow", s.ResizeDisk(2, 20<<30), nil)
	dir := s.dir
	wantErr(t, "close", s.Close(), nil)
	if _, err := applied(t, dir, setup); err != nil {
		t.Fatalf("the same table again: %v", err)
	}
}

func TestDiskTableConflicts(t *testing.T) {
	dir := t.TempDir()
	s, err := applied(t, dir, mustParse(t, table))
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "close", s.Close(), nil)
	for _, tt := range []struct{ name, yaml, want string }{
		{"another friendly name", strings.Replace(table, "friendlyName: Virtual_Disk NVMe Premium", "friendlyName: MSFT NVMe Accelerator v1.0", 1),
			`disks[1] (disk 2): conflicts with the simulated host's state: the simulated host's disk 2 has friendly name "Virtual_Disk NVMe Premium", declared friendly name "MSFT NVMe Accelerator v1.0"`},
		{"a disk the host lacks", table + "  - {number: 5, serialNumber: x}\n", "disks[4] (disk 5): "},
		{"another address", strings.Replace(table, "scsiAddress: {port: 1, lun: 3}", "scsiAddress: {port: 1, lun: 4}", 1), "SCSI address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := applied(t, dir, mustParse(t, tt.yaml))
			if !errors.Is(err, ErrSetupConflict) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want a conflict containing %q", err, tt.want)
			}
		})
	}
	// A table on a host used without one: its built-in boot disk is not
	// the table's.
	used := t.TempDir()
	s, err = applied(t, used, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AttachDisk(DiskSpec{Serial: "x", Adapter: 1}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "close", s.Close(), nil)
	if _, err := applied(t, used, mustParse(t, table)); !errors.Is(err, ErrSetupConflict) || !strings.Contains(err.Error(), "fresh simulated host") {
		t.Fatalf("New = %v, want a conflict naming a fresh host", err)
	}
}

func TestDiskTableParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, entry string }{
		{"number on some disks only", "disks:\n  - {number: 0, serialNumber: a}\n  - {serial: b}\n", "disks[1]"},
		{"number twice", "disks:\n  - {number: 1}\n  - {number: 1}\n", "disks[1] (disk 1)"},
		{"lun in a table", "disks:\n  - {number: 1, lun: 2}\n", "disks[0]"},
		{"serial and serialNumber", "disks:\n  - {number: 1, serial: a, serialNumber: b}\n", "disks[0].serialNumber"},
		{"a blank serial outside a table", "disks:\n  - {serial: ' '}\n", "disks[0]"},
		{"unknown bus type", "disks:\n  - {number: 1, busType: floppy}\n", "disks[0].busType"},
		{"unknown code set", "disks:\n  - number: 1\n    page83: [{type: 1, codeSet: 7, value: a}]\n", "disks[0].page83[0].codeSet"},
		{"binary value not hex", "disks:\n  - number: 1\n    page83: [{type: 3, codeSet: binary, value: 60g}]\n", "disks[0].page83[0].value"},
		{"designator without value", "disks:\n  - number: 1\n    page83: [{type: 3, codeSet: binary}]\n", "disks[0].page83[0]"},
		{"address byte out of range", "disks:\n  - number: 1\n    scsiAddress: {port: 256, lun: 1}\n", "disks[0].scsiAddress.port"},
		{"address word", "disks:\n  - number: 1\n    scsiAddress: none\n", "disks[0].scsiAddress"},
		{"page 83 of a device without one", "disks:\n  - number: 1\n    deviceIdUnsupported: true\n    page83: [{type: 3, codeSet: 1, value: 60}]\n", "disks[0]"},
		{"a control character", "disks:\n  - {number: 1, friendlyName: \"a\\tb\"}\n", "disks[0].friendlyName"},
		{"partition style", "disks:\n  - {number: 1, partitionStyle: ZFS}\n", "disks[0].partitionStyle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSetup([]byte(tt.yaml))
			var se *SetupError
			if !errors.As(err, &se) || se.Entry != tt.entry {
				t.Fatalf("ParseSetup = %v, want an error at %q", err, tt.entry)
			}
		})
	}
}

// Outside a table the MSFT_Disk keys describe the disk attached; the
// same file again keeps it, another identity conflicts.
func TestSetupDiskIdentityOutsideATable(t *testing.T) {
	const yaml = `
disks:
  - serial: vol0abcdef0123456789_00000001.
    friendlyName: NVMe Amazon Elastic B
    adapterSerialNumber: vol0abcdef0123456789
    busType: NVMe
    location: ""
    isOffline: false
`
	dir := t.TempDir()
	s, err := applied(t, dir, mustParse(t, yaml))
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Host().Disks.Get(context.Background(), 1)
	if err != nil || d.FriendlyName != "NVMe Amazon Elastic B" || d.AdapterSerialNumber != "vol0abcdef0123456789" ||
		d.BusType != host.BusTypeNVMe || d.Location != "" || d.IsOffline || d.Model != "" {
		t.Fatalf("Get = %+v, %v", d, err)
	}
	wantErr(t, "close", s.Close(), nil)
	s, err = applied(t, dir, mustParse(t, yaml))
	if err != nil {
		t.Fatalf("the same file again: %v", err)
	}
	wantErr(t, "close", s.Close(), nil)
	other := strings.Replace(yaml, "adapterSerialNumber: vol0abcdef0123456789", "adapterSerialNumber: vol0fff", 1)
	if _, err := applied(t, dir, mustParse(t, other)); !errors.Is(err, ErrSetupConflict) || !strings.Contains(err.Error(), "adapter serial") {
		t.Fatalf("another adapter serial: %v", err)
	}
}
