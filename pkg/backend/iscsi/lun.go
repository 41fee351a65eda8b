package iscsi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// mpioHint is how to make Windows present one disk for all paths of a LUN.
const mpioHint = "install the Multipath-IO feature and let MSDSM claim iSCSI disks " +
	"(Enable-MSDSMAutomaticClaim -BusType iSCSI, then reboot)"

// progressEvery is how often at most a stage waiting for its LUN's disk
// says so at -v=2.
const progressEvery = 5 * time.Second

// findLUN returns the disk behind the target's sessions whose Location
// names the LUN, with the identifiers of the sessions it is reached
// through. When there is none yet it rescans and looks again until
// the disk appears or waiting longer would run past ctx's deadline; then it
// fails with host.ErrNotFound, naming the LUNs whose disks did appear.
// Several distinct disks for the LUN (one per path, MPIO not claiming
// them) fail with host.ErrConflict.
//
// A LUN the target does not have never appears: after the first rescan
// that does not surface it, the target is asked for its LUNs (SCSI REPORT
// LUNS, host.ISCSI.ReportLUNs); a LUN absent from its answer fails at once
// with host.ErrNotFound naming the LUNs it has. A LUN it lists is waited
// for (Windows may surface a LUN's disk later than the others), and so is
// any LUN when the target's answer is unknown: the wait is never cut short
// on a guess. While it waits, the stage logs its progress at -v=2, at most
// every progressEvery.
//
// Failing at once is not too eager. NodeStageVolume comes after
// ControllerPublishVolume has returned success ("the CO MUST guarantee
// that this RPC is called after ControllerPublishVolume ... returns a
// success", container-storage-interface/spec spec.md at v1.9.0,
// NodeStageVolume), so the controller has mapped the LUN by then, and
// REPORT LUNS is the target's inventory at the moment it answers (SPC-4
// REPORT LUNS). An array that applies the mapping a moment after its API
// returns costs one failed attempt: NOT_FOUND's recovery is the caller's
// retry "with exponential back off" (the spec's NodeStageVolume Errors),
// and kubelet retries a failed MountDevice whatever its code, 500 ms
// after the first failure and twice as long after each next one
// (kubernetes/kubernetes pkg/util/goroutinemap/exponentialbackoff). A
// retry logs in again and finds the LUN. NOT_FOUND rather than
// UNAVAILABLE also tells kubelet the truth about the node: the stage
// undid its work, and kubelet takes NOT_FOUND for a final error (the
// volume is not left "uncertain"; kubernetes/kubernetes
// pkg/volume/csi/csi_client.go isFinalError), where UNAVAILABLE would
// leave it uncertain.
//
// Uncertain: that MSFT_Disk.Location of an MPIO disk carries the LUN as it
// does for a single-path iSCSI disk; democratic-csi reads the LUN from
// Win32_DiskDrive.SCSILogicalUnit instead (democratic-csi/democratic-csi@8a4a28a
// src/utils/windows.js).
func (b *Backend) findLUN(ctx context.Context, iqn string, lun uint32) (host.Disk, []string, error) {
	log := klog.FromContext(ctx)
	start := time.Now()
	var (
		found    host.Disk
		via      []string // the sessions that reach it
		surfaced []uint32 // the LUNs of the target's disks at the last look
		reported []uint32 // the target's REPORT LUNS answer; nil while unknown
		asked    bool
		logged   time.Time
	)
	err := backend.Poll(ctx, b.opts.Backoff, func(ctx context.Context, attempt int) error {
		if attempt > 0 {
			if err := b.h.Disks.Rescan(ctx); err != nil {
				return err
			}
		}
		var matches []host.Disk
		var reach map[uint32][]string
		var err error
		if surfaced, matches, reach, err = b.lunDisks(ctx, iqn, lun); err != nil {
			return err
		}
		switch len(matches) {
		case 0:
		case 1:
			found, via = matches[0], reach[matches[0].Number]
			return nil
		default:
			return fmt.Errorf("LUN %d of target %s appears as %s, one per path: Windows is not combining the paths; %s: %w",
				lun, iqn, disk.Names(matches), mpioHint, host.ErrConflict)
		}
		if attempt == 0 {
			return fmt.Errorf("no disk of target %s is LUN %d yet: %w", iqn, lun, backend.ErrRetry)
		}
		if !asked {
			asked = true
			luns, err := b.h.ISCSI.ReportLUNs(ctx, iqn)
			switch {
			case err == nil && !slices.Contains(luns, lun):
				return fmt.Errorf("LUN %d of target %s does not exist: the target reports %s to this node (SCSI REPORT LUNS); "+
					"check the volume's lun, or the LUN's mapping to this node's initiator on the array: %w",
					lun, iqn, lunsText(luns), host.ErrNotFound)
			case err == nil:
				reported = luns
			default:
				log.V(4).Info("Cannot ask the target which LUNs it has; waiting for the LUN's disk", "err", err)
			}
		}
		if now := time.Now(); now.Sub(logged) >= progressEvery {
			logged = now
			log.V(2).Info("Waiting for the LUN's disk to appear", "waited", now.Sub(start).Round(time.Millisecond),
				"surfacedLUNs", surfaced, "reportedLUNs", reported)
		}
		return fmt.Errorf("no disk of target %s is LUN %d yet: %w", iqn, lun, backend.ErrRetry)
	})
	if errors.Is(err, backend.ErrRetry) {
		known := "the target's sessions reach " + lunsText(surfaced)
		if reported != nil {
			known += "; the target reports " + lunsText(reported)
		}
		return host.Disk{}, nil, fmt.Errorf("LUN %d of target %s: no disk appeared after login (%s; %s): %w",
			lun, iqn, known, err.Error(), host.ErrNotFound)
	}
	if err == nil {
		klog.FromContext(ctx).V(4).Info("Found the LUN's disk", "diskNumber", found.Number)
	}
	return found, via, err
}

// lunDisks returns the LUNs of the disks reached through the target's
// sessions, sorted, those disks that are LUN lun, and the sessions that
// reach each disk (sessionDisks).
func (b *Backend) lunDisks(ctx context.Context, iqn string, lun uint32) (surfaced []uint32, matches []host.Disk, reach map[uint32][]string, err error) {
	reach, err = b.sessionDisks(ctx, iqn)
	if err != nil || len(reach) == 0 {
		return nil, nil, nil, err
	}
	disks, err := b.h.Disks.List(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, d := range disks {
		if len(reach[d.Number]) == 0 {
			continue
		}
		loc, ok := host.ParseLocation(d.Location)
		if !ok {
			continue
		}
		surfaced = append(surfaced, *loc.LUN)
		if *loc.LUN == lun {
			matches = append(matches, d)
		}
	}
	slices.Sort(surfaced)
	return slices.Compact(surfaced), matches, reach, nil
}

// lunsText names a set of LUNs for messages: "LUNs 0, 1", "LUN 0", "no
// LUN".
func lunsText(luns []uint32) string {
	switch len(luns) {
	case 0:
		return "no LUN"
	case 1:
		return fmt.Sprintf("LUN %d", luns[0])
	}
	parts := make([]string, len(luns))
	for i, l := range luns {
		parts[i] = fmt.Sprint(l)
	}
	return "LUNs " + strings.Join(parts, ", ")
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
