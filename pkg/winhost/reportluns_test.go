package winhost_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// reportLUNs is REPORT LUNS parameter data (SPC-4 §6.33): the LUN LIST
// LENGTH, 4 reserved bytes, then the 8-byte entries given.
func reportLUNs(entries ...[8]byte) []byte {
	n := 8 * len(entries)
	b := []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 0, 0, 0, 0}
	for _, e := range entries {
		b = append(b, e[:]...)
	}
	return b
}

// peripheral and flat are single-level LUNs in the two addressing methods
// targets use (SAM-5 §4.7): 00b with bus 0, and 01b.
func peripheral(lun byte) [8]byte { return [8]byte{0, lun} }
func flat(lun uint16) [8]byte     { return [8]byte{0x40 | byte(lun>>8), byte(lun)} }

func TestDecodeReportLUNs(t *testing.T) {
	tests := []struct {
		name    string
		b       []byte
		want    []uint32
		wantErr string
	}{
		{"none", reportLUNs(), []uint32{}, ""},
		{"peripheral", reportLUNs(peripheral(3), peripheral(0)), []uint32{0, 3}, ""},
		{"flat space", reportLUNs(flat(0), flat(300), flat(1)), []uint32{0, 1, 300}, ""},
		{"both forms of one LUN", reportLUNs(peripheral(5), flat(5)), []uint32{5}, ""},
		{"buffer larger than the list", append(reportLUNs(peripheral(1)), 0, 0, 0, 0, 0, 0, 0, 0), []uint32{1}, ""},
		{"short header", []byte{0, 0, 0}, nil, "header"},
		{"list longer than the buffer", reportLUNs(peripheral(1))[:12], nil, "does not fit"},
		{"length not a multiple of 8", append([]byte{0, 0, 0, 4, 0, 0, 0, 0}, 0, 1, 0, 0), nil, "does not fit"},
		{"peripheral on another bus", reportLUNs([8]byte{0x01, 2}), nil, "bus 1"},
		{"logical unit addressing", reportLUNs([8]byte{0x80, 2}), nil, "addressing method"},
		{"two-level LUN", reportLUNs([8]byte{0, 1, 0, 2}), nil, "single-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := winhost.DecodeReportLUNs(tt.b)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// The initiator's session class, in Root\WMI. Paths are opaque to the code.
const (
	wqlInitiatorSessions = "SELECT TargetNodeName FROM MSiSCSIInitiator_SessionClass"
	initSessionPath      = `\\NODE\root\wmi:MSiSCSIInitiator_SessionClass.InstanceName="ROOT\\ISCSIPRT\\0000_0_0"`
)

func initSessionInst(path, iqn string) winhost.Instance {
	return winhost.Instance{Path: path, Class: "MSiSCSIInitiator_SessionClass", Props: map[string]any{"TargetNodeName": iqn}}
}

// bytesOut is a uint8[] output as the executor converts it.
func bytesOut(b []byte) []any {
	out := make([]any, len(b))
	for i, v := range b {
		out[i] = int64(v)
	}
	return out
}

func reportReply(status int64, data []byte) scripted.Reply {
	return scripted.Reply{Result: winhost.Result{Out: map[string]any{
		"ScsiStatus": status, "ResponseBuffer": bytesOut(data), "SenseBuffer": bytesOut(make([]byte, 18)),
	}}}
}

func TestISCSIReportLUNs(t *testing.T) {
	sessions := scripted.Reply{Instances: []winhost.Instance{
		initSessionInst(initSessionPath+"other", "iqn.2024-01.test.array:other"),
		initSessionInst(initSessionPath, strings.ToUpper(iscIQN)), // IQNs compare case-insensitively
	}}
	call := winhost.Method{Class: "MSiSCSIInitiator_SessionClass", Path: initSessionPath, Name: "SendScsiReportLuns"}
	tests := []struct {
		name     string
		sessions scripted.Reply
		reply    *scripted.Reply
		want     []uint32
		wantErr  error
		says     string
	}{
		{name: "two LUNs", sessions: sessions, reply: ptr(reportReply(0, reportLUNs(peripheral(1), peripheral(0)))), want: []uint32{0, 1}},
		{name: "no session of the target", sessions: scripted.Reply{Instances: sessions.Instances[:1]}, wantErr: host.ErrNotFound},
		{name: "CHECK CONDITION", sessions: sessions, reply: ptr(reportReply(2, nil)), says: "SCSI status 0x02"},
		{name: "unreadable answer", sessions: sessions, reply: ptr(reportReply(0, []byte{0, 0})), says: "header"},
		{name: "method fails", sessions: sessions, reply: ptr(iscCOM("ExecMethod MSiSCSIInitiator_SessionClass.SendScsiReportLuns", isdscConnectionFailed)),
			wantErr: host.ErrUnreachable},
		{name: "non-zero return value", sessions: sessions, reply: ptr(iscRV(isdscTargetNotFound)), wantErr: host.ErrNotFound},
		// A Windows without the class (a namespace or class the provider
		// does not register) answers the query WBEM_E_INVALID_CLASS.
		{name: "class missing", sessions: iscCOM("ExecQuery", 0x80041010), wantErr: host.ErrSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectQuery(winhost.NamespaceWMI, wqlInitiatorSessions, tt.sessions)
			if tt.reply != nil {
				e.ExpectCall(winhost.NamespaceWMI, call, *tt.reply)
			}
			got, err := winhost.NewISCSI(e).ReportLUNs(context.Background(), iscIQN)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
			case tt.says != "":
				if err == nil || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("error %v, want one saying %q", err, tt.says)
				}
			default:
				if err != nil || !slices.Equal(got, tt.want) {
					t.Fatalf("got %v, %v; want %v", got, err, tt.want)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
