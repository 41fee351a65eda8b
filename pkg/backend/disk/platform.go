package disk

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/cloud"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// scope is what one lookup knows about the node as a whole, for the
// platform selectors (docs/parameters.md, "Presets"): how Azure attaches
// data disks on this node, and the metadata server's entry of a GCE device.
type scope struct {
	// azureNVMe: the OS disk is an NVMe namespace, so data disks are
	// namespaces of the accelerator (AzureLUN only), on the OS
	// namespace's controller.
	azureNVMe bool
	// osAdapters are the adapters of the boot and system disks, which on
	// Azure SCSI sizes (Generation 2 VMs) also hold the temporary disk
	// (AzureLUN only).
	osAdapters []uint32
	// gce is the metadata server's entry of the device (GCEDeviceName,
	// with GCEDisks set); gceBlind is set without GCEDisks.
	gce      *cloud.GCEDisk
	gceBlind bool
}

// Models of Azure's remote NVMe disks, the OS disk and data disks on NVMe
// sizes: "MSFT NVMe Accelerator v1.0" (Azure/azure-vm-utils@4113392
// udev/80-azure-disk.rules; Windows FriendlyName in
// kubernetes-sigs/azuredisk-csi-driver#2365), "Virtual_Disk NVMe Premium"
// (azuredisk #3329; the driver's own model filter, pkg/os/disk/disk.go at
// d983d61).
var azureRemoteNVMe = []string{"msft nvme accelerator", "virtual_disk nvme premium"}

func isAzureRemoteNVMe(d host.Disk) bool {
	name := strings.ToLower(d.FriendlyName + " " + d.Model)
	return d.IsNVMe() && slices.ContainsFunc(azureRemoteNVMe, func(m string) bool { return strings.Contains(name, m) })
}

// controllerOf names the NVMe controller a namespace is reached through by
// what MSFT_Disk shows of it: the controller's serial (AdapterSerialNumber,
// shared by its namespaces) and its PCI location (Location, "Integrated :
// Bus 12606208 : Device 0 : Function 0 : Adapter 0", azuredisk-csi-driver
// PR #3632). Two namespaces that differ in either are on different
// controllers. "" when MSFT_Disk shows neither.
func controllerOf(d host.Disk) string {
	serial, loc := strings.TrimSpace(d.AdapterSerialNumber), strings.TrimSpace(d.Location)
	if serial == "" && loc == "" {
		return ""
	}
	return fmt.Sprintf("adapter serial %q, location %q", serial, loc)
}

// azureAccelerator checks that on an Azure NVMe size every accelerator
// namespace, the OS disk's included, is on one controller, as data disks
// are namespaces of the OS disk's controller: "All disks
// are currently found on one controller, future implementations may
// leverage multiple controllers" (Azure/azure-vm-utils@4113392
// doc/disk-identification.md). Which namespace of a second controller
// would be which LUN is not documented, so accelerator namespaces on more
// than one controller, an OS disk that is not an accelerator namespace, or
// a namespace whose controller cannot be told are refused.
func azureAccelerator(disks, boot []host.Disk) error {
	for _, d := range boot {
		if !isAzureRemoteNVMe(d) {
			return fmt.Errorf("azure-disk: the OS disk %s is an NVMe disk but no Azure accelerator namespace "+
				"(MSFT NVMe Accelerator, Virtual_Disk NVMe Premium): %w", diskName(d), host.ErrConflict)
		}
	}
	byController := map[string][]candidate{}
	var order []string
	for _, d := range disks {
		if !isAzureRemoteNVMe(d) {
			continue
		}
		c := controllerOf(d)
		if c == "" {
			return fmt.Errorf("azure-disk: MSFT_Disk shows neither the controller serial nor the location of "+
				"accelerator namespace %s, so its controller cannot be told from the OS disk's; refusing to guess: %w",
				diskName(d), host.ErrConflict)
		}
		if _, seen := byController[c]; !seen {
			order = append(order, c)
		}
		byController[c] = append(byController[c], candidate{disk: d})
	}
	if len(order) > 1 {
		parts := make([]string, len(order))
		for i, c := range order {
			parts[i] = c + ": " + listCandidates(byController[c])
		}
		return fmt.Errorf("azure-disk: accelerator namespaces are on %d controllers (%s); Azure documents one, and "+
			"which namespace of another would be which LUN is not known; refusing to guess: %w",
			len(order), strings.Join(parts, "; "), host.ErrConflict)
	}
	return nil
}

// scopeOf reads what the platform selectors need of the node as a whole.
func (b *Backend) scopeOf(ctx context.Context, disks []host.Disk, sel contract.DiskSelector) (scope, error) {
	var sc scope
	if sel.AzureLUN != nil {
		// The OS disk decides where data disks are: on NVMe sizes every
		// remote disk is a namespace of the accelerator, the OS disk
		// namespace 1 (azure-vm-utils 80-azure-disk.rules); on SCSI sizes
		// data disks are on adapters other than the OS disk's, which
		// also holds the temporary disk (same rules; azuredisk #2661,
		// where the first disk at the data disk's LUN was that temporary
		// disk). The adapter is read from the boot disk, never assumed.
		var boot []host.Disk
		for _, d := range disks {
			if d.IsCritical() {
				boot = append(boot, d)
			}
		}
		sc.azureNVMe = slices.ContainsFunc(boot, host.Disk.IsNVMe)
		if sc.azureNVMe {
			if err := azureAccelerator(disks, boot); err != nil {
				return scope{}, err
			}
		} else {
			for _, d := range boot {
				adapter, err := azureOSAdapter(d)
				if err != nil {
					return scope{}, err
				}
				sc.osAdapters = append(sc.osAdapters, adapter)
			}
			if len(boot) == 0 {
				return scope{}, fmt.Errorf("azure-disk: no disk is the boot or system disk, so the OS disk's adapter, which "+
					"also holds the temporary disk, is unknown: %w", host.ErrConflict)
			}
		}
	}
	if sel.GCEDeviceName != "" {
		if b.opts.GCEDisks == nil {
			sc.gceBlind = true
			return sc, nil
		}
		list, err := b.opts.GCEDisks(ctx)
		if err != nil {
			return scope{}, fmt.Errorf("gce-pd: read the instance's disks from the metadata server: %w: %w", err, host.ErrUnreachable)
		}
		i := slices.IndexFunc(list, func(g cloud.GCEDisk) bool { return g.DeviceName == sel.GCEDeviceName })
		if i < 0 {
			return scope{}, noMatchf("gce-pd: the metadata server lists no disk with device name %q (not attached yet?)", sel.GCEDeviceName)
		}
		sc.gce = &list[i]
		if sc.gce.NVMe() && sc.gce.NVMeNamespaceID == nil {
			return scope{}, fmt.Errorf("gce-pd: the metadata server lists device %q on NVMe without an nvmeNamespaceIdentifier: %w", sel.GCEDeviceName, host.ErrConflict)
		}
	}
	return sc, nil
}

// azureOSAdapter returns the adapter of a boot or system disk on an Azure
// SCSI size, refusing a layout the preset does not know. What it knows is a
// Generation 2 VM: the OS disk on a synthetic SCSI controller at LUN 0, the
// temporary disk on the same controller at LUN 1, data disks on other
// controllers (Azure/azure-vm-utils@4113392 udev/80-azure-disk.rules: the
// OS disk and the "resource" disk on controller f8b3781a-…, data disks on
// f8b3781b-…, -c-, -d-; azuredisk-csi-driver#2661, whose Get-Disk shows that
// layout). On a Generation 1 VM the OS disk is on the IDE controller and the
// temporary disk on a channel of its own (the same rules' device IDs
// 00000000-0000-… and 00000000-0001-…); what Windows reports for that
// channel's adapter has not been seen, so such a node is refused rather
// than have a temporary disk taken for a data disk (docs/windows.md, "What
// the disk lookup assumes").
func azureOSAdapter(d host.Disk) (uint32, error) {
	loc, lunOK := host.ParseLocation(d.Location)
	switch {
	case loc.Adapter == nil:
		return 0, fmt.Errorf("azure-disk: cannot tell which adapter holds the OS disk (boot disk %s names none); "+
			"a data disk is only found on another adapter: %w", diskName(d), host.ErrConflict)
	case d.BusType == host.BusTypeATA || d.BusType == host.BusTypeATAPI || !lunOK:
		why := "bus type " + d.BusType.String()
		if !lunOK {
			why = "its location names no LUN"
		}
		return 0, fmt.Errorf("azure-disk: the OS disk %s is an IDE disk (%s), as on a Generation 1 VM, whose "+
			"temporary disk sits on an IDE channel of its own; where Windows reports that disk is not verified, so the "+
			"preset finds data disks on Generation 2 VMs only (select the disk with diskLUN and diskTarget, or a "+
			"page 83 identifier): %w", diskName(d), why, host.ErrConflict)
	case !onSCSIBus(d):
		return 0, fmt.Errorf("azure-disk: the OS disk %s is on bus type %s, not the SAS or SCSI of an Azure SCSI size: %w",
			diskName(d), d.BusType, host.ErrConflict)
	}
	return *loc.Adapter, nil
}

// onSCSIBus reports a disk on a SCSI bus as virtual machines present them:
// SAS, as Get-Disk shows Hyper-V's synthetic SCSI disks on Azure
// (kubernetes-sigs/azuredisk-csi-driver#2661) and VMware's PVSCSI and LSI
// Logic SAS disks, or SCSI, which Win32_DiskDrive.InterfaceType reports for
// the same Azure disks (#2661's Get-CimInstance output) and which is
// accepted because no source shows which of the two every driver and
// Windows version gives.
func onSCSIBus(d host.Disk) bool {
	return d.BusType == host.BusTypeSAS || d.BusType == host.BusTypeSCSI
}

// isAzureVirtualDisk reports an Azure (Hyper-V) virtual disk by its SCSI
// vendor and product, "Msft" and "Virtual Disk", as the only SCSI disks
// azure-vm-utils considers (80-azure-disk.rules: ID_VENDOR=="Msft",
// ID_MODEL=="Virtual_Disk", the udev rendering of the INQUIRY product):
// Windows reports them as Manufacturer and Model, and as FriendlyName
// "Msft Virtual Disk" (#2661).
func isAzureVirtualDisk(d host.Disk) bool {
	fold := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	return fold(d.FriendlyName) == "msft virtual disk" || fold(d.Manufacturer) == "msft" && fold(d.Model) == "virtual disk"
}

// inScope applies the platform selectors' conditions that MSFT_Disk
// fields decide. A cloud preset finds only disks on the buses that cloud
// attaches its disks with: never an iSCSI LUN, a file-backed VHD, a USB or
// Fibre Channel disk that happens to share an address or an identifier.
func (sc scope) inScope(d host.Disk, sel contract.DiskSelector) bool {
	if sel.AzureLUN != nil {
		if sc.azureNVMe {
			// One controller holds every accelerator namespace
			// (azureAccelerator), the OS namespace's.
			if !isAzureRemoteNVMe(d) {
				return false
			}
		} else if !sc.azureSCSIData(d, *sel.AzureLUN) {
			return false
		}
	}
	// aws-ebs: EBS volumes are NVMe namespaces on Nitro instances; on Xen
	// instances AWS's PV driver presents them as SCSI disks (path
	// "PROD_PVDISK", awsdocs/amazon-ec2-user-guide-windows@1020606
	// doc_source/ec2-windows-volumes.md; its bus type is not documented).
	if sel.EBSVolumeID != "" && (!d.IsNVMe() && d.BusType != host.BusTypeSCSI || !ebsCandidate(d, sel.EBSVolumeID)) {
		return false
	}
	if sel.GCEDeviceName != "" {
		// A device the metadata server lists on NVMe is a namespace; any
		// other is a SCSI disk (virtio-scsi; SAS accepted too, the
		// Windows bus type not being documented).
		if sc.gce != nil && sc.gce.NVMe() {
			if !d.IsNVMe() {
				return false
			}
		} else if d.IsNVMe() || !onSCSIBus(d) {
			return false
		}
	}
	// vsphere: PVSCSI and LSI Logic SAS report SAS
	// (vmware/ansible-vsphere-gos-validation
	// windows/utils/win_get_boot_disk_ctrl_type.yml), LSI Logic parallel
	// SCSI; a vNVMe disk is never matched (matchesFields).
	if sel.VSphereUUID != "" && !onSCSIBus(d) {
		return false
	}
	return true
}

// azureSCSIData reports whether d is the Azure data disk at lun on a SCSI
// size: an Azure virtual disk on a synthetic SCSI bus, at target 0 and that
// LUN, on an adapter that does not hold the OS disk. Target 0: Azure
// attaches data disks there (#2661: "Target 0 : LUN 1"); a disk at another
// target is something else, such as the BitLocker key volume Azure Disk
// Encryption attaches (kubernetes-sigs/azuredisk-csi-driver#2034).
func (sc scope) azureSCSIData(d host.Disk, lun uint32) bool {
	loc, ok := d.SCSILocation()
	return ok && isAzureVirtualDisk(d) && onSCSIBus(d) && loc.Adapter != nil && !slices.Contains(sc.osAdapters, *loc.Adapter) &&
		loc.Target != nil && *loc.Target == 0 && *loc.LUN == lun
}

// platform applies the platform selector's identifiers.
func (sc scope) platform(ctx context.Context, r *reader, sel contract.DiskSelector) (verdict, string) {
	switch {
	case sel.AzureLUN != nil && sc.azureNVMe:
		// A data disk at LUN L is namespace L + 2, storport LUN L + 1
		// (docs/parameters.md, "azure-disk").
		return r.storportLUN(ctx).is(*sel.AzureLUN + 1)
	case sel.EBSVolumeID != "":
		return ebsVerdict(r.d)
	case sel.VSphereUUID != "":
		// vsphere-csi-driver's Windows node compares csi-proxy's page 83
		// value with diskUUID exactly (kubernetes-sigs/vsphere-csi-driver@bf80902
		// pkg/csi/service/mounter/mounter_windows.go).
		return r.page83Is(ctx, func(id string) bool { return matchPage83(id, sel.VSphereUUID, contract.MatchExact) })
	case sel.GCEDeviceName != "" && sc.gce != nil && sc.gce.NVMe():
		return hasGCENamespace(ctx, r, *sc.gce.NVMeNamespaceID)
	case sel.GCEDeviceName != "":
		// SCSI machine types: page 83 "Google  <device-name>", last field
		// compared (gcp-pd safe-mounter-v1_windows.go at b560165).
		return r.page83Is(ctx, func(id string) bool { return matchString(id, sel.GCEDeviceName, contract.MatchLastField) })
	}
	return yes, ""
}

// hasGCENamespace reports whether the disk's NGUID starts with the
// nvmeNamespaceIdentifier the metadata server gives for the device, as
// gcp-compute-persistent-disk-csi-driver compares them on Windows: the
// serial without '.' and '_' must be 32 hex digits, whose first 16 are the
// identifier (kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
// pkg/mount-manager/safe-mounter-v1_windows.go; its example serial
// "10CC_9636_B6E3_CE3B_0000_0000_0000_0000."). A 16-byte EUI64 designator
// counts the same; a namespace that shows an EUI-64 only (16 hex digits)
// and answers the device-ID query without an NGUID never matches, as in
// that driver. A namespace whose NGUID cannot be read at all (its serial is
// no NGUID, it does not answer the device-ID query, as Windows Server
// 2025's native NVMe stack may not, and its UniqueId is no NGUID) may be
// the device: which identifier Windows writes into the serial when a
// namespace has both is not documented, and the device name Linux reads
// from the namespace itself (the JSON at byte 384 of Identify Namespace,
// gcp-pd deploy/kubernetes/udev/google_nvme_id) is not read on Windows.
func hasGCENamespace(ctx context.Context, r *reader, id uint64) (verdict, string) {
	want := fmt.Sprintf("%016x", id)
	if h := serialHex(r.d.SerialNumber); len(h) == 32 {
		if h[:16] == want {
			return yes, ""
		}
		return no, ""
	}
	for _, d := range r.deviceIDs(ctx) {
		if d.IsNGUID() && d.Text()[:16] == want {
			return yes, ""
		}
	}
	if v, why := r.unreadIDs(func(u string) bool { h := hexOf(u); return len(h) == 32 && h[:16] == want }); v != no {
		return v, why
	}
	if r.idsErr != nil && len(hexOf(r.d.UniqueID)) != 32 {
		return maybe, fmt.Sprintf("its NGUID cannot be read: its serial number %q is none, it does not answer the device-ID query, "+
			"and its UniqueId %q is none", strings.TrimSpace(r.d.SerialNumber), r.d.UniqueID)
	}
	return no, ""
}

// ebsIDs returns the EBS volume IDs a disk reports, without their dash:
// the part of SerialNumber before "_" ("vol01257d42be427a58b_00000001.")
// and AdapterSerialNumber ("vol0651a78c608e09c6a"), the two places AWS
// documents for Windows (awsdocs/amazon-ec2-user-guide-windows@1020606
// doc_source/nvme-ebs-volumes.md: AdapterSerialNumber on Windows Server
// 2016, SerialNumber on 2012 R2).
func ebsIDs(d host.Disk) []string {
	var ids []string
	serial, _, _ := strings.Cut(normalizeSerial(d.SerialNumber), "_")
	for _, v := range []string{serial, strings.TrimSpace(d.AdapterSerialNumber)} {
		if strings.HasPrefix(strings.ToLower(v), "vol") {
			ids = append(ids, strings.ToLower(v))
		}
	}
	return ids
}

// ebsCandidate reports whether the disk reports the EBS volume ID, compared
// exactly. aws-ebs-csi-driver checks that the serial contains the ID
// (kubernetes-sigs/aws-ebs-csi-driver@429e202
// pkg/mounter/mount_windows_proxyV2.go, FindDevicePath), under which an old
// 8-digit ID is found in the serial of a 17-digit one that starts with it.
func ebsCandidate(d host.Disk, volumeID string) bool {
	return slices.Contains(ebsIDs(d), strings.ReplaceAll(volumeID, "-", ""))
}

// ebsVerdict refuses a disk whose two EBS fields name different volumes.
func ebsVerdict(d host.Disk) (verdict, string) {
	ids := ebsIDs(d)
	if len(ids) == 2 && ids[0] != ids[1] {
		return maybe, fmt.Sprintf("SerialNumber names %s, AdapterSerialNumber %s", ids[0], ids[1])
	}
	return yes, ""
}

// failClosed refuses, when no disk matched, a node on which the platform
// selector cannot find the disk for certain whatever is attached.
func (sc scope) failClosed(disks []host.Disk, sel contract.DiskSelector) error {
	var nvme []candidate
	for _, d := range disks {
		if _, temp := ephemeral(d); d.IsNVMe() && !temp && (sel.GCEDeviceName != "" || !d.IsCritical()) {
			nvme = append(nvme, candidate{disk: d})
		}
	}
	if len(nvme) == 0 {
		return nil
	}
	switch {
	case sel.GCEDeviceName != "" && sc.gceBlind:
		return fmt.Errorf("gce-pd: this node has persistent disks on NVMe (%s); on NVMe machine types the disk is found "+
			"by the nvmeNamespaceIdentifier the metadata server lists for device %q, which the plugin reads only with "+
			"--cloud=gce (or select the disk with diskNGUID): %w", listCandidates(nvme), sel.GCEDeviceName, host.ErrConflict)
	case sel.VSphereUUID != "":
		return fmt.Errorf("vsphere: %s on a virtual NVMe controller, and no source confirms that a vNVMe disk reports "+
			"diskUUID as its page 83 identifier (vsphere-csi-driver converts the UUID for NVMe only in its WCP controller, "+
			"getNvmeUUID, and never on Windows); attach the volume through a PVSCSI controller, or select the disk "+
			"with diskNGUID: %w", listCandidates(nvme), host.ErrConflict)
	}
	return nil
}

// notFoundHint says, for a platform selector, what the lookup looked for.
func (sc scope) notFoundHint() string {
	switch {
	case sc.gce != nil && sc.gce.NVMe():
		return fmt.Sprintf(" (an NVMe namespace whose NGUID starts with %016x, the metadata server's nvmeNamespaceIdentifier)", *sc.gce.NVMeNamespaceID)
	case sc.azureNVMe:
		return " (an MSFT NVMe Accelerator namespace at storport LUN = LUN + 1)"
	case len(sc.osAdapters) > 0:
		return fmt.Sprintf(" (a Msft Virtual Disk on SAS or SCSI at target 0 and that LUN, on an adapter other than the OS disk's adapter %v)", sc.osAdapters)
	}
	return ""
}
