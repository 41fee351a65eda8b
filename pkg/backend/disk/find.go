package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Find returns the one disk the selector names. When no disk matches, it
// rescans and looks again until the disk appears or waiting longer would run
// past ctx's deadline; then it fails with host.ErrNotFound. Two matching
// disks, or a match on the boot/system disk, fail with host.ErrConflict.
func (b *Backend) Find(ctx context.Context, sel contract.DiskSelector) (host.Disk, error) {
	var found host.Disk
	err := backend.Poll(ctx, b.opts.Backoff, func(ctx context.Context, attempt int) error {
		if attempt > 0 {
			if err := b.h.Disks.Rescan(ctx); err != nil {
				return err
			}
		}
		disks, err := b.h.Disks.List(ctx)
		if err != nil {
			return err
		}
		d, err := b.match(ctx, disks, sel)
		if err != nil {
			return err
		}
		found = d
		return nil
	})
	if errors.Is(err, backend.ErrRetry) {
		return host.Disk{}, fmt.Errorf("no disk matches %s: %w", describe(sel), host.ErrNotFound)
	}
	return found, err
}

// match picks the disk from disks. It returns an error wrapping
// backend.ErrRetry when nothing matches.
func (b *Backend) match(ctx context.Context, disks []host.Disk, sel contract.DiskSelector) (host.Disk, error) {
	log := klog.FromContext(ctx)
	var matches, critical []host.Disk
	for _, d := range disks {
		ok, err := b.matches(ctx, d, sel)
		if err != nil {
			// One unreadable disk must not break the lookup of the others.
			log.V(4).Info("Skipping disk whose identity cannot be read", "diskNumber", d.Number, "err", err)
			continue
		}
		if !ok {
			continue
		}
		if d.IsCritical() {
			critical = append(critical, d)
			continue
		}
		matches = append(matches, d)
	}
	switch {
	case len(critical) > 0 && len(matches) == 0:
		return host.Disk{}, fmt.Errorf("%s matches disk %d, which is the boot or system disk; refusing to use it: %w",
			describe(sel), critical[0].Number, host.ErrConflict)
	case len(matches) == 0:
		return host.Disk{}, fmt.Errorf("no disk matches %s: %w", describe(sel), backend.ErrRetry)
	case len(matches) > 1:
		nums := make([]string, len(matches))
		for i, d := range matches {
			nums[i] = fmt.Sprint(d.Number)
		}
		return host.Disk{}, fmt.Errorf("%s matches disks %s; refusing to guess: %w",
			describe(sel), strings.Join(nums, ", "), host.ErrConflict)
	}
	return matches[0], nil
}

func (b *Backend) matches(ctx context.Context, d host.Disk, sel contract.DiskSelector) (bool, error) {
	if sel.Number != nil && d.Number != *sel.Number {
		return false, nil
	}
	if sel.Serial != "" && !matchString(d.SerialNumber, sel.Serial, sel.SerialMatch) {
		return false, nil
	}
	if sel.Location != "" && !strings.EqualFold(strings.TrimSpace(d.Location), strings.TrimSpace(sel.Location)) {
		return false, nil
	}
	if sel.LUN != nil || sel.Target != nil || sel.Bus != nil {
		loc, ok := host.ParseLocation(d.Location)
		if !ok {
			return false, nil
		}
		if !eq(sel.LUN, loc.LUN) || !eq(sel.Target, loc.Target) || !eq(sel.Bus, loc.Bus) {
			return false, nil
		}
	}
	if sel.Page83 != "" {
		// The page 83 identifier costs an IOCTL per disk: read it last,
		// only for disks every cheaper field already matched, and never
		// for the boot/system disk.
		if d.IsCritical() {
			return false, nil
		}
		id, err := b.h.Disks.Page83(ctx, d)
		if errors.Is(err, host.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !matchPage83(id, sel.Page83, sel.Page83Match) {
			return false, nil
		}
	}
	return true, nil
}

// eq is true when want is unset or equals got.
func eq(want, got *uint32) bool {
	if want == nil {
		return true
	}
	return got != nil && *got == *want
}

// normalizeSerial trims what disks commonly pad serials with (spaces, and a
// trailing '.' on AWS NVMe serials such as "vol02190fee5da4d75e3_00000001.",
// csi-proxy PR #116).
func normalizeSerial(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), ".")
}

func matchString(have, want string, mode contract.MatchMode) bool {
	have, want = normalizeSerial(have), normalizeSerial(want)
	switch mode {
	case contract.MatchContains:
		return want != "" && strings.Contains(strings.ToLower(have), strings.ToLower(want))
	case contract.MatchLastField:
		f := strings.Fields(have)
		return len(f) > 0 && strings.EqualFold(f[len(f)-1], want)
	default:
		return strings.EqualFold(have, want)
	}
}

// matchPage83 compares page 83 identifiers. Binary identifiers are hex
// strings; the contract lower-cases hex selectors and drops dashes, so the
// host's value gets the same treatment when it is hex.
func matchPage83(have, want string, mode contract.MatchMode) bool {
	if mode == contract.MatchExact {
		h := strings.TrimSpace(have)
		if isHex(strings.ReplaceAll(h, "-", "")) {
			h = strings.ToLower(strings.ReplaceAll(h, "-", ""))
		}
		return h == strings.TrimSpace(want)
	}
	return matchString(have, want, mode)
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// describe renders a selector for messages.
func describe(sel contract.DiskSelector) string {
	var parts []string
	if sel.Serial != "" {
		parts = append(parts, "serial"+matchOp(sel.SerialMatch)+quote(sel.Serial))
	}
	if sel.Page83 != "" {
		parts = append(parts, "page83"+matchOp(sel.Page83Match)+quote(sel.Page83))
	}
	if sel.LUN != nil {
		parts = append(parts, fmt.Sprintf("lun=%d", *sel.LUN))
	}
	if sel.Target != nil {
		parts = append(parts, fmt.Sprintf("target=%d", *sel.Target))
	}
	if sel.Bus != nil {
		parts = append(parts, fmt.Sprintf("bus=%d", *sel.Bus))
	}
	if sel.Location != "" {
		parts = append(parts, "location="+quote(sel.Location))
	}
	if sel.Number != nil {
		parts = append(parts, fmt.Sprintf("number=%d", *sel.Number))
	}
	if len(parts) == 0 {
		return "an empty disk selector"
	}
	return "disk selector " + strings.Join(parts, ",")
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// matchOp renders a match mode between a field and its value.
func matchOp(m contract.MatchMode) string {
	switch m {
	case contract.MatchContains:
		return " contains "
	case contract.MatchLastField:
		return "'s last field="
	}
	return "="
}
