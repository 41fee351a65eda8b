package iscsi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

// sessionsOf answers Sessions and SessionDisks from a table: session ID to
// the disks it reaches.
type sessionsOf struct {
	host.ISCSI
	disks map[string][]uint32
	err   error
}

func (s sessionsOf) Sessions(context.Context, string) ([]host.ISCSISession, error) {
	var out []host.ISCSISession
	for id := range s.disks {
		out = append(out, host.ISCSISession{SessionID: id})
	}
	return out, s.err
}

func (s sessionsOf) SessionDisks(_ context.Context, ss host.ISCSISession) ([]uint32, error) {
	return s.disks[ss.SessionID], nil
}

// Found by review: the write guard compared the disk number, not the
// session the LUN was found through, so a disk number that another LUN
// (or another target's disk) took after the session dropped and came
// back was written to. The LUN's disk read again must still be reached
// through a session it was found through, at the same LUN.
func TestStillTheLUN(t *testing.T) {
	const iqn, lun = "iqn.2024-01.test.array:a", 1
	loc := func(l int) string { return fmt.Sprintf("Integrated : Adapter 2 : Port 0 : Target 0 : LUN %d", l) }
	unreadable := errors.New("WMI timeout")
	tests := []struct {
		name     string
		sessions map[string][]uint32
		err      error
		location string
		want     error
		in       []string
	}{
		{"the same session", map[string][]uint32{"s1": {5}}, nil, loc(lun), nil, nil},
		{"one of the paths it was found through", map[string][]uint32{"s2": {5}, "s9": {5}}, nil, loc(lun), nil, nil},
		{"the session dropped and came back", map[string][]uint32{"s3": {5}}, nil, loc(lun), host.ErrConflict,
			[]string{"disk 5 was found as LUN 1 of target " + iqn + " through session s1, s2", "now reached through session s3", "refusing to write"}},
		{"the number is no disk of the target now", map[string][]uint32{"s1": {6}}, nil, loc(lun), host.ErrConflict,
			[]string{"now reached through no session of the target"}},
		{"no session at all", map[string][]uint32{}, nil, loc(lun), host.ErrConflict, []string{"no session of the target"}},
		{"another LUN under the number", map[string][]uint32{"s1": {5}}, nil, loc(2), host.ErrConflict,
			[]string{"found as LUN 1", `now at location "` + loc(2) + `"`}},
		{"no SCSI location", map[string][]uint32{"s1": {5}}, nil, "", host.ErrConflict, []string{`now at location ""`}},
		{"the sessions cannot be read", nil, unreadable, loc(lun), unreadable, []string{"read the sessions of target " + iqn + " again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hosttest.Unimplemented()
			h.ISCSI = sessionsOf{ISCSI: h.ISCSI, disks: tt.sessions, err: tt.err}
			b := &Backend{h: h}
			err := b.stillTheLUN(iqn, lun, []string{"s1", "s2"})(context.Background(), host.Disk{Number: 5, Location: tt.location})
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("check = %v", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("check = %v, want %v", err, tt.want)
			}
			for _, s := range tt.in {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("check = %v, want it to say %q", err, s)
				}
			}
		})
	}
}
