//go:build linux

package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/sweep"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
)

// raceRounds is how many times each volume is staged and unstaged while
// the sweep runs.
const raceRounds = 12

// The sweep in clean mode runs round after round while volumes of one
// share and one target are staged and unstaged, and other volumes of the
// same share and target are staged and then left gone (their staging
// paths removed, as kubelet's cleaned state would): no round removes the
// mapping or session under a stage, no stage or unstage fails because of
// it (a volume the sweep holds answers Aborted, which kubelet retries),
// and at the end nothing leaks.
func TestCleanRacesStagesAndUnstages(t *testing.T) {
	base := t.TempDir()
	n := open(t, base, "--orphan-sweep=clean")
	check(t, n.Sim.AddShare(sim.ShareSpec{Server: "files", Share: "data", Users: map[string]string{"alice": "pw-alice-1"}}))
	for _, d := range []string{"a", "g"} {
		check(t, os.MkdirAll(filepath.Join(n.SimDir, "smb", "files", "data", d), 0o750))
	}
	portal := host.Portal{Address: "10.2.0.1", Port: 3260}
	iqn := "iqn.2024-01.io.wincsi.sim:race"
	check(t, n.Sim.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{portal}, LUNs: []sim.LUNSpec{{LUN: 1}, {LUN: 2}}}))
	smbCtx := func(dir string) map[string]string { return map[string]string{"source": "//files/data", "subDir": dir} }
	secrets := map[string]string{"username": "alice", "password": "pw-alice-1"}
	iscsiCtx := func(lun string) map[string]string {
		return map[string]string{"targetPortal": portal.String(), "iqn": iqn, "lun": lun}
	}
	ctx := context.Background()

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, sprintf(format, args...))
		}
	}
	// retry calls an RPC until it answers other than Aborted.
	retry := func(what string, call func() error) bool {
		for {
			err := call()
			if status.Code(err) == codes.Aborted {
				continue
			}
			if err != nil {
				fail("%s: %v", what, err)
				return false
			}
			return true
		}
	}
	stageRPC := func(vol string, vctx, sec map[string]string) func() error {
		return func() error { return n.Stage(ctx, vol, vctx, sec) }
	}
	unstageRPC := func(vol string) func() error {
		return func() error { return n.Unstage(ctx, vol) }
	}
	// inUse checks, right after a stage, that what it uses is there.
	inUse := func(vol string) {
		st := n.Sim.Snapshot()
		switch vol {
		case "smb-a":
			if len(st.Mappings) != 1 {
				fail("%s staged, but %d mappings", vol, len(st.Mappings))
			}
		case "iscsi-1":
			if len(st.Sessions) != 1 {
				fail("%s staged, but %d sessions", vol, len(st.Sessions))
			}
		}
	}

	var users sync.WaitGroup
	cycle := func(vol string, vctx, sec map[string]string) {
		defer users.Done()
		for range raceRounds {
			if !retry("stage "+vol, stageRPC(vol, vctx, sec)) {
				return
			}
			inUse(vol)
			if !retry("unstage "+vol, unstageRPC(vol)) {
				return
			}
		}
	}
	// leave stages a volume and then removes its staging path under the
	// plugin, as kubelet's cleaned state leaves it: the sweep's to finish.
	leave := func(vol string, vctx, sec map[string]string) {
		defer users.Done()
		p := simnode.StagingPath(n.Kubelet, vol)
		for range raceRounds {
			if !retry("stage "+vol, stageRPC(vol, vctx, sec)) {
				return
			}
			info, err := n.Sim.Host().Files.Stat(ctx, p)
			if err == nil && info.Kind == host.PathMountPoint {
				err = n.Sim.Host().Volumes.Unmount(ctx, p)
			}
			if err == nil {
				err = os.Remove(p)
			}
			if err != nil {
				fail("remove the staging path of %s: %v", vol, err)
				return
			}
		}
	}
	users.Add(4)
	go cycle("smb-a", smbCtx("a"), secrets)
	go cycle("iscsi-1", iscsiCtx("1"), nil)
	go leave("smb-g", smbCtx("g"), secrets)
	go leave("iscsi-2", iscsiCtx("2"), nil)

	done := make(chan struct{})
	var rounds, removed atomic.Int64
	var sweeper sync.WaitGroup
	sweeper.Add(1)
	go func() {
		defer sweeper.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			r, err := n.Plugin.Sweep(ctx)
			if err != nil {
				fail("sweep: %v", err)
				return
			}
			rounds.Add(1)
			for _, o := range r.Outcomes {
				switch o.Result {
				case sweep.ResultFailed:
					fail("sweep: %s %s: %v", o.Kind, o.ID, o.Err)
				case sweep.ResultRemoved:
					removed.Add(1)
				}
			}
		}
	}()
	users.Wait()
	close(done)
	sweeper.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d sweep rounds removed %d orphans while the volumes were staged and unstaged %d times each", rounds.Load(), removed.Load(), raceRounds)

	// The gone volumes left last are the next round's; then nothing is
	// left.
	if _, err := n.Plugin.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if left := simnode.Leftovers(n.Sim.Snapshot()); len(left) > 0 {
		t.Errorf("left over: %q", left)
	}
	if es := n.Journal(t).List(ctx); len(es) > 0 {
		t.Errorf("journal entries left: %+v", es)
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
