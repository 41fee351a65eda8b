package winhost

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unsafe"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// persistentLoginInfoW is PERSISTENT_ISCSI_LOGIN_INFOW (iscsidsc.h; the
// PERSISTENT_ISCSI_LOGIN_INFOA page on learn.microsoft.com lists the
// fields, the W variant has WCHAR strings) with the types of amd64, the only
// architecture the plugin is built for on Windows: BOOLEAN is one byte,
// ULONG four, ULONGLONG and pointers eight, WCHAR two. Go lays a struct of
// these types out as C does (each field at its natural alignment), so the
// offsets below are the C offsets; TestPersistentLoginLayout pins them to
// the values C alignment gives (the size, 2080, is what
// hpe-storage/common-host-libs' PERSISTENT_ISCSI_LOGIN_INFO_RAW has at
// 55e77af windows/iscsidsc/iscsidsc.go). It is only measured, never
// filled: ReportIScsiPersistentLogins hands over bytes.
type persistentLoginInfoW struct {
	TargetName             [224]uint16 // MAX_ISCSI_NAME_LEN + 1
	IsInformationalSession uint8
	InitiatorInstance      [256]uint16 // MAX_ISCSI_HBANAME_LEN
	InitiatorPortNumber    uint32
	TargetPortal           targetPortalW
	SecurityFlags          uint64
	Mappings               uint64 // PISCSI_TARGET_MAPPINGW
	LoginOptions           loginOptions
}

// targetPortalW is ISCSI_TARGET_PORTALW.
type targetPortalW struct {
	SymbolicName [256]uint16 // MAX_ISCSI_PORTAL_NAME_LEN
	Address      [256]uint16 // MAX_ISCSI_PORTAL_ADDRESS_LEN
	Socket       uint16
}

// loginOptions is ISCSI_LOGIN_OPTIONS: eleven ULONGs, then the user name
// and the secret (PUCHAR). They are never read.
type loginOptions struct {
	Fields             [11]uint32
	Username, Password uint64
}

// PersistentLoginInfoSize is the size of one PERSISTENT_ISCSI_LOGIN_INFOW
// record in the buffer of ReportIScsiPersistentLoginsW.
const PersistentLoginInfoSize = int(unsafe.Sizeof(persistentLoginInfoW{}))

// Offsets of the fields read.
var (
	offTargetName        = int(unsafe.Offsetof(persistentLoginInfoW{}.TargetName))
	offInitiatorInstance = int(unsafe.Offsetof(persistentLoginInfoW{}.InitiatorInstance))
	offInitiatorPort     = int(unsafe.Offsetof(persistentLoginInfoW{}.InitiatorPortNumber))
	offPortal            = int(unsafe.Offsetof(persistentLoginInfoW{}.TargetPortal))
	offPortalName        = offPortal + int(unsafe.Offsetof(targetPortalW{}.SymbolicName))
	offPortalAddress     = offPortal + int(unsafe.Offsetof(targetPortalW{}.Address))
	offPortalSocket      = offPortal + int(unsafe.Offsetof(targetPortalW{}.Socket))
)

// persistentLogin is one parsed record: what the plugin shows and what
// RemoveIScsiPersistentTargetW takes back.
type persistentLogin struct {
	host.PersistentLogin
	portal PortalW
}

// parsePersistentLogins reads count records from the fixed part of a
// ReportIScsiPersistentLoginsW buffer. Only names, the initiator port and
// the portal are read; LoginOptions (the CHAP user name and secret) is not.
func parsePersistentLogins(count uint32, b []byte) ([]persistentLogin, error) {
	if int(count)*PersistentLoginInfoSize != len(b) {
		return nil, fmt.Errorf("%d persistent logins in %d bytes; want %d bytes each", count, len(b), PersistentLoginInfoSize)
	}
	out := make([]persistentLogin, 0, count)
	for i := range int(count) {
		r := b[i*PersistentLoginInfoSize : (i+1)*PersistentLoginInfoSize]
		l := persistentLogin{portal: PortalW{
			SymbolicName: wstring(r[offPortalName:offPortalAddress]),
			Address:      wstring(r[offPortalAddress:offPortalSocket]),
			Socket:       binary.LittleEndian.Uint16(r[offPortalSocket:]),
		}}
		l.TargetNodeAddress = wstring(r[offTargetName : offTargetName+2*224])
		l.InitiatorInstance = wstring(r[offInitiatorInstance : offInitiatorInstance+2*256])
		l.InitiatorPort = binary.LittleEndian.Uint32(r[offInitiatorPort:])
		l.Portal = host.Portal{Address: l.portal.Address, Port: l.portal.Socket}
		if l.TargetNodeAddress == "" {
			return nil, fmt.Errorf("persistent login %d has no target name", i)
		}
		out = append(out, l)
	}
	return out, nil
}

// wstring decodes a NUL-terminated UTF-16LE string from a fixed array.
func wstring(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}
