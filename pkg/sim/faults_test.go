//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestFaultErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		rule  Rule
		op    func(h host.Host) error
		wants []error // per call
	}{
		{"nth", Rule{Op: OpDisksGet, Nth: 2, Err: "busy"},
			func(h host.Host) error { _, err := h.Disks.Get(ctx, 0); return err },
			[]error{nil, host.ErrBusy, nil}},
		{"every call", Rule{Op: OpDisksList, Err: "notfound"},
			func(h host.Host) error { _, err := h.Disks.List(ctx); return err },
			[]error{host.ErrNotFound, host.ErrNotFound}},
		{"any op", Rule{Op: AnyOp, Nth: 1, Err: "credentialconflict"},
			func(h host.Host) error { return h.Disks.Rescan(ctx) },
			[]error{host.ErrCredentialConflict, nil}},
		{"internal", Rule{Op: OpDisksRescan, Err: "internal"},
			func(h host.Host) error { return h.Disks.Rescan(ctx) },
			[]error{errInjected}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			if err := s.Faults().Add(tc.rule); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.wants {
				wantErr(t, fmt.Sprintf("call %d", i+1), tc.op(s.Host()), want)
			}
		})
	}
	t.Run("internal is no sentinel", func(t *testing.T) {
		s := newSim(t)
		if err := s.Faults().Add(Rule{Op: OpDisksRescan, Err: "internal"}); err != nil {
			t.Fatal(err)
		}
		err := s.Host().Disks.Rescan(ctx)
		for _, sentinel := range faultErrors {
			if !errors.Is(sentinel, errInjected) && errors.Is(err, sentinel) {
				t.Errorf("internal error %v is %v", err, sentinel)
			}
		}
		if s.Snapshot().Rescans != 0 {
			t.Error("an injected error did the work")
		}
	})
}

func TestRuleValidation(t *testing.T) {
	f := newFaults()
	tests := []struct {
		name string
		rule Rule
		ok   bool
	}{
		{"ok", Rule{Op: OpSMBMap, Err: "logonfailure"}, true},
		{"unknown op", Rule{Op: "smb.Nope"}, false},
		{"unknown err", Rule{Op: OpSMBMap, Err: "oops"}, false},
		{"negative nth", Rule{Op: OpSMBMap, Nth: -1}, false},
		{"negative delay", Rule{Op: OpSMBMap, Delay: -time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.Add(tc.rule); (err == nil) != tc.ok {
				t.Errorf("Add(%+v) = %v", tc.rule, err)
			}
		})
	}
}

func TestDelayAndLatencyHonourContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		rule *Rule
	}{
		{"fault delay", nil, &Rule{Op: OpDisksSetOnline, Delay: time.Hour}},
		{"latency", func(c *Config) { c.Latency = time.Hour }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mods []func(*Config)
			if tc.cfg != nil {
				mods = append(mods, tc.cfg)
			}
			s := newSim(t, mods...)
			n, _ := s.AttachDisk(DiskSpec{Offline: true})
			if tc.rule != nil {
				if err := s.Faults().Add(*tc.rule); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			err := s.Host().Disks.SetOnline(ctx, host.Disk{Number: n}, true)
			wantErr(t, "SetOnline", err, context.DeadlineExceeded)
			if !s.Snapshot().Disks[n].Offline {
				t.Error("the interrupted call had an effect")
			}
		})
	}
}

// TestHang: the caller gets its context's error while the call stays
// tracked; after Release it completes its effect and the tracker goes
// idle. The context ends once the call is hung, whatever the speed of the
// machine.
func TestHang(t *testing.T) {
	s := newSim(t)
	n, _ := s.AttachDisk(DiskSpec{Offline: true})
	if err := s.Faults().Add(Rule{Op: OpDisksSetOnline, Nth: 1, Hang: true}); err != nil {
		t.Fatal(err)
	}
	ctx, tracker := host.Track(context.Background())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for s.Faults().Hung(OpDisksSetOnline) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err := s.Host().Disks.SetOnline(ctx, host.Disk{Number: n}, true)
	wantErr(t, "hung SetOnline", err, context.Canceled)
	if got := tracker.Outstanding(); got != 1 {
		t.Fatalf("tracker shows %d outstanding calls, want 1", got)
	}
	if got := s.Faults().Hung(OpDisksSetOnline); got != 1 {
		t.Fatalf("Hung = %d", got)
	}
	if !s.Snapshot().Disks[n].Offline {
		t.Fatal("hung call had its effect before release")
	}
	idle := make(chan struct{})
	if got := s.Faults().Release(OpDisksSetOnline); got != 1 {
		t.Fatalf("Release released %d calls", got)
	}
	tracker.WhenIdle(func() { close(idle) })
	<-idle
	if s.Snapshot().Disks[n].Offline {
		t.Error("released call did not complete its effect")
	}
	// Nth 1: the next call goes through.
	if err := s.Host().Disks.SetOnline(context.Background(), host.Disk{Number: n}, false); err != nil {
		t.Fatal(err)
	}
}

func TestHangNotStartedWhenContextEnded(t *testing.T) {
	s := newSim(t)
	if err := s.Faults().Add(Rule{Op: OpDisksList, Hang: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Host().Disks.List(ctx)
	wantErr(t, "List", err, context.Canceled)
	if got := s.Faults().Hung(OpDisksList); got != 0 {
		t.Errorf("a call that never started is counted as hung (%d)", got)
	}
}

func TestHangReleasedByClear(t *testing.T) {
	s := newSim(t)
	if err := s.Faults().Add(Rule{Op: OpDisksList, Hang: true}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := s.Host().Disks.List(context.Background())
		done <- err
	}()
	for s.Faults().Hung(OpDisksList) == 0 {
		time.Sleep(time.Millisecond)
	}
	s.Faults().Clear()
	if err := <-done; err != nil {
		t.Errorf("List after Clear = %v", err)
	}
}

// replaceExit swaps the exit function for one that records its code.
func replaceExit(t *testing.T) *[]int {
	t.Helper()
	var mu sync.Mutex
	var codes []int
	old := exit
	exit = func(code int) {
		mu.Lock()
		codes = append(codes, code)
		mu.Unlock()
	}
	t.Cleanup(func() { exit = old })
	return &codes
}

func TestCrashHooks(t *testing.T) {
	tests := []struct {
		name       string
		rule       Rule
		wantCode   int
		wantOnline bool // effect durable on disk
		wantErr    error
	}{
		{"before", Rule{Op: OpDisksSetOnline, CrashBefore: true, ExitCode: 3}, 3, false, errCrashed},
		{"after", Rule{Op: OpDisksSetOnline, CrashAfter: true}, DefaultExitCode, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			codes := replaceExit(t)
			s := newSim(t)
			n, _ := s.AttachDisk(DiskSpec{Offline: true})
			if err := s.Faults().Add(tc.rule); err != nil {
				t.Fatal(err)
			}
			err := s.Host().Disks.SetOnline(context.Background(), host.Disk{Number: n}, true)
			wantErr(t, "SetOnline", err, tc.wantErr)
			if len(*codes) != 1 || (*codes)[0] != tc.wantCode {
				t.Fatalf("exit calls %v, want [%d]", *codes, tc.wantCode)
			}
			// What a restarted process would find, without Close.
			fresh, err := New(Config{Dir: s.Dir()})
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			if online := !fresh.Snapshot().Disks[n].Offline; online != tc.wantOnline {
				t.Errorf("after the crash the disk is online=%v, want %v", online, tc.wantOnline)
			}
		})
	}
}

func TestFaultsFile(t *testing.T) {
	dir := t.TempDir()
	rules := []Rule{
		{Op: OpVolumesFormat, Nth: 2, CrashBefore: true, ExitCode: 9},
		{Op: OpDisksList, Err: "unreachable", Delay: 1500 * time.Microsecond},
	}
	if err := WriteFaultsFile(dir, rules...); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.Faults().Rules()
	rules[1].ExitCode = DefaultExitCode // filled in by Add
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(rules)
	if string(a) != string(b) {
		t.Errorf("rules loaded %s, want %s", a, b)
	}
	_, err = s.Host().Disks.List(context.Background())
	wantErr(t, "List", err, host.ErrUnreachable)

	for name, content := range map[string]string{
		"bad json":      `{"rules": [`,
		"unknown field": `{"rules": [{"op": "disks.List", "errr": "busy"}]}`,
		"unknown op":    `{"rules": [{"op": "disks.Nope"}]}`,
		"bad delay":     `{"rules": [{"op": "disks.List", "delay": "soon"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, faultsFile), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if s, err := New(Config{Dir: d}); err == nil {
				_ = s.Close() // the test has failed already; closing only tidies up
				t.Errorf("New accepted faults.json %s", content)
			}
		})
	}
}
