//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package smb_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// Two volumes share one mapping of \\srv\data; it outlives the first
// unstage and goes with the second, with or without a plugin restart after
// every step (the count comes from host state, not memory).
func TestTwoVolumesOneShare(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "no restart"
		if restart {
			name = "restart after every step"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			step := func() {
				if restart {
					e.restart()
				}
			}
			e.mustStage(vol{id: "v1"})
			step()
			e.mustStage(vol{id: "v2"})
			step()
			e.wantMappings(map[string]string{`\\srv\data`: "alice"})
			e.wantLink("v1", "srv", "data", "v1")
			e.wantLink("v2", "srv", "data", "v2")

			e.mustUnstage("v1")
			step()
			e.wantEmptyDir("v1")
			e.wantMappings(map[string]string{`\\srv\data`: "alice"})
			e.wantLink("v2", "srv", "data", "v2")

			e.mustUnstage("v2")
			step()
			e.wantEmptyDir("v2")
			e.wantMappings(nil)
			if n := len(e.journal().List(context.Background())); n != 0 {
				t.Fatalf("journal keeps %d entries after both unstages", n)
			}
		})
	}
}

// Each volume links to its own directory (source path plus subDir) and
// all of them go through one mapping of the share root.
func TestSubDirPerVolume(t *testing.T) {
	e := newEnv(t)
	vols := []struct {
		v      vol
		server string
		share  string
		dir    string
	}{
		{vol{id: "v1"}, "srv", "data", "v1"},
		{vol{id: "v2", source: `\\SRV\Data\nested`, subDir: "deep"}, "srv", "data", `nested\deep`},
		{vol{id: "v3", source: `//srv/data/`, subDir: "-"}, "srv", "data", ""},
		{vol{id: "v4", subDir: "${pvc.metadata.name}", ctx: map[string]string{"csi.storage.k8s.io/pvc/name": "pvc"}}, "srv", "data", "pvc"},
	}
	for _, tc := range vols {
		e.mustStage(tc.v)
	}
	for _, tc := range vols {
		e.wantLink(tc.v.id, tc.server, tc.share, tc.dir)
	}
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	for i, tc := range vols {
		e.mustUnstage(tc.v.id)
		if i < len(vols)-1 {
			e.wantMappings(map[string]string{`\\srv\data`: "alice"})
		}
	}
	e.wantMappings(nil)
}

// A file written through the published path lands in the volume's
// directory on the share; stats, expand and health see the share.
func TestPublishWriteReadStats(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	if err := e.publish("v1"); err != nil {
		t.Fatal(err)
	}
	if err := e.publish("v1"); err != nil {
		t.Fatalf("repeated publish: %v", err)
	}
	data := []byte("hello through the share\n")
	if err := os.WriteFile(filepath.Join(e.targetPath("v1"), "hello.txt"), data, 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(e.shareDir("srv", "data", "v1"), "hello.txt"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back from the share: %q, %v", got, err)
	}

	st, err := e.ns.NodeGetVolumeStats(e.ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v1", VolumePath: e.targetPath("v1")})
	if err != nil {
		t.Fatal(err)
	}
	if u := st.GetUsage(); len(u) != 1 || u[0].GetTotal() != 10<<30 || u[0].GetUsed() <= 0 {
		t.Fatalf("stats = %v", u)
	}
	ex, err := e.ns.NodeExpandVolume(e.ctx, &csi.NodeExpandVolumeRequest{VolumeId: "v1", VolumePath: e.targetPath("v1"),
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 30}})
	if err != nil || ex.GetCapacityBytes() != 10<<30 {
		t.Fatalf("expand = %v, %v; want the share's 10 GiB", ex, err)
	}
	h, err := e.health("v1")
	if err != nil || len(h.GetHealthStatuses()) != 0 {
		t.Fatalf("health = %v, %v; want no condition", h, err)
	}

	if err := e.unpublish("v1"); err != nil {
		t.Fatal(err)
	}
	e.mustUnstage("v1")
	// Unstaging removes links, never data.
	if _, err := os.Stat(filepath.Join(e.shareDir("srv", "data", "v1"), "hello.txt")); err != nil {
		t.Fatalf("file on the share after unstage: %v", err)
	}
	e.wantMappings(nil)
}

// Health reports each broken part with its reason.
func TestHealth(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(e *env) error
		reason  string // "" for healthy
	}{
		{"healthy", func(*env) error { return nil }, ""},
		{"link missing", func(e *env) error { return os.Remove(e.stagingPath("v1")) }, "LinkMissing"},
		{"mapping missing", func(e *env) error { return e.sim.Host().SMB.Unmap(e.ctx, `\\srv\data`) }, "MappingUnavailable"},
		{"mapping disconnected", func(e *env) error { return e.sim.SetMappingStatus(`\\srv\data`, host.MappingDisconnected) }, "MappingUnavailable"},
		{"server down", func(e *env) error { return e.sim.SetServerReachable("srv", false) }, "MappingUnavailable"},
		{"server down, status still OK", func(e *env) error {
			if err := e.sim.SetServerReachable("srv", false); err != nil {
				return err
			}
			return e.sim.SetMappingStatus(`\\srv\data`, host.MappingOK)
		}, "ShareUnreachable"},
		{"password changed on the server", func(e *env) error {
			return e.sim.SetSharePassword("srv", "data", "alice", alicePW2)
		}, "AccessDenied"},
		{"directory removed", func(e *env) error { return os.Remove(e.shareDir("srv", "data", "v1")) }, "DirectoryMissing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustStage(vol{id: "v1"})
			if err := tc.breakIt(e); err != nil {
				t.Fatal(err)
			}
			h, err := e.health("v1")
			if err != nil {
				t.Fatal(err)
			}
			st := h.GetHealthStatuses()
			if tc.reason == "" {
				if len(st) != 0 {
					t.Fatalf("conditions %v, want none", st)
				}
				return
			}
			if len(st) != 1 || st[0].GetReason() != tc.reason || st[0].GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE {
				t.Fatalf("conditions %v, want one INACCESSIBLE %s", st, tc.reason)
			}
		})
	}
}

// After the password changes on the server, the old mapping says OK but
// is refused; a stage with the new secret repairs it for every volume,
// one with the old secret fails Unauthenticated naming the share.
func TestPasswordRotation(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	if err := e.sim.SetSharePassword("srv", "data", "alice", alicePW2); err != nil {
		t.Fatal(err)
	}
	h, err := e.health("v1")
	if err != nil || len(h.GetHealthStatuses()) != 1 || h.GetHealthStatuses()[0].GetReason() != "AccessDenied" {
		t.Fatalf("health after rotation = %v, %v", h, err)
	}

	err = e.stage(vol{id: "v2"}) // still the old secret
	wantCode(t, "stage with the old password", err, codes.Unauthenticated)
	if !strings.Contains(err.Error(), `\\srv\data`) {
		t.Errorf("error does not name the share: %v", err)
	}
	e.wantEmptyDir("v2")

	e.mustStage(vol{id: "v2", secrets: secret("alice", alicePW2)})
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	for _, id := range []string{"v1", "v2"} {
		h, err := e.health(id)
		if err != nil || len(h.GetHealthStatuses()) != 0 {
			t.Fatalf("health of %s after repair = %v, %v", id, h, err)
		}
	}
	// A restage of v1 (kubelet after a restart) with the new secret is a no-op.
	e.restart()
	e.mustStage(vol{id: "v1", secrets: secret("alice", alicePW2)})
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
}

// A mapping left Disconnected or Unavailable (after an outage, a reboot)
// is removed and made again by the next stage of any volume of the share.
func TestStaleMappingIsRemapped(t *testing.T) {
	tests := []struct {
		name    string
		disturb func(e *env) error
		next    vol
	}{
		{"disconnected, restage of the same volume", func(e *env) error {
			return e.sim.SetMappingStatus(`\\srv\data`, host.MappingDisconnected)
		}, vol{id: "v1"}},
		{"network error, stage of another volume", func(e *env) error {
			return e.sim.SetMappingStatus(`\\SRV\DATA`, host.MappingNetworkError)
		}, vol{id: "v2"}},
		{"reboot", func(e *env) error { return e.sim.Reboot() }, vol{id: "v2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustStage(vol{id: "v1"})
			if err := tc.disturb(e); err != nil {
				t.Fatal(err)
			}
			unmaps := e.sim.Count(sim.OpSMBUnmap)
			e.mustStage(tc.next)
			e.wantMappings(map[string]string{`\\srv\data`: "alice"})
			if got := e.sim.Count(sim.OpSMBUnmap) - unmaps; got != 1 {
				t.Fatalf("%d unmaps, want 1", got)
			}
			h, err := e.health("v1")
			if err != nil || len(h.GetHealthStatuses()) != 0 {
				t.Fatalf("health of v1 = %v, %v", h, err)
			}
		})
	}
}

// A repeated stage of a healthy volume costs no mapping change.
func TestRestageIsIdempotent(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	e.sim.ResetCounts()
	e.mustStage(vol{id: "v1"})
	for _, op := range []string{sim.OpSMBMap, sim.OpSMBUnmap, sim.OpFilesSymlink, sim.OpFilesRemove} {
		if n := e.sim.Count(op); n != 0 {
			t.Errorf("%s called %d times on a repeated stage", op, n)
		}
	}
	e.wantLink("v1", "srv", "data", "v1")
}

// The user a mapping was made with is recorded: a volume of another user
// is refused while other staged volumes use the mapping (it would reach
// the share with their credentials), naming the share, the user it is
// mapped as and what to do; once they are gone the share is mapped again
// as the new user.
func TestAnotherUserIsRefused(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"}) // alice
	err := e.stage(vol{id: "v2", secrets: bob()})
	wantCode(t, "stage as bob while alice's mapping is used", err, codes.FailedPrecondition)
	for _, want := range []string{`share \\srv\data is mapped as user alice`, `"v1"`, "names user bob", "give this volume the Secret of user alice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.wantEmptyDir("v2")
	if _, ok := e.journal().Get(context.Background(), "v2"); ok {
		t.Error("the refused stage left its journal entry")
	}

	e.mustUnstage("v1")
	e.keepMappings = true
	e.restart() // the record of who made the mapping survives; the mapping stays
	e.mustStage(vol{id: "v1"})
	e.mustUnstage("v1")
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.mustStage(vol{id: "v2", secrets: bob()}) // no volume uses alice's mapping: remapped as bob
	e.wantMappings(map[string]string{`\\srv\data`: "bob"})
}

// noteOf returns the credential the journal records for the mapping of
// the share root.
func (e *env) noteOf(root string) backend.Credential {
	e.t.Helper()
	user, ok, err := e.journal().Note(context.Background(), smb.MappingNotePrefix+root)
	if err != nil || !ok {
		e.t.Fatalf("note of %s: %v, %v", root, ok, err)
	}
	mac, _, err := e.journal().Note(context.Background(), smb.MappingSecretNotePrefix+root)
	if err != nil {
		e.t.Fatal(err)
	}
	return backend.Credential{User: user, SecretMAC: mac}
}

// entryOf returns the credential the journal records for volume id.
func (e *env) entryOf(id string) backend.Credential {
	e.t.Helper()
	en, ok := e.journal().Get(context.Background(), id)
	if !ok {
		e.t.Fatalf("no journal entry of %s", id)
	}
	r, err := smb.DecodeRecord(en)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Credential()
}

// A volume of the same user with another password (a rotation begun, or a
// wrong password) while the mapping has other users is staged through it,
// as the node cannot check the password without disturbing them; its
// journal entry records the drift, never the password. With no other
// user the share is mapped again with the volume's password, which checks
// it.
func TestSameUserAnotherPassword(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	e.mustStage(vol{id: "v2", secrets: secret("alice", alicePW2)})
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.wantLink("v2", "srv", "data", "v2")
	note, v1, v2 := e.noteOf(`\\srv\data`), e.entryOf("v1"), e.entryOf("v2")
	if note.Compare(v1, backend.AccountNames) != backend.CredentialSame || note.Compare(v2, backend.AccountNames) != backend.CredentialDrift {
		t.Fatalf("mapping %+v, v1 %+v, v2 %+v: want v1 the same and v2 drifted", note, v1, v2)
	}
	for _, c := range []backend.Credential{note, v1, v2} {
		for _, pw := range allPasswords {
			if strings.Contains(c.SecretMAC, pw) {
				t.Fatal("a record holds a password")
			}
		}
	}

	// Alone on a kept mapping, a wrong password is checked by mapping
	// again, and refused.
	e.mustUnstage("v1")
	e.mustUnstage("v2")
	e.keepMappings = true
	e.restart()
	e.mustStage(vol{id: "v1"})
	e.mustUnstage("v1")
	err := e.stage(vol{id: "v3", secrets: secret("alice", bobPW)})
	wantCode(t, "stage alone with a wrong password", err, codes.Unauthenticated)
}

// DOMAIN\user and user@domain both reach the server as the user Windows
// expects.
func TestCredentialForms(t *testing.T) {
	tests := []struct {
		name    string
		secrets map[string]string
		user    string
	}{
		{"bare user", secret("alice", alicePW), "alice"},
		{`DOMAIN\user`, secret(`CORP\alice`, corpPW), `CORP\alice`},
		{"domain key", map[string]string{"username": "alice", "domain": "CORP", "password": corpPW}, `CORP\alice`},
		{"user@domain", secret("alice@corp.example", corpPW), "alice@corp.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustStage(vol{id: "v1", secrets: tc.secrets})
			e.wantMappings(map[string]string{`\\srv\data`: tc.user})
		})
	}
}

// Errors of the stage map to the documented gRPC codes and name the share,
// and a failed stage leaves neither a link nor a mapping behind.
func TestStageErrors(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e *env) error
		v      vol
		code   codes.Code
		names  string // the message contains it
		keepV1 bool   // v1 stays staged (its mapping too)
	}{
		{"1219: another user connected to the server", func(e *env) error { return e.stage(vol{id: "v1"}) },
			vol{id: "v2", source: "//srv/other", secrets: bob()}, codes.FailedPrecondition, `\\srv\other`, true},
		{"wrong password", nil, vol{id: "v1", secrets: secret("alice", bobPW)}, codes.Unauthenticated, `\\srv\data`, false},
		{"unknown user", nil, vol{id: "v1", secrets: secret("mallory", alicePW)}, codes.Unauthenticated, `\\srv\data`, false},
		{"server unreachable", func(e *env) error { return e.sim.SetServerReachable("far", false) },
			vol{id: "v1", source: "//far/x"}, codes.Unavailable, `\\far\x`, false},
		{"unknown server", nil, vol{id: "v1", source: "//nowhere/x"}, codes.Unavailable, `\\nowhere\x`, false},
		{"share missing", nil, vol{id: "v1", source: "//srv/nope"}, codes.NotFound, `\\srv\nope`, false},
		{"directory missing", nil, vol{id: "v1", subDir: "nothere"}, codes.NotFound, `nothere`, false},
		{"privacy against a server without encryption", nil, vol{id: "v1", source: "//srv/plain"}, codes.PermissionDenied, `\\srv\plain`, false},
		{"privacy differs from the volumes using the mapping", func(e *env) error {
			return e.stage(vol{id: "v1", source: "//srv/plain", ctx: map[string]string{"requirePrivacy": "false"}})
		}, vol{id: "v2", source: "//srv/plain"}, codes.FailedPrecondition, `\\srv\plain`, true},
		{"staging path holds data", func(e *env) error {
			return os.WriteFile(filepath.Join(mkdirAll(e, e.stagingPath("v1")), "f"), nil, 0o600)
		}, vol{id: "v1"}, codes.FailedPrecondition, "", false},
		{"no credentials", nil, vol{id: "v1", secrets: map[string]string{}}, codes.InvalidArgument, `parameter "username"`, false},
		{"refused without credentials", nil, vol{id: "v1", secrets: map[string]string{}, ctx: noCred},
			codes.Unauthenticated, `the server refused a mapping without credentials`, false},
		{"guest logon blocked", func(e *env) error {
			e.sim.Faults().Add(sim.Rule{Op: sim.OpSMBMap, Nth: 1, Err: "guestlogonblocked"})
			return nil
		}, vol{id: "v1", secrets: map[string]string{}, ctx: noCred}, codes.FailedPrecondition, `"Enable insecure guest logons"`, false},
		{"link fails after mapping", func(e *env) error {
			e.sim.Faults().Add(sim.Rule{Op: sim.OpFilesSymlink, Nth: 1, Err: "internal"})
			return nil
		}, vol{id: "v1"}, codes.Internal, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.setup != nil {
				if err := tc.setup(e); err != nil {
					t.Fatal(err)
				}
			}
			before := e.mappings()
			err := e.stage(tc.v)
			wantCode(t, "stage", err, tc.code)
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error does not name %s: %v", tc.names, err)
			}
			if tc.keepV1 {
				if got := e.mappings(); len(got) != len(before) || len(got) != 1 || got[0].Status != host.MappingOK {
					t.Fatalf("mappings %+v, want v1's %+v untouched", got, before)
				}
			} else if got := e.mappings(); len(got) != 0 {
				t.Fatalf("failed stage left mappings %+v", got)
			}
			if fi, err := os.Lstat(e.stagingPath(tc.v.id)); err != nil || fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("staging path after a failed stage: %v, %v; want the directory back", fi, err)
			}
			if _, ok := e.journal().Get(context.Background(), tc.v.id); ok {
				t.Errorf("journal keeps the failed stage of %s", tc.v.id)
			}
		})
	}
}

// noCred is the opt-in to a mapping without credentials.
var noCred = map[string]string{"mapWithoutCredentials": "true"}

func mkdirAll(e *env, p string) string {
	e.t.Helper()
	if err := os.MkdirAll(p, 0o750); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// Bad source strings never reach the host: InvalidArgument naming source.
func TestBadSource(t *testing.T) {
	for _, src := range []string{
		`C:\shares\data`,
		`\\srv`,
		`//srv/`,
		`\\srv\data\..\other`,
		`\\?\UNC\srv\data`,
		`\\.\pipe\x`,
		`srv\data`,
		`\\srv\da*ta`,
		`\\srv\\data`,
		"\\\\srv\\da\tta",
	} {
		t.Run(src, func(t *testing.T) {
			e := newEnv(t)
			e.sim.ResetCounts()
			err := e.stage(vol{id: "v1", source: src})
			wantCode(t, "stage", err, codes.InvalidArgument)
			if !strings.Contains(err.Error(), "source") {
				t.Errorf("error does not name source: %v", err)
			}
			if calls := e.sim.Calls(); len(calls) != 0 {
				t.Errorf("host calls made for a bad source: %v", calls)
			}
		})
	}
}

// A crash (here: a failing Unmap, then a restart) between removing the
// link and removing the mapping converges on the retry.
func TestUnstageRetryAfterFailedUnmap(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	e.sim.Faults().Add(sim.Rule{Op: sim.OpSMBUnmap, Nth: 1, Err: "internal"})
	wantCode(t, "unstage with a failing unmap", e.unstage("v1"), codes.Internal)
	e.wantEmptyDir("v1")
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	if _, ok := e.journal().Get(context.Background(), "v1"); !ok {
		t.Fatal("journal dropped the entry of an unfinished unstage")
	}
	e.restart()
	e.mustUnstage("v1")
	e.wantMappings(nil)
	e.mustUnstage("v1") // and again: nothing left to do
}

// A volume the journal does not know (state lost) is unstaged from what
// the host shows, but its share's mapping is kept: without the journal the
// other users cannot be counted.
func TestUnstageUnknownVolumeKeepsMapping(t *testing.T) {
	e := newEnv(t)
	e.mustStage(vol{id: "v1"})
	e.mustStage(vol{id: "v2"})
	if err := os.RemoveAll(e.jdir); err != nil {
		t.Fatal(err)
	}
	e.restart()
	e.mustUnstage("v1")
	e.wantEmptyDir("v1")
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.wantLink("v2", "srv", "data", "v2")
}

// KeepMappings leaves the mapping after the last unstage.
func TestKeepMappings(t *testing.T) {
	e := newEnv(t)
	e.keepMappings = true
	e.restart()
	e.mustStage(vol{id: "v1"})
	e.mustUnstage("v1")
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
}

// Many volumes of one share staged and unstaged at once: one mapping,
// kept while any volume is staged.
func TestConcurrentVolumesOfOneShare(t *testing.T) {
	e := newEnv(t)
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "c" + string(rune('a'+i))
		e.mkShareDir("srv", "data", ids[i])
	}
	run := func(f func(id string) error, ids []string) {
		var wg sync.WaitGroup
		errs := make([]error, len(ids))
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(id)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", ids[i], err)
			}
		}
	}
	run(func(id string) error { return e.stage(vol{id: id}) }, ids)
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	if c := e.sim.Count(sim.OpSMBMap); c != 1 {
		t.Fatalf("%d maps, want 1", c)
	}
	run(e.unstage, ids[1:])
	e.wantMappings(map[string]string{`\\srv\data`: "alice"})
	e.wantLink(ids[0], "srv", "data", ids[0])
	e.mustUnstage(ids[0])
	e.wantMappings(nil)
}
