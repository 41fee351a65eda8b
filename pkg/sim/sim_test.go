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
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// newSim opens a sim in a fresh directory and closes it at the end.
func newSim(t testing.TB, mods ...func(*Config)) *Sim {
	t.Helper()
	cfg := Config{Dir: t.TempDir()}
	for _, m := range mods {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// reopen closes s and opens a new sim on the same directory.
func reopen(t testing.TB, s *Sim, mods ...func(*Config)) *Sim {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	cfg := Config{Dir: s.Dir()}
	for _, m := range mods {
		m(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New (reopen): %v", err)
	}
	t.Cleanup(func() { _ = n.Close() }) // closing twice is harmless; errors were checked on the first Close
	return n
}

func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// formattedDisk attaches an online GPT disk with one NTFS volume and
// returns its number and the volume's GUID path.
func formattedDisk(t testing.TB, s *Sim, serial string) (uint32, string) {
	t.Helper()
	n, err := s.AttachDisk(DiskSpec{Serial: serial, FileSystem: "NTFS"})
	if err != nil {
		t.Fatalf("AttachDisk: %v", err)
	}
	ctx := context.Background()
	parts, err := s.Host().Disks.Partitions(ctx, host.Disk{Number: n})
	if err != nil {
		t.Fatalf("Partitions: %v", err)
	}
	v, err := s.Host().Volumes.OfPartition(ctx, parts[len(parts)-1])
	if err != nil {
		t.Fatalf("OfPartition: %v", err)
	}
	return n, v.GUIDPath
}

// emptyDir creates an empty directory under the test's temp dir.
func emptyDir(t testing.TB, name string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(d, 0o750); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewInitialState(t *testing.T) {
	s := newSim(t)
	st := s.Snapshot()
	if st.Version != StateVersion || len(st.Disks) != 1 {
		t.Fatalf("initial state: version %d, %d disks", st.Version, len(st.Disks))
	}
	d, err := s.Host().Disks.Get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !d.IsBoot || !d.IsSystem || !d.IsCritical() || d.IsOffline || d.PartitionStyle != host.PartitionStyleGPT {
		t.Errorf("disk 0 = %+v, want an online GPT boot/system disk", d)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), stateFile)); err != nil {
		t.Errorf("state.json not written at New: %v", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without Dir succeeded")
	}
}

func TestStateSurvivesRestart(t *testing.T) {
	s := newSim(t)
	n, guid := formattedDisk(t, s, "vol-restart")
	if err := s.AddShare(ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"u": "password-0001"}}); err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot()
	s2 := reopen(t, s)
	after := s2.Snapshot()
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Errorf("state changed across restart:\n%s\n%s", a, b)
	}
	got, err := s2.Host().Volumes.DiskNumber(context.Background(), guid)
	if err != nil || got != n {
		t.Errorf("DiskNumber after restart = %d, %v; want %d", got, err, n)
	}
}

func TestStateVersionChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(`{"version": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: dir}); err == nil {
		t.Error("New accepted state version 2")
	}
}

func TestCountersAndCallLog(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	h := s.Host()
	if _, err := h.Disks.List(ctx); err != nil {
		t.Fatal(err)
	}
	mark := s.Mark()
	if _, err := h.Disks.Get(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Disks.Get(ctx, 99); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("Get(99) = %v, want ErrNotFound", err)
	}
	if err := h.Disks.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Count(OpDisksGet); got != 2 {
		t.Errorf("Count(disks.Get) = %d, want 2", got)
	}
	want := map[string]int{OpDisksList: 1, OpDisksGet: 2, OpDisksRescan: 1}
	if got := s.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Calls() = %v, want %v", got, want)
	}
	if got := strings.Join(s.OpsSince(mark), ","); got != "disks.Get,disks.Get,disks.Rescan" {
		t.Errorf("OpsSince = %s", got)
	}
	s.ResetCounts()
	if got := s.Calls(); len(got) != 0 {
		t.Errorf("Calls after ResetCounts = %v", got)
	}
	if got := len(s.CallLog()); got != 4 {
		t.Errorf("call log has %d entries, want 4 (ResetCounts keeps it)", got)
	}
}

func TestCallLogBounded(t *testing.T) {
	s := newSim(t)
	for i := 0; i < callLogSize+5; i++ {
		s.record(OpFilesStat)
	}
	s.record(OpDisksList)
	ops := s.OpsSince(0)
	if len(ops) != callLogSize || ops[len(ops)-1] != OpDisksList {
		t.Errorf("log kept %d entries ending %q", len(ops), ops[len(ops)-1])
	}
	if got := s.OpsSince(s.Mark() - 1); len(got) != 1 || got[0] != OpDisksList {
		t.Errorf("OpsSince(last) = %v", got)
	}
}

func TestClosedSimRefusesCalls(t *testing.T) {
	s := newSim(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Host().Disks.List(context.Background()); !errors.Is(err, errClosed) {
		t.Errorf("List after Close = %v, want errClosed", err)
	}
}

func TestContextHonoured(t *testing.T) {
	s := newSim(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Host().Disks.List(ctx)
	wantErr(t, "List with cancelled ctx", err, context.Canceled)
}

// TestGroupCommit holds the persister while 100 mutations queue up: one
// write makes all of them durable, and a fresh New sees every one.
func TestGroupCommit(t *testing.T) {
	s := newSim(t)
	gate := make(chan struct{})
	var once sync.Once
	s.p.mu.Lock()
	s.p.hold = func() { once.Do(func() { <-gate }) }
	writesBefore := s.p.writes
	s.p.mu.Unlock()
	s.mu.Lock()
	base := s.gen
	s.mu.Unlock()

	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.AttachVolumeDisk(fmt.Sprintf("vol-%03d", i), 0)
			errs <- err
		}()
	}
	for {
		s.mu.Lock()
		g := s.gen
		s.mu.Unlock()
		if g == base+n {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s.p.mu.Lock()
	writes := s.p.writes - writesBefore
	s.p.mu.Unlock()
	if writes != 1 {
		t.Errorf("%d concurrent mutations took %d state writes, want 1", n, writes)
	}
	s2 := reopen(t, s)
	if got := len(s2.Snapshot().Disks); got != n+1 {
		t.Errorf("after restart %d disks, want %d", got, n+1)
	}
}

func TestNoPlaintextSecretsInState(t *testing.T) {
	s := newSim(t)
	ctx := context.Background()
	h := s.Host()
	secrets := []string{"smb-password-123", "chap-secret-0001", "mutual-secret-01", "discov-secret-01", "smb-password-new"}
	portal := host.Portal{Address: "10.0.0.5", Port: 3260}
	if err := s.AddShare(ShareSpec{Server: "srv", Share: "data", Users: map[string]string{"alice": secrets[0]}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTarget(TargetSpec{IQN: "iqn.2000-01.test:t1", Portals: []host.Portal{portal},
		LUNs:          []LUNSpec{{LUN: 0}},
		CHAP:          &host.CHAP{User: "chapuser", Secret: host.NewSecret(secrets[1])},
		MutualSecret:  secrets[2],
		DiscoveryCHAP: &host.CHAP{User: "disc", Secret: host.NewSecret(secrets[3])},
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.SMB.Map(ctx, `\\srv\data`, host.Credential{User: "alice", Password: host.NewSecret(secrets[0])}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSharePassword("srv", "data", "alice", secrets[4]); err != nil {
		t.Fatal(err)
	}
	if err := h.ISCSI.AddPortal(ctx, portal, "", &host.CHAP{User: "disc", Secret: host.NewSecret(secrets[3])}); err != nil {
		t.Fatal(err)
	}
	if err := h.ISCSI.SetInitiatorSecret(ctx, host.NewSecret(secrets[2])); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: "iqn.2000-01.test:t1", Portal: portal,
		Auth: host.AuthMutual, CHAP: host.CHAP{User: "chapuser", Secret: host.NewSecret(secrets[1])}, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(), stateFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range secrets {
		if strings.Contains(string(data), secret) {
			t.Errorf("state.json contains the plaintext secret %q", secret)
		}
	}
	if !strings.Contains(string(data), `"passwordSHA256"`) {
		t.Error("state.json lacks the password hash (test would pass vacuously)")
	}
}
