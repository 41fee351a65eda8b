package inventory

import (
	"context"
	"errors"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// backing fills in what backs the volume, from its record and the host.
func (t *taker) backing(ctx context.Context, v *Volume, e journal.Entry, info host.PathInfo) {
	var err error
	switch contract.Kind(e.Backend) {
	case contract.KindDisk:
		v.Disk, err = t.diskBacking(ctx, e, info)
		t.rootAccess(ctx, v, v.Disk, e)
	case contract.KindSMB:
		v.SMB, err = t.smbBacking(ctx, v, e, info)
	case contract.KindISCSI:
		v.ISCSI, err = t.iscsiBacking(ctx, v, e, info)
		if v.ISCSI != nil {
			t.rootAccess(ctx, v, v.ISCSI.Disk, e)
		}
	}
	if errors.Is(err, backend.ErrNoRecord) {
		v.problem("NoRecord", err.Error())
		if v.State == StateHealthy {
			v.State = StateDegraded
		}
	}
}

// mounted describes the volume mounted at a staging path and its disk;
// nil when nothing is mounted there.
func (t *taker) mounted(ctx context.Context, staging string, info host.PathInfo) *DiskBacking {
	if info.Kind != host.PathMountPoint {
		return nil
	}
	b := &DiskBacking{VolumeGUID: info.Target, MountPoint: staging}
	num, err := t.diskNumber(ctx, info.Target)
	switch {
	case errors.Is(err, host.ErrNotFound):
		return b // the disk is offline or gone: the volume's problems say which
	case err != nil:
		t.incomplete("disk of volume "+info.Target, err)
		return b
	}
	d, err := t.h.Disks.Get(ctx, num)
	switch {
	case err == nil:
		b.disk(d)
	case !errors.Is(err, host.ErrNotFound):
		t.incomplete("disk "+itoa(num), err)
	}
	return b
}

func (b *DiskBacking) disk(d host.Disk) {
	n := d.Number
	b.DiskNumber, b.Serial, b.Offline, b.ReadOnly = &n, strings.TrimSpace(d.SerialNumber), d.IsOffline, d.IsReadOnly
}

func (t *taker) diskBacking(ctx context.Context, e journal.Entry, info host.PathInfo) (*DiskBacking, error) {
	b := t.mounted(ctx, e.StagingPath, info)
	if b == nil {
		b = &DiskBacking{}
	}
	rec, err := disk.DecodeRecord(e)
	if err != nil {
		return b, err
	}
	b.Selector = rec.Storage()
	if b.DiskNumber != nil || t.disks == nil {
		return b, nil
	}
	// Nothing mounted, or the disk hides its volume (offline): place the
	// disk by the selector the stage recorded.
	d, err := t.disks.Locate(ctx, e)
	switch {
	case err == nil:
		b.disk(d)
	case !errors.Is(err, host.ErrNotFound) && !errors.Is(err, host.ErrConflict) && !errors.Is(err, backend.ErrNoRecord):
		t.incomplete("disk of volume "+e.VolumeID, err)
	}
	return b, nil
}

func (t *taker) smbBacking(ctx context.Context, v *Volume, e journal.Entry, info host.PathInfo) (*SMBBacking, error) {
	rec, err := smb.DecodeRecord(e)
	if err != nil {
		return nil, err
	}
	b := &SMBBacking{Share: rec.Share, Directory: rec.UNC, User: rec.User}
	if info.Kind == host.PathSymlink {
		b.LinkTarget = info.Target
	}
	m, err := t.h.SMB.Mapping(ctx, rec.Share)
	switch {
	case err == nil:
		b.Mapping, b.RequirePrivacy = m.Status.String(), m.RequirePrivacy
	case !errors.Is(err, host.ErrNotFound):
		t.incomplete("global mapping of "+rec.Share, err)
	}
	if user, ok := t.mappingNotes(ctx)[rec.Share]; ok && b.Mapping != "" {
		b.MappedByPlugin, b.MappingUser = true, user
		made := backend.Credential{User: user, SecretMAC: t.secretNotes(ctx)[rec.Share]}
		b.MappingSecret = v.credential("the share's global mapping", "user", backend.AccountNames, made, rec.Credential())
		if made.Compare(rec.Credential(), backend.AccountNames) == backend.CredentialSame {
			macs := t.secretNotes(ctx)
			if other := smb.ServerDrift(rec.Share, rec.User, rec.SecretMAC, t.mappingNotes(ctx), macs, t.usedShares()); other != "" {
				v.credential("the global mapping of "+other+" (another share of the server, which Windows may serve through the same SMB session)",
					"user", backend.AccountNames, backend.Credential{User: rec.User, SecretMAC: macs[other]}, rec.Credential())
			}
		}
	}
	return b, nil
}

func (t *taker) iscsiBacking(ctx context.Context, v *Volume, e journal.Entry, info host.PathInfo) (*ISCSIBacking, error) {
	rec, err := iscsi.DecodeRecord(e)
	if err != nil {
		return nil, err
	}
	b := &ISCSIBacking{Target: rec.IQN, LUN: rec.LUN, Multipath: rec.Multipath, Portals: []string{}, Sessions: []Session{}, CHAPUser: rec.CHAPUser}
	for _, p := range rec.Portals {
		b.Portals = append(b.Portals, iscsi.PortalID(p))
	}
	sessions, err := t.h.ISCSI.Sessions(ctx, rec.IQN)
	if err != nil {
		t.incomplete("sessions of target "+rec.IQN, err)
	}
	for _, s := range sessions {
		b.Sessions = append(b.Sessions, Session{ID: s.SessionID, Portal: iscsi.PortalID(s.TargetPortal), Connected: s.IsConnected, Persistent: s.IsPersistent})
	}
	if made, ok := t.sessionCredentials(ctx)[strings.ToLower(rec.IQN)]; ok && len(sessions) > 0 {
		u := made.User
		b.SessionUser = &u
		b.SessionSecret = v.credential("the target's sessions", "CHAP user", backend.CHAPNames, made, rec.Credential())
	}
	b.Disk = t.mounted(ctx, e.StagingPath, info)
	if b.Disk == nil && len(sessions) > 0 {
		// Not mounted: the LUN's disk, if the target's sessions reach it.
		if d, ok := t.lunDisk(ctx, rec.IQN, sessions, rec.LUN); ok {
			b.Disk = &DiskBacking{}
			b.Disk.disk(d)
		}
	}
	return b, nil
}

// lunDisk returns the disk reached through the sessions of target iqn
// whose location names the LUN.
func (t *taker) lunDisk(ctx context.Context, iqn string, sessions []host.ISCSISession, lun uint32) (host.Disk, bool) {
	nums := t.disksOfTarget(ctx, iqn, sessions)
	if len(nums) == 0 {
		return host.Disk{}, false
	}
	disks, err := t.h.Disks.List(ctx)
	if err != nil {
		t.incomplete("list disks", err)
		return host.Disk{}, false
	}
	for _, d := range disks {
		if loc, ok := host.ParseLocation(d.Location); ok && nums[d.Number] && *loc.LUN == lun {
			return d, true
		}
	}
	return host.Disk{}, false
}

// disksOfTarget returns the numbers of the disks reached through the
// sessions of target iqn, asking the host once per target however many
// parts of the report need them.
func (t *taker) disksOfTarget(ctx context.Context, iqn string, sessions []host.ISCSISession) map[uint32]bool {
	if nums, ok := t.targetDisks[iqn]; ok {
		return nums
	}
	nums := map[uint32]bool{}
	t.targetDisks[iqn] = nums
	for _, s := range sessions {
		ds, err := t.h.ISCSI.SessionDisks(ctx, s)
		if err != nil {
			t.incomplete("disks of iSCSI session "+s.SessionID, err)
			continue
		}
		for _, n := range ds {
			nums[n] = true
		}
	}
	return nums
}

// usedShares returns the share roots staged SMB volumes use (read once).
func (t *taker) usedShares() map[string]bool {
	if t.shares == nil {
		t.shares = smb.UsedShares(t.entries)
	}
	return t.shares
}

// mappingNotes returns the SMB backend's mapping notes, by share root
// (read once).
func (t *taker) mappingNotes(ctx context.Context) map[string]string {
	if t.notes != nil {
		return t.notes
	}
	t.notes = map[string]string{}
	notes, err := t.in.Journal.Notes(ctx, smb.MappingNotePrefix)
	if err != nil {
		t.incomplete("notes of the SMB mappings", err)
		return t.notes
	}
	for k, v := range notes {
		t.notes[strings.TrimPrefix(k, smb.MappingNotePrefix)] = v
	}
	return t.notes
}
