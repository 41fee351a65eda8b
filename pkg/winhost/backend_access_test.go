package winhost_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// withRootAccess is stageRequest with volumeRootAccess.
func withRootAccess(t *testing.T, sel contract.DiskSelector, value string) contract.Volume {
	t.Helper()
	a, err := contract.ParseRootAccess("volumeRootAccess", value)
	if err != nil {
		t.Fatal(err)
	}
	v := stageRequest(sel).Volume
	v.RootAccess = a
	return v
}

// TestBackendStageRootAccess: the disk backend over winhost with
// volumeRootAccess "ContainerUser:modify": a first stage mounts the volume,
// reads the root's descriptor and writes exactly the descriptor of
// security_test.go (the Windows Server root with the grant after its
// entries); a repeated stage reads it and writes nothing; neither costs a
// WMI round trip more.
func TestBackendStageRootAccess(t *testing.T) {
	sel := contract.DiskSelector{Serial: serial}
	attached := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT, Size: 10 << 30}
	msr := partSpec{Disk: 1, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
	data := partSpec{Disk: 1, Number: 2, Offset: dataOffset, Size: 10<<30 - 16<<20 - 1<<20, GptType: host.GptTypeBasicData}
	t.Run("first stage", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(attached)}})
		r.e.ExpectQuery(ns, wqlPartsOf(1), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(data)}})
		r.e.ExpectAssociators(ns, partRef(1, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
			scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, 10<<30-18<<20)}})
		r.e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guidA}, ok())
		r.e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRoot)})
		r.e.ExpectWin32("SetSecurityInfo", []any{guidA, dacl, hexBytes(t, serverRootGrantedACL)}, ok())
		req := stageRequest(sel)
		req.Volume = withRootAccess(t, sel, "ContainerUser:modify")
		if err := r.b.Stage(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		checkSequence(t, r, "GetFileAttributes", "Query MSFT_Disk", "Query MSFT_Partition", "Associators MSFT_PartitionToVolume",
			"SetVolumeMountPoint", "UpdateFileDACL", "SetSecurityInfo")
	})
	t.Run("repeated stage", func(t *testing.T) {
		r := newRig(t)
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(attached)}})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRootGranted)})
		req := stageRequest(sel)
		req.Volume = withRootAccess(t, sel, "ContainerUser:modify")
		if err := r.b.Stage(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		checkSequence(t, r, "GetFileAttributes", "ReadReparsePoint", "Query MSFT_Disk", "VolumeDiskExtents", "UpdateFileDACL")
		if n := r.e.WMIRoundTrips(); n != 1 {
			t.Fatalf("repeated stage: %d WMI round trips, want 1", n)
		}
	})
	t.Run("an account name Windows does not know", func(t *testing.T) {
		// Resolved first: nothing is looked at or changed before.
		r := newRig(t)
		r.e.ExpectWin32("LookupAccountName", []any{`CONTOSO\nobody`}, scripted.Reply{Err: w32("LookupAccountName", winhost.ErrorNoneMapped)})
		req := stageRequest(sel)
		req.Volume = withRootAccess(t, sel, `ContainerUser:modify;CONTOSO\nobody:read`)
		err := r.b.Stage(context.Background(), req)
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Key != "volumeRootAccess" {
			t.Fatalf("Stage = %v, want a contract error naming volumeRootAccess", err)
		}
		checkSequence(t, r, "LookupAccountName")
	})
	t.Run("an account name resolved", func(t *testing.T) {
		r := newRig(t)
		sid, err := winacl.ParseSID("S-1-5-21-1-2-3-1107")
		if err != nil {
			t.Fatal(err)
		}
		r.e.ExpectWin32("LookupAccountName", []any{`CONTOSO\app`}, scripted.Reply{Bytes: sid, Uint32: 1})
		r.e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		r.e.ExpectWin32("ReadReparsePoint", []any{lStage}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		r.e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(attached)}})
		r.e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		r.e.ExpectWin32("UpdateFileDACL", []any{guidA}, scripted.Reply{Bytes: hexBytes(t, serverRootGranted)})
		// ContainerUser is there; the account's entry goes after it:
		// 192 + 36 bytes, 9 entries.
		r.e.ExpectWin32("SetSecurityInfo", []any{guidA, dacl, hexBytes(t, "02 00 e400 0900 0000"+serverEntries+aceContainerUserModify+
			"00 03 2400 a9001200 01 05 000000000005 15000000 01000000 02000000 03000000 53040000")}, ok())
		req := stageRequest(sel)
		req.Volume = withRootAccess(t, sel, `ContainerUser:modify;CONTOSO\app:read`)
		if err := r.b.Stage(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
}
