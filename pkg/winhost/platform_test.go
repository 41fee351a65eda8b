package winhost_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/cloud"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// The platforms' disk lookups end to end over the scripted executor: the
// MSFT_Disk instances and IOCTL replies carry the exact values of the
// sources each test names, and the script is every call the lookup makes
// (one disk listing; an IOCTL only for the disks the selector must tell
// apart that way).

func findOn(t *testing.T, e *scripted.Executor, o disk.Options, sel contract.DiskSelector) (host.Disk, error) {
	t.Helper()
	o.Backoff = backend.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}
	return disk.New(winhost.New(e), nil, o).Find(context.Background(), sel)
}

func u32p(v uint32) *uint32 { return &v }

// Azure SCSI size, kubernetes-sigs/azuredisk-csi-driver#2661: the data disk
// at LUN 1 on adapter 1 (its Get-Disk values), the temporary disk at LUN 1
// on the OS disk's adapter 0.
func TestPlatformAzureSCSI(t *testing.T) {
	const prefix = "Integrated : Bus 0 : Device 63667 : Function "
	osDisk := diskSpec{Number: 0, Boot: true, System: true, Style: host.PartitionStyleGPT, Location: prefix + "30746 : Adapter 0 : Port 0 : Target 0 : LUN 0"}
	temp := diskSpec{Number: 1, Style: host.PartitionStyleMBR, Location: prefix + "30746 : Adapter 0 : Port 0 : Target 0 : LUN 1"}
	data := diskSpec{Number: 3, Style: host.PartitionStyleGPT, Offline: true, OfflineReason: host.OfflineReasonCollision,
		Location: prefix + "30747 : Adapter 1 : Port 0 : Target 0 : LUN 1", Size: 549755813888,
		UniqueID: "60022480F48D294F40F18727DF9A6349", UniqueIDFormat: host.UniqueIDFCPHName,
		DevPath: `\\?\scsi#disk&ven_msft&prod_virtual_disk#5&23db5f40&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`}
	e := scripted.New(t)
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(osDisk), diskInst(temp), diskInst(data)}})
	d, err := findOn(t, e, disk.Options{}, contract.DiskSelector{AzureLUN: u32p(1)})
	if err != nil || d.Number != 3 || d.UniqueID != "60022480F48D294F40F18727DF9A6349" {
		t.Fatalf("Find = %+v, %v; want disk 3", d, err)
	}
}

// Azure NVMe size: the accelerator's namespaces (FriendlyName "MSFT NVMe
// Accelerator v1.0", azuredisk#2365; location and the data disk's path,
// azuredisk PR #3632), the OS disk namespace 1. LUN 0 is namespace 2,
// storport LUN 1: IOCTL_SCSI_GET_ADDRESS says so, and the path agrees.
func TestPlatformAzureNVMe(t *testing.T) {
	const loc = "Integrated : Bus 12606208 : Device 0 : Function 0 : Adapter 0"
	path := func(tail string) string {
		return `\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&` + tail + `#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`
	}
	nvme := func(n uint32, tail string) diskSpec {
		return diskSpec{Number: n, Location: loc, Bus: host.BusTypeNVMe, Friendly: "MSFT NVMe Accelerator v1.0", Model: "MSFT NVMe Accelerator v1.0",
			DevPath: path(tail), Style: host.PartitionStyleRAW}
	}
	osDisk := nvme(0, "000000")
	osDisk.Boot, osDisk.System, osDisk.Style = true, true, host.PartitionStyleGPT
	lun0, lun2 := nvme(1, "000001"), nvme(2, "000003")
	lun0.Serial = "DE0A_1747_BE29_4DA6_B31F_4AF8_1122_3344." // azuredisk#3329, its first six groups
	address := func(lun byte) scripted.Reply { return scripted.Reply{Bytes: []byte{8, 0, 0, 0, 1, 0, 0, lun}} }
	list := scripted.Reply{Instances: []winhost.Instance{diskInst(osDisk), diskInst(lun0), diskInst(lun2)}}

	t.Run("the IOCTL", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, list)
		e.ExpectWin32("SCSIAddress", []any{path("000001")}, address(1))
		e.ExpectWin32("SCSIAddress", []any{path("000003")}, address(3))
		if d, err := findOn(t, e, disk.Options{}, contract.DiskSelector{AzureLUN: u32p(0)}); err != nil || d.Number != 1 {
			t.Fatalf("Find = disk %d, %v; want 1", d.Number, err)
		}
	})
	t.Run("the path where the IOCTL does not answer", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, list)
		e.ExpectWin32("SCSIAddress", []any{path("000001")}, scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorInvalidFunction)})
		e.ExpectWin32("SCSIAddress", []any{path("000003")}, scripted.Reply{Err: w32("DeviceIoControl", winhost.ErrorNotSupported)})
		if d, err := findOn(t, e, disk.Options{}, contract.DiskSelector{AzureLUN: u32p(2)}); err != nil || d.Number != 2 {
			t.Fatalf("Find = disk %d, %v; want 2", d.Number, err)
		}
	})
	t.Run("the IOCTL and the path disagree", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, list)
		e.ExpectWin32("SCSIAddress", []any{path("000001")}, address(1))
		e.ExpectWin32("SCSIAddress", []any{path("000003")}, address(1))
		_, err := findOn(t, e, disk.Options{}, contract.DiskSelector{AzureLUN: u32p(0)})
		if !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "IOCTL_SCSI_GET_ADDRESS reports LUN 1, its device path reads as LUN 3") {
			t.Fatalf("Find = %v, want the contradiction named", err)
		}
	})
}

// AWS Nitro: the volume ID as AdapterSerialNumber (Windows Server 2016) and
// in SerialNumber (2012 R2) (awsdocs/amazon-ec2-user-guide-windows@1020606
// doc_source/nvme-ebs-volumes.md; the serial form also in csi-proxy PR
// #116). No IOCTL is needed.
func TestPlatformAWS(t *testing.T) {
	boot := diskSpec{Number: 0, Boot: true, System: true, Style: host.PartitionStyleMBR, Bus: host.BusTypeNVMe,
		Serial: "vol02190fee5da4d75e3_00000001.", AdapterSerial: "vol02190fee5da4d75e3"}
	ws2016 := diskSpec{Number: 1, Bus: host.BusTypeNVMe, AdapterSerial: "vol0651a78c608e09c6a"}
	ws2012 := diskSpec{Number: 2, Bus: host.BusTypeNVMe, Serial: "vol01257d42be427a58b_00000001."}
	for _, tt := range []struct {
		id   string
		want uint32
	}{{"vol-0651a78c608e09c6a", 1}, {"vol-01257d42be427a58b", 2}} {
		e := scripted.New(t)
		e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(boot), diskInst(ws2016), diskInst(ws2012)}})
		if d, err := findOn(t, e, disk.Options{}, contract.DiskSelector{EBSVolumeID: tt.id}); err != nil || d.Number != tt.want {
			t.Fatalf("%s: Find = disk %d, %v; want %d", tt.id, d.Number, err, tt.want)
		}
	}
}

// GCE: on NVMe machine types the serial gcp-compute-persistent-disk-csi-
// driver's Windows node parses (its example, @b560165
// pkg/mount-manager/safe-mounter-v1_windows.go) against the metadata
// server's nvmeNamespaceIdentifier; on SCSI machine types the page 83
// identifier "Google  <device name>" (csi-proxy@eeba470
// integrationtests/disk_v1_test.go), read with the IOCTL.
func TestPlatformGCE(t *testing.T) {
	id := uint64(1210507561596603963)
	md := func(context.Context) ([]cloud.GCEDisk, error) {
		return []cloud.GCEDisk{{DeviceName: "pvc-4a5b6c7d", Interface: "NVME", Type: "PERSISTENT", NVMeNamespaceID: &id}}, nil
	}
	boot := diskSpec{Number: 0, Boot: true, System: true, Style: host.PartitionStyleGPT, Bus: host.BusTypeNVMe, Friendly: "nvme_card-pd",
		Serial: "10CC_9636_B6E3_CE00_0000_0000_0000_0000."}
	vol := diskSpec{Number: 1, Bus: host.BusTypeNVMe, Friendly: "nvme_card-pd", Serial: "10CC_9636_B6E3_CE3B_0000_0000_0000_0000."}
	e := scripted.New(t)
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(boot), diskInst(vol)}})
	if d, err := findOn(t, e, disk.Options{GCEDisks: md}, contract.DiskSelector{GCEDeviceName: "pvc-4a5b6c7d"}); err != nil || d.Number != 1 {
		t.Fatalf("NVMe: Find = disk %d, %v; want 1", d.Number, err)
	}

	scsiBoot := diskSpec{Number: 0, Boot: true, System: true, Style: host.PartitionStyleGPT, Bus: host.BusTypeSCSI, Serial: "                    "}
	pd := diskSpec{Number: 1, Bus: host.BusTypeSCSI, Serial: "                    "}
	e = scripted.New(t)
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(scsiBoot), diskInst(pd)}})
	e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(1)}, scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(
		winhost.StorageID{CodeSet: 2, Type: 1, ID: []byte("Google  pvc-9f8e7d6c")})})
	if d, err := findOn(t, e, disk.Options{}, contract.DiskSelector{GCEDeviceName: "pvc-9f8e7d6c"}); err != nil || d.Number != 1 {
		t.Fatalf("SCSI: Find = disk %d, %v; want 1", d.Number, err)
	}
}

// vSphere PVSCSI: diskUUID as publish_context carries it
// (kubernetes-sigs/vsphere-csi-driver@bf80902
// pkg/csi/service/osutils/windows_os_utils.go), the disk's binary NAA page
// 83 identifier; BusType SAS (vmware/ansible-vsphere-gos-validation
// windows/utils/win_get_boot_disk_ctrl_type.yml).
func TestPlatformVSphere(t *testing.T) {
	boot := diskSpec{Number: 0, Boot: true, System: true, Style: host.PartitionStyleGPT}
	vol := diskSpec{Number: 1, UniqueID: "6000C29A98D05E384A43F0EF189AAF5A", UniqueIDFormat: host.UniqueIDFCPHName,
		Friendly: "VMware Virtual disk", Model: "Virtual disk"}
	e := scripted.New(t)
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(boot), diskInst(vol)}})
	e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(1)}, scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(
		winhost.StorageID{CodeSet: 1, Type: 3, ID: []byte{0x60, 0x00, 0xc2, 0x9a, 0x98, 0xd0, 0x5e, 0x38, 0x4a, 0x43, 0xf0, 0xef, 0x18, 0x9a, 0xaf, 0x5a}})})
	if d, err := findOn(t, e, disk.Options{}, contract.DiskSelector{VSphereUUID: "6000c29a98d05e384a43f0ef189aaf5a"}); err != nil || d.Number != 1 {
		t.Fatalf("Find = disk %d, %v; want 1", d.Number, err)
	}
}
