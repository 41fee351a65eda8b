package host

import (
	"strconv"
	"strings"
)

// Location is the parsed form of MSFT_Disk.Location, whose shape on a VM
// is "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0" (the example in
// kubernetes-csi/csi-proxy@eeba470 pkg/os/disk/api.go, ListDiskLocations),
// "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 2" (Microsoft's own
// Azure example, learn.microsoft.com/troubleshoot/windows-server/backup-and-storage/manage-disks-standalone-storage-spaces)
// or, on newer Azure sizes, "Integrated : Bus 0 : Device 63667 : Function
// 30747 : Adapter 1 : Port 0 : Target 0 : LUN 1"
// (kubernetes-sigs/azuredisk-csi-driver#2661). Bus is the SCSI path ID:
// "Port" where the location has it; "Bus" only in a location with no
// "Port" and no PCI "Device" or "Function", because in the Azure form the
// first "Bus" is the PCI bus, not the path. Unknown or missing fields stay
// nil.
//
// Uncertain (csi-proxy itself, in that function, maps only Adapter, Bus,
// Target and LUN, and warns on "Port"): whether every storage driver emits
// "Port" for the path ID. Matching on Bus is therefore opt-in (diskBus).
type Location struct {
	Adapter *uint32
	Bus     *uint32
	Target  *uint32
	LUN     *uint32
}

// ParseLocation parses MSFT_Disk.Location. It never fails: fields it
// cannot read are left nil, and ok reports whether a LUN was found. An
// NVMe namespace's location has no LUN (Disk.SCSILocation never reads one).
func ParseLocation(s string) (loc Location, ok bool) {
	var bus *uint32
	pci := false
	for _, part := range strings.Split(s, ":") {
		fields := strings.Fields(part)
		if len(fields) != 2 {
			continue
		}
		name := strings.ToLower(fields[0])
		if name == "device" || name == "function" {
			pci = true
		}
		n, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			continue
		}
		v := uint32(n)
		switch name {
		case "adapter":
			loc.Adapter = &v
		case "port":
			loc.Bus = &v
		case "bus":
			bus = &v
		case "target":
			loc.Target = &v
		case "lun":
			loc.LUN = &v
		}
	}
	if loc.Bus == nil && !pci {
		loc.Bus = bus
	}
	return loc, loc.LUN != nil
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
