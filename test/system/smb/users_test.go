//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package smb_test

import (
	"context"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// relink replaces the staging link of id with a link to target, as a
// hand edit or an earlier version of the volume would leave it.
func (e *env) relink(id, target string) {
	e.t.Helper()
	ctx := context.Background()
	h := e.sim.Host()
	if err := h.Files.Remove(ctx, e.stagingPath(id)); err != nil {
		e.t.Fatal(err)
	}
	if err := h.Files.Symlink(ctx, e.stagingPath(id), target); err != nil {
		e.t.Fatal(err)
	}
}

// TestUninspectableStagingPathCountsAsAUser: when the unstage of the last
// volume it knows to be linked cannot inspect another volume's staging
// path, that volume counts as a user: keeping a mapping nobody needs costs
// far less than removing one in use.
func TestUninspectableStagingPathCountsAsAUser(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	e.mustStage(vol{id: "v2"})
	// The unstage of v1 inspects its own staging path first, then v2's
	// (the other entry of the share): that second look fails.
	if err := e.sim.Faults().Add(sim.Rule{Op: sim.OpFilesStat, Nth: 2, Err: "accessdenied"}); err != nil {
		t.Fatal(err)
	}
	e.mustUnstage("v1")
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.wantLink("v2", "srv", "data", "v2")
	e.mustUnstage("v2")
	e.wantMappings(nil)
}

// TestLinkToAnotherShareDoesNotCount: a volume the journal records on a
// share whose staging path links into another share does not keep the
// first share's mapping.
func TestLinkToAnotherShareDoesNotCount(t *testing.T) {
	e := newEnv(t)
	e.mkShareDir("far", "x", "v2")
	e.mustStage(vol{id: "v1"})
	e.mustStage(vol{id: "v2"})
	e.relink("v2", `\\far\x\v2`)
	e.mustUnstage("v1")
	e.wantMappings(nil)
}

// TestStagingLinkElsewhereThanTheJournalSays: an unstage whose staging
// link points into another share than the journal records releases both:
// the host is the truth, and the journal's share may have been mapped by
// an earlier stage.
func TestStagingLinkElsewhereThanTheJournalSays(t *testing.T) {
	e := newEnv(t)
	e.mkShareDir("far", "x", "v3")
	e.mustStage(vol{id: "v1"})
	e.mustStage(vol{id: "v3", source: "//far/x"})
	e.relink("v1", `\\far\x\v3`)
	// v1's unstage releases the share its link leads to, which v3 still
	// uses, and the journal's \\srv\data, which nothing uses.
	e.mustUnstage("v1")
	e.wantMappings(map[string]string{`\\far\x`: "alice"})
	e.wantLink("v3", "far", "x", "v3")
	e.mustUnstage("v3")
	e.wantMappings(nil)
}
