package winhost

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
)

// classInitiatorSession is the iSCSI initiator's own session class in
// Root\WMI, whose SendScsiReportLuns sends REPORT LUNS to the session's
// target. The Storage Management API's MSFT_iSCSISession has no such
// method.
const classInitiatorSession = "MSiSCSIInitiator_SessionClass"

// ReportLUNs sends SCSI REPORT LUNS to target iqn through one of its
// sessions with MSiSCSIInitiator_SessionClass.SendScsiReportLuns (no
// inputs; outputs ScsiStatus, ResponseBuffer and SenseBuffer: "sends the
// Report LUN command to the target associated with the specified
// session", minimum supported server Windows Server 2008,
// https://learn.microsoft.com/previous-versions/windows/desktop/iscsidisc/sendscsireportluns-msiscsiinitiator-sessionclass;
// the class and its outputs as github.com/microsoft/wmi v0.43.0
// server23h2/root/wmi/MSiSCSIInitiator_SessionClass.go generates them, the
// command behind iscsicli ReportLUNs). The session is found by
// TargetNodeName, compared in Go as Sessions compares IQNs: which of
// MSiSCSIInitiator_SessionClass.SessionId's forms matches
// MSFT_iSCSISession.SessionIdentifier is not documented, and any session
// of the target answers for it.
//
// The LUNs are the target's numbers. MSFT_Disk.Location's "LUN n" is the
// operating system's; the two are the same unless the login asked for
// LUN mappings, which the plugin never does (unverified on Windows:
// docs/windows.md lists the experiment).
//
// Round trips: 2 (the sessions, the command).
func (x *ISCSI) ReportLUNs(ctx context.Context, iqn string) ([]uint32, error) {
	q, err := wql.Select(classInitiatorSession, []string{"TargetNodeName"})
	if err != nil {
		return nil, fmt.Errorf("build query on %s: %w: %w", classInitiatorSession, err, host.ErrInvalid)
	}
	insts, err := x.s.e.Query(ctx, NamespaceWMI, q)
	if err != nil {
		return nil, fmt.Errorf("list the iSCSI initiator's sessions (%s): %w", classInitiatorSession, mapHostErr(err))
	}
	path := ""
	for _, in := range insts {
		pr := propsOf(in, classInitiatorSession)
		name := pr.String("TargetNodeName")
		if err := pr.Err(); err != nil {
			return nil, err
		}
		if strings.EqualFold(name, iqn) && in.Path != "" {
			path = in.Path
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("no iSCSI session of target %s to send REPORT LUNS through: %w", iqn, host.ErrNotFound)
	}
	m := Method{Class: classInitiatorSession, Path: path, Name: "SendScsiReportLuns"}
	r, err := x.s.e.Call(ctx, NamespaceWMI, m)
	if err != nil {
		return nil, fmt.Errorf("send REPORT LUNS to target %s: %w", iqn, mapErr(classInitiatorSession, err))
	}
	if r.ReturnValue != 0 {
		return nil, fmt.Errorf("send REPORT LUNS to target %s: %w", iqn, methodError(classInitiatorSession, m.Name, r.ReturnValue))
	}
	out := OutOf(classInitiatorSession, m.Name, r)
	status := out.Uint16("ScsiStatus")
	buf := out.Bytes("ResponseBuffer")
	if err := out.Err(); err != nil {
		return nil, err
	}
	if status != 0 {
		// Not GOOD (SAM-5 status codes): CHECK CONDITION (0x02), BUSY
		// (0x08), ...; the sense data says why, the answer is unknown.
		return nil, fmt.Errorf("target %s answered REPORT LUNS with SCSI status %#02x", iqn, status)
	}
	luns, err := decodeReportLUNs(buf)
	if err != nil {
		return nil, fmt.Errorf("REPORT LUNS answer of target %s: %w", iqn, err)
	}
	return luns, nil
}

// decodeReportLUNs reads REPORT LUNS parameter data (SPC-4 §6.33: a 4-byte
// big-endian LUN LIST LENGTH in bytes, 4 reserved bytes, then one 8-byte
// LUN per entry) with single-level LUNs (SAM-5 §4.7): address method 00b,
// peripheral device addressing with bus 0, gives LUN = byte 1; 01b, flat
// space addressing, gives LUN = (byte 0 & 0x3f) << 8 | byte 1. A LUN in
// another form, or a list longer than the buffer, is an error: the answer
// cannot be read, rather than misread.
func decodeReportLUNs(b []byte) ([]uint32, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%d bytes, less than the 8-byte header", len(b))
	}
	n := binary.BigEndian.Uint32(b[:4])
	if n%8 != 0 || uint64(n) > uint64(len(b)-8) {
		return nil, fmt.Errorf("LUN list length %d does not fit the %d bytes returned in 8-byte entries", n, len(b)-8)
	}
	out := make([]uint32, 0, n/8)
	for e := b[8 : 8+n]; len(e) > 0; e = e[8:] {
		lun := e[:8]
		if binary.BigEndian.Uint64(lun)&0x0000ffffffffffff != 0 {
			return nil, fmt.Errorf("LUN entry % x is not a single-level LUN", lun)
		}
		switch lun[0] >> 6 {
		case 0: // peripheral device addressing
			if lun[0]&0x3f != 0 {
				return nil, fmt.Errorf("LUN entry % x addresses bus %d, not this target's LUNs", lun, lun[0]&0x3f)
			}
			out = append(out, uint32(lun[1]))
		case 1: // flat space addressing
			out = append(out, uint32(lun[0]&0x3f)<<8|uint32(lun[1]))
		default:
			return nil, fmt.Errorf("LUN entry % x uses an addressing method the plugin does not read", lun)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
