package host

import (
	"strconv"
	"strings"
)

// Location is the parsed form of MSFT_Disk.Location, whose shape on a VM
// is "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0" (the example in
// kubernetes-csi/csi-proxy@eeba470 pkg/os/disk/api.go, ListDiskLocations).
// Some adapters say "Bus" where others say "Port"; both land in Bus, which is
// the SCSI path ID. Unknown or missing fields stay nil.
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
// cannot read are left nil, and ok reports whether a LUN was found.
func ParseLocation(s string) (loc Location, ok bool) {
	for _, part := range strings.Split(s, ":") {
		fields := strings.Fields(part)
		if len(fields) != 2 {
			continue
		}
		n, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			continue
		}
		v := uint32(n)
		switch strings.ToLower(fields[0]) {
		case "adapter":
			loc.Adapter = &v
		case "port", "bus":
			loc.Bus = &v
		case "target":
			loc.Target = &v
		case "lun":
			loc.LUN = &v
		}
	}
	return loc, loc.LUN != nil
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
