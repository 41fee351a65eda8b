//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package smb_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// smbOpsSince returns the SMB host calls since mark.
func (e *env) smbOpsSince(mark int) []string {
	var out []string
	for _, op := range e.sim.OpsSince(mark) {
		if strings.HasPrefix(op, "smb.") {
			out = append(out, op)
		}
	}
	return out
}

// stageAsync stages v in a goroutine.
func (e *env) stageAsync(v vol) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- e.stage(v) }()
	return ch
}

// TestTwoFirstStagesOfAShare: two volumes of an unmapped share staged at
// once: one maps the share, the other waits for that mapping (making no
// SMB call meanwhile) and uses it; the share is mapped once.
func TestTwoFirstStagesOfAShare(t *testing.T) {
	e := newEnv(t)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("hang rule", e.sim.Faults().Add(sim.Rule{Op: sim.OpSMBMap, Nth: 1, Hang: true}))
	first := e.stageAsync(vol{id: "v1"})
	simnode.WaitUntil(t, "the first stage reaches its Map", func() bool { return e.sim.Faults().Hung(sim.OpSMBMap) == 1 })
	mark := e.sim.Mark()
	empties := e.sim.Count(sim.OpFilesIsEmptyDir)
	second := e.stageAsync(vol{id: "v2"})
	simnode.WaitUntil(t, "the second stage inspects its staging path", func() bool { return e.sim.Count(sim.OpFilesIsEmptyDir) > empties })
	simnode.Settle()
	if ops := e.smbOpsSince(mark); len(ops) != 0 {
		t.Fatalf("the second stage called %v while the first mapped the share: it must wait for the mapping", ops)
	}
	e.sim.Faults().Release(sim.OpSMBMap)
	must("first stage", <-first)
	must("second stage", <-second)
	if n := e.sim.Count(sim.OpSMBMap); n != 1 {
		t.Fatalf("%d Map calls, want 1", n)
	}
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.wantLink("v1", "srv", "data", "v1")
	e.wantLink("v2", "srv", "data", "v2")
	e.mustUnstage("v1")
	e.mustUnstage("v2")
	e.wantMappings(nil)
}

// TestStageWhileTheLastOtherVolumeUnstages: the stage of one volume and the
// unstage of the share's last other volume meet in either order. The
// mapping is never removed under the stage, removed at most once, and
// nothing is left when the stage fails.
func TestStageWhileTheLastOtherVolumeUnstages(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hang is the op held while the other RPC runs: the unstage's
		// Unmap (the unstage decided first) or the stage's directory
		// check (the stage acquired the mapping first).
		hang string
		// stage is the volume staged; a missing directory fails it.
		stage     vol
		stageCode codes.Code
		// wantMaps and wantUnmaps count the calls from the unstage on.
		wantMaps, wantUnmaps int
		wantMapped           bool
	}{
		{name: "unstage first: the stage maps again", hang: sim.OpSMBUnmap, stage: vol{id: "v2"},
			wantMaps: 1, wantUnmaps: 1, wantMapped: true},
		{name: "stage first: the unstage keeps the mapping", hang: sim.OpSMBCheck, stage: vol{id: "v2"},
			wantMaps: 0, wantUnmaps: 0, wantMapped: true},
		{name: "stage first and fails: it removes the mapping", hang: sim.OpSMBCheck, stage: vol{id: "v2", subDir: "missing"},
			stageCode: codes.NotFound, wantMaps: 0, wantUnmaps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustStage(vol{id: "v1"})
			maps, unmaps := e.sim.Count(sim.OpSMBMap), e.sim.Count(sim.OpSMBUnmap)
			if err := e.sim.Faults().Add(sim.Rule{Op: tc.hang, Nth: 1, Hang: true}); err != nil {
				t.Fatal(err)
			}
			hung := func() bool { return e.sim.Faults().Hung(tc.hang) == 1 }
			var stageErr, unstageErr error
			if tc.hang == sim.OpSMBUnmap {
				unstaged := make(chan error, 1)
				go func() { unstaged <- e.unstage("v1") }()
				simnode.WaitUntil(t, "the unstage reaches its Unmap", hung)
				mark := e.sim.Mark()
				staged := e.stageAsync(tc.stage)
				simnode.WaitUntil(t, "the stage inspects its staging path", func() bool {
					return len(e.sim.OpsSince(mark)) > 0
				})
				simnode.Settle()
				if ops := e.smbOpsSince(mark); len(ops) != 0 {
					t.Fatalf("the stage called %v while the unstage removed the mapping: it must wait", ops)
				}
				e.sim.Faults().Release(tc.hang)
				unstageErr, stageErr = <-unstaged, <-staged
			} else {
				staged := e.stageAsync(tc.stage)
				simnode.WaitUntil(t, "the stage reaches its directory check", hung)
				unstageErr = e.unstage("v1") // does not wait for the stage
				if n := e.sim.Count(sim.OpSMBUnmap) - unmaps; n != 0 {
					t.Fatalf("%d Unmap calls while a stage of the share runs, want 0", n)
				}
				e.sim.Faults().Release(tc.hang)
				stageErr = <-staged
			}
			if unstageErr != nil {
				t.Fatalf("unstage: %v", unstageErr)
			}
			wantCode(t, "stage", stageErr, tc.stageCode)
			if n := e.sim.Count(sim.OpSMBMap) - maps; n != tc.wantMaps {
				t.Errorf("%d Map calls, want %d", n, tc.wantMaps)
			}
			if n := e.sim.Count(sim.OpSMBUnmap) - unmaps; n != tc.wantUnmaps {
				t.Errorf("%d Unmap calls, want %d", n, tc.wantUnmaps)
			}
			if tc.wantMapped {
				e.wantMappings(map[string]string{`\\srv\data`: "alice"})
				e.wantLink(tc.stage.id, "srv", "data", tc.stage.id)
				e.mustUnstage(tc.stage.id)
			}
			e.wantMappings(nil)
			if _, ok := e.journal().Get(e.ctx, "v1"); ok {
				t.Error("journal entry of the unstaged volume left")
			}
		})
	}
}

// TestReleaseUnused: the sweep's question about a share gets the answer of
// the last unstage, through the same transition.
func TestReleaseUnused(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	key := `smb:\\srv\data`
	for _, remove := range []bool{false, true} {
		unused, err := e.plugin.ReleaseUnused(e.ctx, key, remove)
		if err != nil || unused {
			t.Fatalf("ReleaseUnused(remove %t) of a share in use = %t, %v; want false", remove, unused, err)
		}
	}
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	// The volume's link is removed behind the plugin's back (its state is
	// lost), so the mapping is left to the sweep.
	if err := e.sim.Host().Files.Remove(e.ctx, e.stagingPath("v1")); err != nil {
		t.Fatal(err)
	}
	if unused, err := e.plugin.ReleaseUnused(e.ctx, key, false); err != nil || !unused {
		t.Fatalf("ReleaseUnused(report) of an unused share = %t, %v; want true", unused, err)
	}
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	if unused, err := e.plugin.ReleaseUnused(e.ctx, key, true); err != nil || !unused {
		t.Fatalf("ReleaseUnused(remove) of an unused share = %t, %v; want true", unused, err)
	}
	e.wantMappings(nil)
	if _, ok, _ := e.journal().Note(e.ctx, smb.MappingNotePrefix+`\\srv\data`); ok {
		t.Error("the note of the removed mapping is left")
	}
	if _, err := e.plugin.ReleaseUnused(e.ctx, "disk:1", true); err == nil {
		t.Error("ReleaseUnused of a key no backend owns succeeded")
	}
}

// TestReleaseUnusedLeavesAMappingMadeSince: the sweep's view is a snapshot.
// When the plugin's own mapping went (its last volume unstaged) and an
// administrator mapped the share again before the sweep asks, the mapping
// there now carries no note of the plugin's: it is not unused, and neither
// a report nor a clean round touches it.
func TestReleaseUnusedLeavesAMappingMadeSince(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	e.mustUnstage("v1")
	e.wantMappings(nil)
	if err := e.sim.Host().SMB.Map(e.ctx, `\\srv\data`, host.Credential{User: "alice", Password: host.NewSecret(alicePW)}, false); err != nil {
		t.Fatal(err)
	}
	unmaps := e.sim.Count(sim.OpSMBUnmap)
	for _, remove := range []bool{false, true} {
		unused, err := e.plugin.ReleaseUnused(e.ctx, `smb:\\srv\data`, remove)
		if err != nil || unused {
			t.Fatalf("ReleaseUnused(remove %t) of a mapping the plugin did not make = %t, %v; want false", remove, unused, err)
		}
	}
	if n := e.sim.Count(sim.OpSMBUnmap) - unmaps; n != 0 {
		t.Errorf("%d Unmap calls on a mapping the plugin did not make", n)
	}
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	// With nothing mapped at all the share is unused and needs nothing.
	if err := e.sim.Host().SMB.Unmap(e.ctx, `\\srv\data`); err != nil {
		t.Fatal(err)
	}
	if unused, err := e.plugin.ReleaseUnused(e.ctx, `smb:\\srv\data`, true); err != nil || !unused {
		t.Fatalf("ReleaseUnused(remove) of a share with no mapping = %t, %v; want true", unused, err)
	}
}
