package sim

import (
	"encoding/hex"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// DiskIdentity is how a disk identifies itself to Windows, set for the
// disks of a --sim-config disk table (Setup.Table) so that a real node's
// Get-Disk output can be copied: every MSFT_Disk identification property
// and what the per-disk IOCTLs answer. Nothing in it has to be unique: real
// tables repeat serials and identifiers (every KVM virtio disk reports
// serial "0", harvester/harvester#5697; copies of one VHDX share page 83,
// kubernetes-csi/csi-proxy PR #116), and the simulated host reports them as
// given. Deciding which disk is meant is the plugin's job.
type DiskIdentity struct {
	FriendlyName        string              `json:"friendlyName,omitempty"`
	Manufacturer        string              `json:"manufacturer,omitempty"`
	Model               string              `json:"model,omitempty"`
	Path                string              `json:"path,omitempty"`
	UniqueID            string              `json:"uniqueId,omitempty"`
	UniqueIDFormat      host.UniqueIDFormat `json:"uniqueIdFormat,omitempty"`
	AdapterSerialNumber string              `json:"adapterSerialNumber,omitempty"`
	// Designators are the device-ID descriptor's identifiers; nil with
	// DeviceIDUnsupported false derives one from DiskState.Page83.
	Designators []DesignatorState `json:"designators,omitempty"`
	// DeviceIDUnsupported makes the device-ID query fail as on a device
	// that does not implement it (ERROR_INVALID_FUNCTION).
	DeviceIDUnsupported bool `json:"deviceIdUnsupported,omitempty"`
	// SCSIAddress is what IOCTL_SCSI_GET_ADDRESS answers; nil derives it
	// from a SCSI Location, and SCSIAddressUnsupported makes it fail.
	SCSIAddress            *host.SCSIAddress `json:"scsiAddress,omitempty"`
	SCSIAddressUnsupported bool              `json:"scsiAddressUnsupported,omitempty"`
}

// DesignatorState is one identifier of a disk's device-ID descriptor; Value
// is hex.
type DesignatorState struct {
	Type        host.DesignatorType `json:"type"`
	CodeSet     host.CodeSet        `json:"codeSet"`
	Association host.Association    `json:"association,omitempty"`
	Value       string              `json:"value"`
}

func (d DesignatorState) toHost() host.Designator {
	v, _ := hex.DecodeString(d.Value) // written by the sim as hex
	return host.Designator{Type: d.Type, CodeSet: d.CodeSet, Association: d.Association, Value: v}
}

// deviceIDs is the device-ID descriptor of the disk: the declared
// designators, or for a disk with a page 83 value and no table identity one
// binary NAA designator of that value (a hex value; csi-proxy's page 83 of
// the disk is that value again, host.Page83).
func (d *DiskState) deviceIDs() ([]host.Designator, error) {
	id := d.Identity
	switch {
	case id != nil && id.DeviceIDUnsupported:
		return nil, fmt.Errorf("disk %d does not answer the device-ID query (simulated ERROR_INVALID_FUNCTION): %w", d.Number, host.ErrNotFound)
	case id != nil && id.Designators != nil:
		out := make([]host.Designator, len(id.Designators))
		for i, ds := range id.Designators {
			out[i] = ds.toHost()
		}
		return out, nil
	case d.Page83 == "":
		return []host.Designator{}, nil
	}
	if v, err := hex.DecodeString(d.Page83); err == nil {
		return []host.Designator{{Type: host.DesignatorFCPHName, CodeSet: host.CodeSetBinary, Value: v}}, nil
	}
	return []host.Designator{{Type: host.DesignatorVendorID, CodeSet: host.CodeSetASCII, Value: []byte(d.Page83)}}, nil
}

// scsiAddress is what IOCTL_SCSI_GET_ADDRESS answers for the disk: the
// declared address, else the one its Location names, whose path, target and
// LUN come from that IOCTL (the Location remarks of the MSFT_Disk page,
// learn.microsoft.com/windows-hardware/drivers/storage/msft-disk), with the
// adapter as port number. An NVMe disk without a declared address, or a
// Location without adapter, target and LUN, has none the sim can know.
func (d *DiskState) scsiAddress() (host.SCSIAddress, error) {
	id := d.Identity
	if id != nil && id.SCSIAddressUnsupported {
		return host.SCSIAddress{}, fmt.Errorf("disk %d does not answer IOCTL_SCSI_GET_ADDRESS (simulated): %w", d.Number, host.ErrNotFound)
	}
	if id != nil && id.SCSIAddress != nil {
		return *id.SCSIAddress, nil
	}
	hd := d.toHost()
	loc, ok := hd.SCSILocation()
	if !ok || loc.Adapter == nil || loc.Target == nil {
		return host.SCSIAddress{}, fmt.Errorf("disk %d has no SCSI address the simulated host knows: %w", d.Number, host.ErrNotFound)
	}
	var path uint32
	if loc.Bus != nil {
		path = *loc.Bus
	}
	if *loc.Adapter > 0xff || path > 0xff || *loc.Target > 0xff || *loc.LUN > 0xff {
		return host.SCSIAddress{}, fmt.Errorf("disk %d: location %q does not fit a SCSI_ADDRESS: %w", d.Number, d.Location, host.ErrNotFound)
	}
	return host.SCSIAddress{Port: uint8(*loc.Adapter), Path: uint8(path), Target: uint8(*loc.Target), LUN: uint8(*loc.LUN)}, nil
}

// setOffline takes the disk offline (reason Policy, as Windows' SAN policy
// leaves new disks) or brings it online.
func (d *DiskState) setOffline(off bool) {
	d.Offline, d.OfflineReason = off, host.OfflineReasonNone
	if off {
		d.OfflineReason = host.OfflineReasonPolicy
	}
}
