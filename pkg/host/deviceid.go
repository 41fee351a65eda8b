package host

import (
	"encoding/hex"
	"strconv"
)

// DesignatorType is STORAGE_IDENTIFIER_TYPE (ntddstor.h,
// learn.microsoft.com/windows-hardware/drivers/ddi/ntddstor/ne-ntddstor-storage_identifier_type):
// the designator types of SCSI VPD page 0x83 under Microsoft's names.
// There is no NGUID type: an NVMe namespace's NGUID travels as an EUI-64
// designator 16 bytes long (Designator.IsNGUID), and SPC's NAA designator is
// FCPHName.
type DesignatorType uint8

// Designator types, with their STORAGE_IDENTIFIER_TYPE values.
const (
	DesignatorVendorSpecific DesignatorType = 0
	DesignatorVendorID       DesignatorType = 1 // T10 vendor ID: 8 bytes of vendor, then vendor data
	DesignatorEUI64          DesignatorType = 2 // EUI-64 (8 bytes), EUI-64 with extension (12), NGUID (16)
	DesignatorFCPHName       DesignatorType = 3 // NAA
	DesignatorPortRelative   DesignatorType = 4
	DesignatorTargetPortGrp  DesignatorType = 5
	DesignatorLUGroup        DesignatorType = 6
	DesignatorMD5LUID        DesignatorType = 7
	DesignatorSCSINameString DesignatorType = 8
)

// CodeSet is STORAGE_IDENTIFIER_CODE_SET: how a designator's bytes are
// encoded.
type CodeSet uint8

// Code sets, with their STORAGE_IDENTIFIER_CODE_SET values.
const (
	CodeSetReserved CodeSet = 0
	CodeSetBinary   CodeSet = 1
	CodeSetASCII    CodeSet = 2
	CodeSetUTF8     CodeSet = 3
)

// Association is STORAGE_ASSOCIATION_TYPE: what a designator names.
type Association uint8

// Associations, with their STORAGE_ASSOCIATION_TYPE values.
const (
	AssociationDevice Association = 0 // the logical unit: the disk itself
	AssociationPort   Association = 1
	AssociationTarget Association = 2
)

// Designator is one STORAGE_IDENTIFIER of a disk's device-ID descriptor.
type Designator struct {
	Type        DesignatorType
	CodeSet     CodeSet
	Association Association
	Value       []byte
}

// IsEUI64 reports an 8-byte EUI-64 designator of the disk itself.
func (d Designator) IsEUI64() bool { return d.isEUI(8) }

// IsNGUID reports a 16-byte EUI-64-type designator of the disk itself: an
// NVMe namespace's NGUID as the NVMe-to-SCSI translation reports it (NVM
// Express SCSI Translation Reference; Linux does the same, kernel commit
// 4f1982b4 "NVMe: Update SCSI Inquiry VPD 83h translation").
func (d Designator) IsNGUID() bool { return d.isEUI(16) }

func (d Designator) isEUI(n int) bool {
	return d.Association == AssociationDevice && d.Type == DesignatorEUI64 && d.CodeSet == CodeSetBinary && len(d.Value) == n
}

// Text renders the value as csi-proxy does: binary in lower-case hex, ASCII
// and UTF-8 as text.
func (d Designator) Text() string {
	if d.CodeSet == CodeSetBinary {
		return hex.EncodeToString(d.Value)
	}
	return string(d.Value)
}

// String names the designator for messages: "FCPHName binary 6002…".
func (d Designator) String() string {
	return d.Type.String() + " " + d.CodeSet.String() + " " + strconv.Quote(d.Text())
}

func (t DesignatorType) String() string {
	switch t {
	case DesignatorVendorSpecific:
		return "VendorSpecific"
	case DesignatorVendorID:
		return "VendorId"
	case DesignatorEUI64:
		return "EUI64"
	case DesignatorFCPHName:
		return "FCPHName"
	case DesignatorSCSINameString:
		return "ScsiNameString"
	}
	return "type" + strconv.Itoa(int(t))
}

func (c CodeSet) String() string {
	switch c {
	case CodeSetBinary:
		return "binary"
	case CodeSetASCII:
		return "ASCII"
	case CodeSetUTF8:
		return "UTF-8"
	}
	return "codeset" + strconv.Itoa(int(c))
}

// Page83 returns the page 83 identifier as csi-proxy computes it
// (kubernetes-csi/csi-proxy@eeba470 pkg/os/disk/api.go, GetDiskPage83ID),
// which the diskPage83 selector and the vendor drivers built on csi-proxy
// compare with: the first designator, in descriptor order, associated with
// the device whose code set is binary (hex, lower case) or ASCII
// (verbatim); the designator type is not looked at, and UTF-8 designators
// are skipped. ok is false when none qualifies or the one that does is
// empty.
func Page83(ids []Designator) (id string, ok bool) {
	for _, d := range ids {
		if d.Association == AssociationDevice && (d.CodeSet == CodeSetBinary || d.CodeSet == CodeSetASCII) {
			return d.Text(), len(d.Value) > 0
		}
	}
	return "", false
}

// SCSIAddress is SCSI_ADDRESS, the answer of IOCTL_SCSI_GET_ADDRESS
// (ntddscsi.h, learn.microsoft.com/windows-hardware/drivers/ddi/ntddscsi/ns-ntddscsi-_scsi_address):
// the storport port (adapter) number, path ID (bus), target ID and LUN.
// Under stornvme a namespace's LUN is its namespace ID − 1 (the
// documentation's "A LUN is assigned as a namespace's Namespace ID - 1",
// added by MicrosoftDocs/win32 PR #1093, whose reviewer called it an
// implementation detail subject to change).
type SCSIAddress struct {
	Port, Path, Target, LUN uint8
}

func (a SCSIAddress) String() string {
	return "port " + strconv.Itoa(int(a.Port)) + " path " + strconv.Itoa(int(a.Path)) +
		" target " + strconv.Itoa(int(a.Target)) + " LUN " + strconv.Itoa(int(a.LUN))
}
