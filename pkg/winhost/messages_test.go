package winhost_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// The messages a user reads. The node service hands a CSI client the
// backend's error text as the status message, unchanged (pkg/node,
// toStatus), so the full text below is what kubectl describe shows for a
// failed NodeStageVolume on Windows. One rule makes it (pkg/winhost,
// errors.go): the callee names the operation, the caller adds only what
// it alone knows; no phrase appears twice.
func TestMessages(t *testing.T) {
	jr := func(t *testing.T) *journal.Journal {
		j, err := journal.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	fast := backend.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Attempts: 3}
	tests := []struct {
		name string
		run  func(t *testing.T, e *scripted.Executor) error
		is   error
		want string
	}{{
		// The Online page lists 41018 (failover clustering).
		name: "a failed online", is: host.ErrConflict,
		run: func(t *testing.T, e *scripted.Executor) error {
			off := diskSpec{Number: 1, Serial: serial, Style: host.PartitionStyleGPT, Offline: true, OfflineReason: host.OfflineReasonPolicy}
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(off)}})
			e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(off)}})
			e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Online"}, rv(41018))
			b := disk.New(winhost.New(e), jr(t), disk.Options{Backoff: fast})
			return b.Stage(context.Background(), stageRequest(contract.DiskSelector{Serial: serial}))
		},
		want: "bring disk 1 online: MSFT_Disk.Online returned 41018 (the object is managed by the Microsoft Failover Clustering component): conflict",
	}, {
		// HRESULT_FROM_WIN32(ERROR_SESSION_CREDENTIAL_CONFLICT), the code
		// New-SmbGlobalMapping shows (kubernetes-csi/csi-driver-smb#219).
		name: "1219 on map", is: host.ErrCredentialConflict,
		run: func(t *testing.T, e *scripted.Executor) error {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectWin32("DirectoryHasEntries", []any{lStage}, scripted.Reply{Bool: false})
			e.ExpectQuery(nsSMB, wqlMapping(`\\srv\data`), scripted.Reply{})
			e.ExpectMatching(scripted.KindCall, func(c scripted.Call) string {
				if c.Method.Class != "MSFT_SmbGlobalMapping" || c.Method.Name != "Create" {
					return "not MSFT_SmbGlobalMapping.Create"
				}
				return ""
			}, scripted.Reply{Err: &winhost.COMError{Op: "ExecMethod MSFT_SmbGlobalMapping.Create", HResult: 0x800704C3}})
			b := smb.New(winhost.New(e), jr(t), smb.Options{})
			return b.Stage(context.Background(), backend.StageRequest{VolumeID: "pv-1", StagingPath: staging, Volume: contract.Volume{
				Kind: contract.KindSMB, SMB: &contract.SMBSpec{Server: "srv", Share: "data", RequirePrivacy: true,
					Credential: host.Credential{User: `CORP\bob`, Password: host.NewSecret("bob-password")}}}})
		},
		want: "this node is already connected to server srv under another user name; all volumes of one server must use the same credentials, " +
			"or the other mapping must be removed (Get-SmbGlobalMapping, Remove-SmbGlobalMapping): " +
			`create the global mapping of \\srv\data as user CORP\bob: ` +
			"ExecMethod MSFT_SmbGlobalMapping.Create: HRESULT 0x800704C3: win32 error 1219 (ERROR_SESSION_CREDENTIAL_CONFLICT): credential conflict",
	}, {
		// ISDSC_AUTHENTICATION_FAILURE as the HRESULT of Connect.
		name: "a CHAP failure on login", is: host.ErrLogonFailure,
		run: func(t *testing.T, e *scripted.Executor) error {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectQuery(iscNS, wqlSessions, scripted.Reply{})
			listed := iscPortalInst(iscPortalPath, "10.0.0.1", 3260)
			listed.Props["IsDataDigest"], listed.Props["IsHeaderDigest"] = nil, nil // not selected: null
			e.ExpectQuery(iscNS, wqlPortalList, scripted.Reply{Instances: []winhost.Instance{listed}})
			e.ExpectQuery(iscNS, wqlPortal1, scripted.Reply{Instances: []winhost.Instance{iscPortalInst(iscPortalPath, "10.0.0.1", 3260)}})
			e.ExpectAssociators(iscNS, iscPortalPath, "MSFT_iSCSITargetToiSCSITargetPortal", "MSFT_iSCSITarget", scripted.Reply{
				Instances: []winhost.Instance{{Path: iscTargetPath, Class: "MSFT_iSCSITarget", Props: map[string]any{"NodeAddress": iscIQN, "IsConnected": false}}}})
			e.ExpectMatching(scripted.KindCall, func(c scripted.Call) string {
				if c.Method.Class != "MSFT_iSCSITarget" || c.Method.Name != "Connect" {
					return "not MSFT_iSCSITarget.Connect"
				}
				return ""
			}, iscCOM("ExecMethod MSFT_iSCSITarget.Connect", isdscAuthFailure))
			h := winhost.New(e)
			j := jr(t)
			b := iscsi.New(h, disk.New(h, j, disk.Options{Backoff: fast}), j, iscsi.Options{Backoff: fast})
			return b.Stage(context.Background(), backend.StageRequest{VolumeID: "pv-1", StagingPath: staging, Volume: contract.Volume{
				Kind: contract.KindISCSI, FS: contract.FileSystem{Type: "NTFS"}, ISCSI: &contract.ISCSISpec{
					Portals: []host.Portal{iscPortal1}, IQN: iscIQN, SessionAuth: host.AuthOneWay,
					SessionCHAP: host.CHAP{User: "k8s-node", Secret: host.NewSecret(iscSecret)}}}})
		},
		want: "the target rejected the CHAP credentials of the node-stage secret (node.session.auth.username, node.session.auth.password): " +
			"log in to iSCSI target iqn.2024-01.test.array:vol1 through portal 10.0.0.1:3260: " +
			"ExecMethod MSFT_iSCSITarget.Connect: HRESULT 0xEFFF0009 (authentication failure): logon failure",
	}, {
		// A read-only stage of an offline disk where Windows refuses to
		// set read-only while the disk is offline (issue 23 item 2).
		name: "a read-only stage Windows refuses", is: host.ErrConflict,
		run: func(t *testing.T, e *scripted.Executor) error {
			off := diskSpec{Number: 2, Serial: serial, Style: host.PartitionStyleGPT, Offline: true, OfflineReason: host.OfflineReasonPolicy}
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), diskInst(off)}})
			e.ExpectQuery(ns, wqlDisk(2), scripted.Reply{Instances: []winhost.Instance{diskInst(off)}})
			e.ExpectCall(ns, setAttributes(2, true), rv(41003))
			r := stageRequest(contract.DiskSelector{Serial: serial})
			r.ReadOnly = true
			return disk.New(winhost.New(e), jr(t), disk.Options{Backoff: fast}).Stage(context.Background(), r)
		},
		want: "the offline disk cannot be made read-only (Windows refuses while it is offline), and the disk of a read-only volume " +
			"is never brought online writable, so it stays offline: " +
			"set read-only=true on disk 2: MSFT_Disk.SetAttributes returned 41003 (the disk is offline): not ready: conflict",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(t, scripted.New(t))
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("message:\n got  %s\n want %s", got, tt.want)
			}
		})
	}
}
