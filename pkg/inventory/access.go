package inventory

import (
	"context"
	"errors"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// RootGrant is one grant of the volumeRootAccess a stage recorded, and
// whether the volume's root has it now.
type RootGrant struct {
	// Entry is the grant as recorded: "ContainerUser:modify".
	Entry string `json:"entry"`
	// SID is its principal's SID: fixed for a SID and the documented
	// names, and for an account name the SID its stage resolved it to and
	// recorded (backend.AttrRootAccessSIDs); "" when none is recorded.
	SID string `json:"sid,omitempty"`
	// Applied: the volume's stage grants it on the root. False for a
	// volume staged read-only, whose root's ACL the plugin leaves as it
	// is on purpose.
	Applied bool `json:"applied"`
	// Reason says why the grant is not applied, or why OnRoot could not
	// be judged (ReasonReadOnlyStage, ReasonSIDNotRecorded).
	Reason string `json:"reason,omitempty"`
	// OnRoot: the root's DACL has it (an explicit allow entry for the SID,
	// inherited below, with at least the rights); false when it does not
	// or the root could not be read.
	OnRoot bool `json:"onRoot"`
}

// RootGrant.Reason values.
const (
	// ReasonReadOnlyStage: the volume is staged read-only.
	ReasonReadOnlyStage = "read-only stage: not applied"
	// ReasonSIDNotRecorded: the grant names an account whose SID the
	// volume's journal entry does not record (a stage by an earlier
	// version): whether the root has it is not judged.
	ReasonSIDNotRecorded = "SID not recorded: the next stage records it"
)

// rootAccess fills in the root's DACL of a mounted disk or iSCSI volume and,
// when its stage recorded volumeRootAccess, whether the root still grants
// it: a grant missing from a writable volume's root is a problem,
// RootAccessMissing (someone changed the ACL, or the stage that would add it
// has not run since the grant was asked for).
func (t *taker) rootAccess(ctx context.Context, v *Volume, b *DiskBacking, e journal.Entry) {
	if b == nil || b.VolumeGUID == "" {
		return
	}
	dacl, err := t.h.Security.RootDACL(ctx, b.VolumeGUID)
	switch {
	case err == nil:
		b.RootACL = renderDACL(dacl)
	case errors.Is(err, host.ErrNotFound):
		// The volume is not visible (its disk is offline): the volume's
		// problems say so, and its root cannot be judged.
	default:
		t.incomplete("ACL of the root of volume "+b.VolumeGUID, err)
	}
	a := backend.RootAccessOf(e)
	if len(a.Grants) == 0 {
		return
	}
	readOnly := backend.StagedReadOnly(e)
	// The SIDs of account names are those the stage resolved them to and
	// recorded: a stock-take asks no domain controller.
	recorded := backend.RootAccessSIDs(e.Attrs)
	var missing []string
	for _, g := range a.Grants {
		rg := RootGrant{Entry: g.String(), SID: g.SID, Applied: !readOnly}
		if rg.SID == "" {
			rg.SID = recorded[g.Principal]
		}
		switch {
		case readOnly:
			rg.Reason = ReasonReadOnlyStage
		case rg.SID == "":
			rg.Reason = ReasonSIDNotRecorded
		}
		if err == nil && rg.SID != "" {
			g.SID = rg.SID
			rg.OnRoot = dacl.Grants(g.ACE())
		}
		if err == nil && rg.SID != "" && !rg.OnRoot {
			missing = append(missing, rg.Entry)
		}
		b.RootAccess = append(b.RootAccess, rg)
	}
	switch {
	case len(missing) == 0:
	case readOnly:
		// A read-only stage never changes the ACL: nothing is wrong.
	default:
		v.problem("RootAccessMissing", "the root of volume "+b.VolumeGUID+" does not grant "+strings.Join(missing, ";")+
			" as volumeRootAccess asks; the next stage adds it (or the ACL was changed by hand)")
		if v.State == StateHealthy {
			v.State = StateDegraded
		}
	}
}

// renderDACL shows a DACL as SDDL does, with hex masks and full SIDs.
func renderDACL(d host.DACL) string {
	if d.Null {
		return "NO_ACCESS_CONTROL"
	}
	var sb strings.Builder
	if d.Protected {
		sb.WriteString("P")
	}
	for _, e := range d.Entries {
		sb.WriteString(winacl.ACE{Type: e.Type, Flags: e.Flags, Mask: e.Mask, SID: e.SID}.String())
	}
	return sb.String()
}
