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
// disks, a disk that might match but whose identity cannot be read for
// certain, or a match on the boot, system or a known temporary disk fail
// with host.ErrConflict, naming the disks.
func (b *Backend) Find(ctx context.Context, sel contract.DiskSelector) (host.Disk, error) {
	c, err := b.find(ctx, sel)
	return c.disk, err
}

// choice is a disk Find chose, with what it was chosen by, so that the
// stage can check the disk still carries that identity before it writes
// to it (writeGuard).
type choice struct {
	disk  host.Disk
	sel   contract.DiskSelector
	scope scope
}

func (b *Backend) find(ctx context.Context, sel contract.DiskSelector) (choice, error) {
	if err := checkSelector(sel); err != nil {
		return choice{}, err
	}
	var found choice
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
		c, err := b.choose(ctx, disks, sel)
		if err != nil {
			return err
		}
		found = c
		return nil
	})
	var nm *noMatch
	if errors.As(err, &nm) {
		return choice{}, fmt.Errorf("%s: %w", nm.msg, host.ErrNotFound)
	}
	return found, err
}

// noMatch is a lookup that found nothing yet: it asks backend.Poll for
// another attempt, and becomes host.ErrNotFound when the wait ends.
type noMatch struct{ msg string }

func (e *noMatch) Error() string { return e.msg }
func (e *noMatch) Unwrap() error { return backend.ErrRetry }

func noMatchf(format string, args ...any) error { return &noMatch{msg: fmt.Sprintf(format, args...)} }

// match picks the disk from disks. It returns an error wrapping
// backend.ErrRetry when nothing matches.
func (b *Backend) match(ctx context.Context, disks []host.Disk, sel contract.DiskSelector) (host.Disk, error) {
	if err := checkSelector(sel); err != nil {
		return host.Disk{}, err
	}
	c, err := b.choose(ctx, disks, sel)
	return c.disk, err
}

// candidate is a disk that is, or may be, the one the selector names.
type candidate struct {
	disk host.Disk
	why  string // for an uncertain match: what cannot be told
}

// choose applies the selector to every disk and the guards to the result:
// exactly one disk must match for certain; a disk that may match but whose
// identity cannot be read for certain, two matches, or a match on a disk
// that is never chosen (boot, system, temporary) refuse.
func (b *Backend) choose(ctx context.Context, disks []host.Disk, sel contract.DiskSelector) (choice, error) {
	sc, err := b.scopeOf(ctx, disks, sel)
	if err != nil {
		return choice{}, err
	}
	var matches, uncertain, excluded []candidate
	for _, d := range disks {
		v, why := b.judge(ctx, d, sel, sc)
		switch v {
		case no:
			continue
		case maybe:
			uncertain = append(uncertain, candidate{d, why})
			continue
		}
		if reason, ok := neverChosen(d); ok {
			excluded = append(excluded, candidate{d, reason})
			continue
		}
		matches = append(matches, candidate{disk: d})
	}
	if shared := controllerShared(disks, sel); len(shared) > 1 {
		return choice{}, fmt.Errorf("%s names a controller that reaches %s; its serial alone tells them apart no more than "+
			"the controller does (add diskNVMeNSID); refusing to guess: %w", describe(sel), listCandidates(shared), host.ErrConflict)
	}
	switch {
	case len(uncertain) > 0:
		return choice{}, fmt.Errorf("%s cannot be told apart for certain: %s; refusing to guess: %w",
			describe(sel), listCandidates(append(matches, uncertain...)), host.ErrConflict)
	case len(matches) > 1:
		return choice{}, fmt.Errorf("%s matches %s; refusing to guess: %w",
			describe(sel), listCandidates(matches), host.ErrConflict)
	case len(matches) == 1:
		return choice{disk: matches[0].disk, sel: sel, scope: sc}, nil
	case len(excluded) > 0:
		return choice{}, fmt.Errorf("%s matches %s; refusing to use it: %w",
			describe(sel), listCandidates(excluded), host.ErrConflict)
	}
	if err := sc.failClosed(disks, sel); err != nil {
		return choice{}, err
	}
	return choice{}, noMatchf("no disk matches %s%s", describe(sel), sc.notFoundHint())
}

// controllerShared returns, for a selector that names only an adapter
// serial, every disk reached through that adapter, boot and system disks
// included. AdapterSerialNumber is the controller's (for NVMe, shared by
// all its namespaces), so it names a disk only on a controller that has no
// other: where the OS namespace shares it, the one data namespace seen now
// is no more certain than any other.
func controllerShared(disks []host.Disk, sel contract.DiskSelector) []candidate {
	rest := sel
	rest.AdapterSerial = ""
	if sel.AdapterSerial == "" || !rest.IsZero() {
		return nil
	}
	var out []candidate
	for _, d := range disks {
		if matchString(d.AdapterSerialNumber, sel.AdapterSerial, contract.MatchExact) {
			out = append(out, candidate{disk: d})
		}
	}
	return out
}

// neverChosen reports the disks no selector may choose: the boot and system
// disks, and the temporary disks a cloud attaches to the instance itself,
// whose contents do not survive it (ephemeral).
func neverChosen(d host.Disk) (string, bool) {
	if d.IsCritical() {
		return "the boot or system disk", true
	}
	return ephemeral(d)
}

// listCandidates names disks for messages: number, serial, location and
// why a match is uncertain.
func listCandidates(cs []candidate) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = diskName(c.disk)
		if c.why != "" {
			parts[i] += " (" + c.why + ")"
		}
	}
	what := "disk "
	if len(cs) > 1 {
		what = "disks "
	}
	return what + strings.Join(parts, ", ")
}

// Names names disks for messages as a lookup names its candidates
// (listCandidates): `disks 3 [serial "S", location "L"], 4 [...]`. Other
// backends that refuse to choose among disks name them so too.
func Names(ds []host.Disk) string {
	cs := make([]candidate, len(ds))
	for i, d := range ds {
		cs[i] = candidate{disk: d}
	}
	return listCandidates(cs)
}

// diskName identifies a disk in messages as Get-Disk shows it.
func diskName(d host.Disk) string {
	var attrs []string
	if s := strings.TrimSpace(d.SerialNumber); s != "" {
		attrs = append(attrs, "serial "+quote(s))
	}
	if d.Location != "" {
		attrs = append(attrs, "location "+quote(d.Location))
	} else if d.Path != "" {
		attrs = append(attrs, "path "+quote(d.Path))
	}
	if len(attrs) == 0 {
		return fmt.Sprint(d.Number)
	}
	return fmt.Sprintf("%d [%s]", d.Number, strings.Join(attrs, ", "))
}

// describe renders a selector for messages.
func describe(sel contract.DiskSelector) string {
	num := func(p *uint32) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	quoted := func(s string) string {
		if s == "" {
			return ""
		}
		return quote(s)
	}
	var parts []string
	for _, f := range []struct{ name, value string }{
		{"serial" + matchOp(sel.SerialMatch), quoted(sel.Serial)},
		{"page83" + matchOp(sel.Page83Match), quoted(sel.Page83)},
		{"lun=", num(sel.LUN)},
		{"target=", num(sel.Target)},
		{"bus=", num(sel.Bus)},
		{"location=", quoted(sel.Location)},
		{"nvmeNSID=", num(sel.NVMeNSID)},
		{"eui=", sel.EUI},
		{"nguid=", sel.NGUID},
		{"adapterSerial=", quoted(sel.AdapterSerial)},
		{"azure-disk LUN=", num(sel.AzureLUN)},
		{"aws-ebs volume=", sel.EBSVolumeID},
		{"gce-pd device=", quoted(sel.GCEDeviceName)},
		{"vsphere diskUUID=", sel.VSphereUUID},
		{"number=", num(sel.Number)},
	} {
		if f.value != "" {
			parts = append(parts, f.name+f.value)
		}
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

// logSkip logs a disk whose identifier could not be read. The lookup goes
// on with the others; the disk itself is judged by unreadIDs.
func logSkip(ctx context.Context, d host.Disk, what string, err error) {
	level := 4
	if !errors.Is(err, host.ErrNotFound) {
		level = 2
	}
	klog.FromContext(ctx).V(level).Info("A disk's identifier cannot be read",
		"diskNumber", d.Number, "identifier", what, "err", err)
}
