package winhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/preflight"
	"github.com/wincsi/csi-windows-node/pkg/selftest"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/replay"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Every recording under testdata/recordings is run again: its scenario
// (selftest or preflight, with the recorded parameters) over the Windows
// host and an executor that answers from the recording. The test fails
// when the code now makes a call the recording does not have (or makes
// one with other inputs, or leaves one unmade) or reaches another result.
// Recordings of the plugin (--record-host-calls) have no scenario to run
// again; the shape test (shape_test.go) reads them.
func TestReplayRecordings(t *testing.T) {
	paths, err := filepath.Glob("testdata/recordings/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(paths, filepath.FromSlash(scriptedRecording)) {
		t.Fatalf("no %s among %q", scriptedRecording, paths)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			rec, err := replay.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Header.Scenario == recording.ScenarioPlugin {
				t.Skip("a plugin recording: no scenario to run again (the shape test reads it)")
			}
			got, want, err := replayScenario(t, rec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the replay reaches another result:\n got  %q\n want %q", got, want)
			}
		})
	}
}

// replayScenario runs a recording's scenario over it and returns the
// outcome it reaches and the recorded one.
func replayScenario(t scriptedTB, rec *recording.File) (got, want []string, err error) {
	if rec.Result == nil {
		return nil, nil, fmt.Errorf("the recording has no result line (was the run cut short?)")
	}
	if err := json.Unmarshal(rec.Result.Outcome, &want); err != nil {
		return nil, nil, fmt.Errorf("the recorded result: %w", err)
	}
	e, err := replay.New(t, rec)
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	switch rec.Header.Scenario {
	case recording.ScenarioSelftest:
		cfg, err := selftest.ConfigFromParams(rec.Header.Params)
		if err != nil {
			return nil, nil, err
		}
		cfg.LocalDir = t.TempDir()
		cfg.Plugin = selftestPluginOptions(cfg.Plugin)
		rep, err := selftest.Run(ctx, selftest.Node{Host: winhost.New(e), Admin: winhost.NewAdmin(e), Style: winpath.Windows}, cfg)
		if err != nil {
			return nil, want, err
		}
		return rep.Outcome(), want, nil
	case recording.ScenarioPreflight:
		cfg, fix, err := preflight.ConfigFromParams(rec.Header.Params)
		if err != nil {
			return nil, nil, err
		}
		sys := winhost.NewAdmin(e).System
		if fix {
			if _, err := preflight.Fix(ctx, sys); err != nil {
				return nil, want, err
			}
		}
		return preflight.Run(ctx, cfg, winhost.New(e), sys).Outcome(), want, nil
	}
	return nil, nil, fmt.Errorf("unknown scenario %q", rec.Header.Scenario)
}

// scriptedTB is what a replay needs of a test.
type scriptedTB interface {
	scripted.TB
	TempDir() string
}

// Editing one reply value of the committed scripted recording makes its
// replay fail: the replay checks what the code does with the answers, not
// only which calls it makes.
func TestReplayFailsOnEditedReply(t *testing.T) {
	edits := []struct {
		name string
		kind string // the first line of this kind is edited
		edit func(l *recording.Line)
	}{
		{"the data read back", "ReadFile", func(l *recording.Line) {
			v, _ := recording.Encode([]byte("something else\n"))
			l.Reply.Value = &v
		}},
		{"the attached disk's number", "AttachVirtualDisk", func(l *recording.Line) {
			v, _ := recording.Encode(`\\.\PhysicalDrive7`)
			l.Reply.Value = &v
		}},
		{"a disk property (IsOffline of the VHDX)", "Query", func(l *recording.Line) {
			for _, o := range l.Reply.Instances {
				if o.Class == "MSFT_Disk" && string(o.Props["Number"].V) == `"1"` {
					v, _ := recording.Encode(true)
					o.Props["IsOffline"] = v
					return
				}
			}
			panic("no disk 1")
		}},
		{"a method's return value (Initialize)", "Call", func(l *recording.Line) {
			if l.Method.Name != "Initialize" {
				panic("not Initialize")
			}
			rv := uint32(40001) // "access denied"
			l.Reply.ReturnValue = &rv
		}},
	}
	for _, ed := range edits {
		t.Run(ed.name, func(t *testing.T) {
			rec, err := replay.Load(scriptedRecording)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(rec.Lines, func(l recording.Line) bool {
				switch ed.kind {
				case "Query":
					return l.Kind == "Query" && strings.Contains(l.WQL, "FROM MSFT_Disk") && len(l.Reply.Instances) == 2
				case "Call":
					return l.Kind == "Call" && l.Method.Name == "Initialize"
				}
				return l.Kind == ed.kind
			})
			if i < 0 {
				t.Fatalf("no %s line to edit", ed.kind)
			}
			ed.edit(&rec.Lines[i])
			ft := &replayTB{dir: t.TempDir()}
			got, want, err := replayScenario(ft, rec)
			ft.cleanup()
			if err == nil && len(ft.errs) == 0 && reflect.DeepEqual(got, want) {
				t.Fatalf("the replay of an edited recording (call %d, %s) passed", rec.Lines[i].Seq, ed.name)
			}
		})
	}
}

// replayTB collects a replay's test failures instead of failing the test.
type replayTB struct {
	dir      string
	errs     []string
	cleanups []func()
}

func (r *replayTB) Helper() {}
func (r *replayTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *replayTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *replayTB) TempDir() string  { return r.dir }
func (r *replayTB) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
