package iscsi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// mpioHint is how to make Windows present one disk for all paths of a LUN.
const mpioHint = "install the Multipath-IO feature and let MSDSM claim iSCSI disks " +
	"(Enable-MSDSMAutomaticClaim -BusType iSCSI, then reboot)"

// findLUN returns the disk behind the target's sessions whose Location
// names the LUN, with the identifiers of the sessions it is reached
// through. When there is none yet it rescans and looks again until
// the disk appears or waiting longer would run past ctx's deadline; then it
// fails with host.ErrNotFound. Several distinct disks for the LUN (one per
// path, MPIO not claiming them) fail with host.ErrConflict.
//
// Uncertain: that MSFT_Disk.Location of an MPIO disk carries the LUN as it
// does for a single-path iSCSI disk; democratic-csi reads the LUN from
// Win32_DiskDrive.SCSILogicalUnit instead (democratic-csi/democratic-csi@8a4a28a
// src/utils/windows.js).
func (b *Backend) findLUN(ctx context.Context, iqn string, lun uint32) (host.Disk, []string, error) {
	var found host.Disk
	var via []string
	err := backend.Poll(ctx, b.opts.Backoff, func(ctx context.Context, attempt int) error {
		if attempt > 0 {
			if err := b.h.Disks.Rescan(ctx); err != nil {
				return err
			}
		}
		nums, err := b.sessionDisks(ctx, iqn)
		if err != nil {
			return err
		}
		if len(nums) == 0 {
			return fmt.Errorf("no disk is reached through target %s yet: %w", iqn, backend.ErrRetry)
		}
		disks, err := b.h.Disks.List(ctx)
		if err != nil {
			return err
		}
		var matches []host.Disk
		for _, d := range disks {
			if len(nums[d.Number]) == 0 {
				continue
			}
			if loc, ok := host.ParseLocation(d.Location); ok && *loc.LUN == lun {
				matches = append(matches, d)
			}
		}
		switch len(matches) {
		case 0:
			return fmt.Errorf("no disk of target %s is LUN %d yet: %w", iqn, lun, backend.ErrRetry)
		case 1:
			found, via = matches[0], nums[matches[0].Number]
			return nil
		}
		numbers := make([]string, len(matches))
		for i, d := range matches {
			numbers[i] = fmt.Sprint(d.Number)
		}
		return fmt.Errorf("LUN %d of target %s appears as disks %s, one per path: Windows is not combining the paths; %s: %w",
			lun, iqn, strings.Join(numbers, ", "), mpioHint, host.ErrConflict)
	})
	if errors.Is(err, backend.ErrRetry) {
		return host.Disk{}, nil, fmt.Errorf("LUN %d of target %s: no disk appeared after login (%s): %w", lun, iqn, err.Error(), host.ErrNotFound)
	}
	if err == nil {
		klog.FromContext(ctx).V(4).Info("Found the LUN's disk", "diskNumber", found.Number)
	}
	return found, via, err
}

// stillTheLUN is the stage's own check of the LUN's disk read again before
// the disk backend first writes to it (disk.PrepareRequest.Confirm): it is
// still reached through one of the sessions it was found through (via),
// and its Location still names the LUN. A session that dropped and came
// back is a new session (a new SessionIdentifier), and the disk number a
// LUN had may then be another disk's: nothing is written to it; the retry
// finds the LUN again.
func (b *Backend) stillTheLUN(iqn string, lun uint32, via []string) func(context.Context, host.Disk) error {
	return func(ctx context.Context, now host.Disk) error {
		nums, err := b.sessionDisks(ctx, iqn)
		if err != nil {
			return fmt.Errorf("read the sessions of target %s again before the first write: %w", iqn, err)
		}
		reached := nums[now.Number]
		if !slices.ContainsFunc(reached, func(id string) bool { return slices.Contains(via, id) }) {
			return fmt.Errorf("disk %d was found as LUN %d of target %s through session %s, and is now reached through %s: "+
				"the session it came from is gone, and the number may be another disk's; refusing to write to it: %w",
				now.Number, lun, iqn, strings.Join(via, ", "), sessionList(reached), host.ErrConflict)
		}
		if loc, ok := host.ParseLocation(now.Location); !ok || loc.LUN == nil || *loc.LUN != lun {
			return fmt.Errorf("disk %d was found as LUN %d of target %s and is now at location %q; refusing to write to it: %w",
				now.Number, lun, iqn, now.Location, host.ErrConflict)
		}
		return nil
	}
}

func sessionList(ids []string) string {
	if len(ids) == 0 {
		return "no session of the target"
	}
	return "session " + strings.Join(ids, ", ")
}

// targetDisks returns the numbers of the disks reached through the
// target's sessions.
func (b *Backend) targetDisks(ctx context.Context, iqn string) (map[uint32]bool, error) {
	byDisk, err := b.sessionDisks(ctx, iqn)
	if err != nil {
		return nil, err
	}
	nums := make(map[uint32]bool, len(byDisk))
	for n := range byDisk {
		nums[n] = true
	}
	return nums, nil
}

// sessionDisks returns the disks reached through the target's sessions,
// each with the identifiers of the sessions that reach it.
func (b *Backend) sessionDisks(ctx context.Context, iqn string) (map[uint32][]string, error) {
	sessions, err := b.h.ISCSI.Sessions(ctx, iqn)
	if err != nil {
		return nil, err
	}
	nums := map[uint32][]string{}
	for _, s := range sessions {
		ns, err := b.h.ISCSI.SessionDisks(ctx, s)
		if errors.Is(err, host.ErrNotFound) {
			continue // logged out in between
		}
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			nums[n] = append(nums[n], s.SessionID)
		}
	}
	return nums, nil
}

// verifyStaged answers a stage whose staging path already holds volume
// guid: it must be the volume of disk d, the LUN's disk. A disk that came
// back offline or read-only (a LUN reappears offline under the SAN policy
// after a reboot or a new login: docs/windows.md#san-policy) is brought back
// first, which is also what makes its volume visible again.
func (b *Backend) verifyStaged(ctx context.Context, d host.Disk, guid, staging string, spec *contract.ISCSISpec) error {
	log := klog.FromContext(ctx).WithValues("diskNumber", d.Number, "volumeGUID", guid)
	if d.IsReadOnly || d.IsOffline {
		if d.IsCritical() {
			return fmt.Errorf("disk %d is the boot or system disk: %w", d.Number, host.ErrConflict)
		}
		if err := b.disks.BringUp(ctx, d); err != nil {
			return err
		}
	}
	var num uint32
	// The volume of a disk just brought online may take a moment to be
	// reported; a few quick looks, not the whole deadline, because a
	// volume of another disk never appears.
	err := backend.Poll(ctx, b.opts.Backoff, func(ctx context.Context, attempt int) error {
		n, err := b.h.Volumes.DiskNumber(ctx, guid)
		if errors.Is(err, host.ErrNotFound) && attempt < verifyAttempts {
			return fmt.Errorf("volume %s is not visible: %w", guid, backend.ErrRetry)
		}
		num = n
		return err
	})
	switch {
	case errors.Is(err, host.ErrNotFound), errors.Is(err, backend.ErrRetry):
		return fmt.Errorf("staging path %s holds volume %s, which is not on LUN %d of target %s (disk %d): %w",
			staging, guid, spec.LUN, spec.IQN, d.Number, host.ErrAlreadyExists)
	case err != nil:
		return fmt.Errorf("staging path %s: %w", staging, err)
	case num != d.Number:
		return fmt.Errorf("staging path %s holds volume %s of disk %d, not of disk %d (LUN %d of target %s): %w",
			staging, guid, num, d.Number, spec.LUN, spec.IQN, host.ErrAlreadyExists)
	}
	log.V(4).Info("Volume already staged")
	return nil
}

// verifyAttempts bounds the looks for a volume in verifyStaged.
const verifyAttempts = 5
