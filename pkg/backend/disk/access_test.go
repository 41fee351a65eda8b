//go:build linux

// Linux only: these tests run on the simulated host, which runs only on
// Linux (POSIX paths; pkg/sim doc.go).

package disk_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// rootOf returns the root DACL the simulated host keeps for the volume
// mounted at staging.
func (r *rig) rootOf(staging string) sim.DACLState {
	r.t.Helper()
	guid := r.mountedAt(staging)
	for _, d := range r.sim.Snapshot().Disks {
		for _, p := range d.Partitions {
			if p.Volume != nil && p.Volume.GUID == guid && p.Volume.Root != nil {
				return *p.Volume.Root
			}
		}
	}
	r.t.Fatalf("no root DACL for the volume at %s", staging)
	return sim.DACLState{}
}

// grantsOf counts the root's entries for sid.
func grantsOf(d sim.DACLState, sid string) []sim.ACEState {
	var out []sim.ACEState
	for _, e := range d.Entries {
		if e.SID == sid {
			out = append(out, e)
		}
	}
	return out
}

func access(t *testing.T, s string) contract.RootAccess {
	t.Helper()
	a, err := contract.ParseRootAccess("volumeRootAccess", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func withAccess(req backend.StageRequest, a contract.RootAccess) backend.StageRequest {
	req.Volume.RootAccess = a
	return req
}

// stagedDisk is a rig with disk SER-1 staged as vol-1 without grants, and
// its request.
func stagedDisk(t *testing.T) (*rig, string, backend.StageRequest) {
	t.Helper()
	r := newRig(t, disk.Options{})
	r.attach(sim.DiskSpec{Serial: "SER-1", Adapter: 1, LUN: 1})
	staging := r.staging("vol-1", true)
	req := stageRequest("vol-1", staging, contract.DiskSelector{Serial: "SER-1"}, contract.FileSystem{Type: "NTFS"}, false)
	if err := r.b.Stage(r.ctx, req); err != nil {
		t.Fatal(err)
	}
	return r, staging, req
}

// mutating are the simulated host's ops that change something.
func mutating(ops []string) []string {
	var out []string
	for _, op := range ops {
		switch op {
		case sim.OpDisksList, sim.OpDisksGet, sim.OpDisksDeviceIDs, sim.OpDisksSCSIAddress, sim.OpDisksRescan, sim.OpDisksPartitions,
			sim.OpVolumesOfPartition, sim.OpVolumesGet, sim.OpVolumesDiskNumber, sim.OpFilesStat,
			sim.OpSecurityRootDACL, sim.OpSecurityLookupAccountName:
		default:
			out = append(out, op)
		}
	}
	return out
}

// TestStageGrantsRootAccess: a stage with ContainerUser:modify leaves
// exactly one allow entry for S-1-5-93-2-2, inherited below (OI|CI), with
// modify rights, after the entries the fresh root had; a restage adds
// nothing.
func TestStageGrantsRootAccess(t *testing.T) {
	r := newRig(t, disk.Options{})
	r.attach(sim.DiskSpec{Serial: "SER-1", Adapter: 1, LUN: 1})
	staging := r.staging("vol-1", true)
	req := withAccess(stageRequest("vol-1", staging, contract.DiskSelector{Serial: "SER-1"}, contract.FileSystem{Type: "NTFS"}, false),
		access(t, "ContainerUser:modify"))
	if err := r.b.Stage(r.ctx, req); err != nil {
		t.Fatal(err)
	}
	root := r.rootOf(staging)
	want := sim.ACEState{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: 0x1301bf, SID: "S-1-5-93-2-2"}
	if g := grantsOf(root, "S-1-5-93-2-2"); len(g) != 1 || g[0] != want || root.Entries[len(root.Entries)-1] != want {
		t.Fatalf("root DACL after stage: %+v", root)
	}
	mark := r.sim.Mark()
	if err := r.b.Stage(r.ctx, req); err != nil {
		t.Fatal(err)
	}
	if again := r.rootOf(staging); !slices.Equal(again.Entries, root.Entries) {
		t.Fatalf("restage changed the root DACL: %+v", again)
	}
	if m := mutating(r.sim.OpsSince(mark)); !slices.Equal(m, []string{sim.OpSecurityAddRootAllowEntries}) {
		t.Fatalf("restage made the changing calls %v; want only the grant call, adding nothing", m)
	}
}

// TestStageGrantsOnALaterStage: a volume staged before it asked for a
// grant gets it at its next stage.
func TestStageGrantsOnALaterStage(t *testing.T) {
	r, staging, req := stagedDisk(t)
	if n := r.sim.Count(sim.OpSecurityAddRootAllowEntries); n != 0 {
		t.Fatalf("a stage without grants made %d grant calls", n)
	}
	before := r.rootOf(staging)
	if err := r.b.Stage(r.ctx, withAccess(req, access(t, "Authenticated Users:modify;Users:read"))); err != nil {
		t.Fatal(err)
	}
	after := r.rootOf(staging)
	// Users:(OI)(CI)(RX) is on the default root already: only
	// Authenticated Users is added.
	au := sim.ACEState{Type: 0, Flags: 3, Mask: 0x1301bf, SID: "S-1-5-11"}
	if !slices.Equal(after.Entries, append(slices.Clone(before.Entries), au)) {
		t.Fatalf("root DACL:\n %+v\nwant the default and\n %+v", after.Entries, au)
	}
}

// TestStageReadOnlyLeavesTheRoot: a read-only stage makes no security call.
func TestStageReadOnlyLeavesTheRoot(t *testing.T) {
	r, staging, req := stagedDisk(t)
	if err := r.b.Unstage(r.ctx, backend.UnstageRequest{VolumeID: "vol-1", StagingPath: staging}); err != nil {
		t.Fatal(err)
	}
	ro := withAccess(req, access(t, `ContainerUser:modify;CONTOSO\nobody:read`))
	ro.ReadOnly = true
	mark := r.sim.Mark()
	if err := r.b.Stage(r.ctx, ro); err != nil {
		t.Fatal(err)
	}
	for _, op := range r.sim.OpsSince(mark) {
		if strings.HasPrefix(op, "security.") {
			t.Fatalf("a read-only stage called %s", op)
		}
	}
}

// TestStageRootAccessBadNames: names Windows cannot resolve, and names that
// turn out to be one account with two rights, are InvalidArgument naming
// the key and the entry, with nothing changed on the host.
func TestStageRootAccessBadNames(t *testing.T) {
	for _, c := range []struct{ value, entry string }{
		{`CONTOSO\nobody:modify`, `"CONTOSO\nobody:modify"`},
		// ContainerUser by name on the host: the contract maps it, but a
		// qualified form it does not know goes to Windows, which does not
		// resolve container accounts.
		{`WORKGROUP\ContainerUser:modify`, `"WORKGROUP\ContainerUser:modify"`},
		// BUILTIN\Backup Operators is S-1-5-32-551 on the simulated host.
		{`Backup Operators:read;S-1-5-32-551:full`, `Backup Operators:read`},
	} {
		t.Run(c.value, func(t *testing.T) {
			r := newRig(t, disk.Options{})
			r.attach(sim.DiskSpec{Serial: "SER-1", Adapter: 1, LUN: 1})
			staging := r.staging("vol-1", false)
			mark := r.sim.Mark()
			req := withAccess(stageRequest("vol-1", staging, contract.DiskSelector{Serial: "SER-1"}, contract.FileSystem{Type: "NTFS"}, false),
				access(t, c.value))
			err := r.b.Stage(r.ctx, req)
			var ce *contract.Error
			if !errors.As(err, &ce) || ce.Key != "volumeRootAccess" || !strings.Contains(err.Error(), c.entry) {
				t.Fatalf("Stage = %v; want a contract error naming volumeRootAccess and %s", err, c.entry)
			}
			ops := r.sim.OpsSince(mark)
			if m := mutating(ops); len(m) != 0 || slices.Contains(ops, sim.OpFilesStat) {
				t.Fatalf("calls before the refusal: %v", ops)
			}
		})
	}
}

// TestStageRootAccessNullDACL: a root whose DACL is NULL (everyone has full
// access) is refused rather than narrowed.
func TestStageRootAccessNullDACL(t *testing.T) {
	r, staging, req := stagedDisk(t)
	if err := r.sim.SetRootDACL(`\\?\Volume{`+r.mountedAt(staging)+`}\`, sim.DACLState{Null: true}); err != nil {
		t.Fatal(err)
	}
	err := r.b.Stage(r.ctx, withAccess(req, access(t, "ContainerUser:modify")))
	wantErr(t, "restage on a NULL DACL", err, host.ErrConflict)
	if root := r.rootOf(staging); !root.Null || len(root.Entries) != 0 {
		t.Fatalf("NULL DACL changed: %+v", root)
	}
}

// TestStageRootAccessRecordedSIDs: a stage records the SIDs account names
// resolved to (Learned); a restage while the domain that resolves a name
// cannot be reached uses the SID recorded by the earlier stage, saying so,
// where it failed with Unavailable although the root carries the grant;
// without a recorded SID it still fails, to be retried.
func TestStageRootAccessRecordedSIDs(t *testing.T) {
	const sid = "S-1-5-21-1-2-3-1107"
	r := newRigOn(t, disk.Options{}, sim.Config{Setup: &sim.Setup{Accounts: []sim.AccountState{{Name: `CONTOSO\app`, SID: sid}}}})
	r.attach(sim.DiskSpec{Serial: "SER-1", Adapter: 1, LUN: 1})
	staging := r.staging("vol-1", true)
	req := withAccess(stageRequest("vol-1", staging, contract.DiskSelector{Serial: "SER-1"}, contract.FileSystem{Type: "NTFS"}, false),
		access(t, `CONTOSO\app:modify;ContainerUser:read`))
	req.Learned = map[string]string{}
	if err := r.b.Stage(r.ctx, req); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{backend.AttrRootAccessSIDs: `{"CONTOSO\\app":"` + sid + `"}`}
	if !maps.Equal(req.Learned, want) {
		t.Fatalf("learned %v, want %v", req.Learned, want)
	}
	root := r.rootOf(staging)
	if g := grantsOf(root, sid); len(g) != 1 {
		t.Fatalf("root DACL after stage: %+v", root)
	}

	// The domain controller is down.
	must(t, r.sim.Faults().Add(sim.Rule{Op: sim.OpSecurityLookupAccountName, Err: "unreachable"}))
	var log bytes.Buffer
	ctx := klog.NewContext(r.ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&log))))
	restage := req
	restage.Recorded, restage.Learned = req.Learned, map[string]string{}
	if err := r.b.Stage(ctx, restage); err != nil {
		t.Fatalf("restage with the SID recorded: %v", err)
	}
	if !maps.Equal(restage.Learned, want) || !slices.Equal(r.rootOf(staging).Entries, root.Entries) {
		t.Fatalf("restage: learned %v, root %+v", restage.Learned, r.rootOf(staging))
	}
	if !strings.Contains(log.String(), `"Cannot reach the domain that resolves an account name; using the SID the volume's earlier stage recorded" account="CONTOSO\\app" sid="`+sid+`"`) {
		t.Fatalf("no log line says the recorded SID was used:\n%s", log.String())
	}
	restage.Recorded = nil
	wantErr(t, "restage without a recorded SID", r.b.Stage(r.ctx, restage), host.ErrUnreachable)
}
