//go:build windows && integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// iscsiOptIn enables TestISCSILoopbackLifecycle. The test installs the
// iSCSI Target Server role on the machine (Install-WindowsFeature
// FS-iSCSITarget-Server, Windows Server only), allows loopback logins and
// starts the initiator service, none of which it undoes.
const iscsiOptIn = "CSI_WINDOWS_NODE_ISCSI_TESTS"

// loopbackTarget is an iSCSI target served by this machine (the iSCSI
// Target Server role), requiring one-way CHAP, with RAM-disk LUNs 0, 1, …
type loopbackTarget struct {
	// env holds what the scripts read as $Env:CSI_IT_<key>: TARGET,
	// VHD<n>, CHAP_USER, CHAP_SECRET, IQN and PORTAL.
	env    map[string]string
	iqn    string
	portal string // the machine's own IPv4 address (not 127.0.0.1)
	chap   host.CHAP
	suffix string // random, in every name
}

var installTarget sync.Once

// newLoopbackTarget serves a target with luns LUNs on this machine, or
// skips the test unless CSI_WINDOWS_NODE_ISCSI_TESTS=1: it installs the
// iSCSI Target Server role (Windows Server only), allows loopback logins
// and starts the initiator service, none of which it undoes. Cleanup logs
// out of the target's sessions, removes its persistent logins and portal,
// the target and its virtual disks.
//
// The setup follows the steps csi-proxy's integration tests use
// (kubernetes-csi/csi-proxy@eeba470 integrationtests/iscsi_ps_scripts.go):
// Install-WindowsFeature FS-iSCSITarget-Server, the AllowLoopBack registry
// value of the iSCSI Target service, MSiSCSI started,
// New-IscsiVirtualDisk on a RAM disk, New-IscsiServerTarget for every
// initiator, Add-IscsiVirtualDiskTargetMapping, Set-IscsiServerTarget
// -EnableChap.
func newLoopbackTarget(t *testing.T, luns int) *loopbackTarget {
	t.Helper()
	if os.Getenv(iscsiOptIn) != "1" {
		t.Skipf("no iSCSI target is configured: set %s=1 to serve one from this machine (the test installs the iSCSI Target Server role)", iscsiOptIn)
	}
	suffix := randomHex(t, 4)
	lt := &loopbackTarget{suffix: suffix, env: map[string]string{
		"TARGET":      "csiit-" + suffix,
		"CHAP_USER":   "csiit-" + suffix,
		"CHAP_SECRET": "Cs" + randomHex(t, 6), // 14 bytes: the initiator needs 12 to 16
	}}
	lt.chap = host.CHAP{User: lt.env["CHAP_USER"], Secret: host.NewSecret(lt.env["CHAP_SECRET"])}
	install := `
Install-WindowsFeature -Name FS-iSCSITarget-Server | Out-Null
Set-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\iSCSI Target' -Name AllowLoopBack -Value 1 -Type DWord
Restart-Service -Name WinTarget
Set-Service -Name MSiSCSI -StartupType Automatic
Start-Service -Name MSiSCSI
`
	var installErr error
	installTarget.Do(func() { _, installErr = runScript(t, nil, install) })
	if installErr != nil {
		t.Fatalf("install the iSCSI Target Server and start the initiator: %v", installErr)
	}
	cleanups := []string{
		`Get-IscsiSession -ErrorAction SilentlyContinue | Where-Object { $_.TargetNodeAddress -eq $Env:CSI_IT_IQN } | ForEach-Object { Unregister-IscsiSession -SessionIdentifier $_.SessionIdentifier -ErrorAction SilentlyContinue; Disconnect-IscsiTarget -SessionIdentifier $_.SessionIdentifier -Confirm:$false }`,
		`Get-IscsiTargetPortal -ErrorAction SilentlyContinue | Where-Object { $_.TargetPortalAddress -eq $Env:CSI_IT_PORTAL } | Remove-IscsiTargetPortal -Confirm:$false`,
		`Remove-IscsiServerTarget -TargetName $Env:CSI_IT_TARGET -ErrorAction SilentlyContinue`,
	}
	var mapLUNs strings.Builder
	for i := range luns {
		key := "VHD" + strconv.Itoa(i)
		lt.env[key] = "ramdisk:csiit-" + suffix + "-" + strconv.Itoa(i) + ".vhdx"
		fmt.Fprintf(&mapLUNs, "New-IscsiVirtualDisk -Path $Env:CSI_IT_%s -Size 256MB | Out-Null\n", key)
		fmt.Fprintf(&mapLUNs, "Add-IscsiVirtualDiskTargetMapping -TargetName $Env:CSI_IT_TARGET -Path $Env:CSI_IT_%s -Lun %d | Out-Null\n", key, i)
		cleanups = append(cleanups, `Remove-IscsiVirtualDisk -Path $Env:CSI_IT_`+key+` -ErrorAction SilentlyContinue`)
	}
	t.Cleanup(func() {
		// Best effort, each step on its own: the test should have left
		// nothing, but a failed one may have.
		for _, s := range cleanups {
			if _, err := runScript(t, lt.env, s); err != nil {
				t.Logf("cleanup %q: %v", s, err)
			}
		}
	})
	setup := `
$address = Get-NetIPAddress -AddressFamily IPv4 | Where-Object { $_.IPAddress -ne '127.0.0.1' -and $_.PrefixOrigin -ne 'WellKnown' } | Select-Object -First 1 -ExpandProperty IPAddress
$target = New-IscsiServerTarget -TargetName $Env:CSI_IT_TARGET -InitiatorIds @('Iqn:*')
` + mapLUNs.String() + `
$secret = ConvertTo-SecureString -String $Env:CSI_IT_CHAP_SECRET -AsPlainText -Force
$chap = New-Object -TypeName System.Management.Automation.PSCredential -ArgumentList ($Env:CSI_IT_CHAP_USER, $secret)
Set-IscsiServerTarget -TargetName $Env:CSI_IT_TARGET -EnableChap $true -Chap $chap
Write-Output ("" + $target.TargetIqn + " " + $address)
`
	out, err := runScript(t, lt.env, setup)
	if err != nil {
		t.Fatalf("set up the target: %v", err)
	}
	iqn, portal, ok := strings.Cut(lastLine(out), " ")
	if !ok || iqn == "" || portal == "" {
		t.Fatalf("setup printed %q, want \"<iqn> <address>\"", out)
	}
	lt.iqn, lt.portal = iqn, portal
	lt.env["IQN"], lt.env["PORTAL"] = iqn, portal
	t.Logf("target %s on portal %s", iqn, portal)
	return lt
}

// TestISCSILoopbackLifecycle serves two LUNs from an iSCSI target on the
// runner itself (with one-way CHAP) and drives the node service over
// pkg/winhost and the real executor through the whole iSCSI cycle:
// a wrong CHAP secret is Unauthenticated, stage → publish → write, a
// second LUN of the same target, unstage of the first keeps the session,
// unstage of the last logs out and removes the portal, restage → read back.
// The target is newLoopbackTarget's.
func TestISCSILoopbackLifecycle(t *testing.T) {
	lt := newLoopbackTarget(t, 2)
	env, iqn, portal, suffix := lt.env, lt.iqn, lt.portal, lt.suffix

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := newWinNode(t)
	ns := w.server(t, "iscsi-it", contract.Options{})

	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ntfs"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	staging := func(id string) string {
		return filepath.Join(w.kubelet, `plugins\kubernetes.io\csi\iscsi.example.com`, id, "globalmount")
	}
	target := func(id string) string {
		return filepath.Join(w.kubelet, `pods\pod-1\volumes\kubernetes.io~csi`, id, "mount")
	}
	secrets := map[string]string{
		"node.session.auth.username": env["CHAP_USER"],
		"node.session.auth.password": env["CHAP_SECRET"],
	}
	volumeContext := func(lun int) map[string]string {
		return map[string]string{"targetPortal": portal, "iqn": iqn, "lun": strconv.Itoa(lun), "sessionCHAPAuth": "true"}
	}
	stage := func(id string, lun int, sec map[string]string) error {
		if err := os.MkdirAll(staging(id), 0o750); err != nil { // as kubelet does
			t.Fatal(err)
		}
		_, err := ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging(id),
			VolumeCapability: capability, VolumeContext: volumeContext(lun), Secrets: sec})
		if err != nil && strings.Contains(err.Error(), env["CHAP_SECRET"]) {
			t.Fatalf("stage %s: the error reveals the CHAP secret", id)
		}
		return err
	}
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	unstage := func(id string) error {
		_, err := ns.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging(id)})
		return err
	}
	publish := func(id string) error {
		_, err := ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging(id),
			TargetPath: target(id), VolumeCapability: capability})
		return err
	}
	unpublish := func(id string) error {
		_, err := ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target(id)})
		return err
	}
	count := func(script string) string {
		t.Helper()
		out, err := runScript(t, env, script)
		if err != nil {
			t.Fatalf("inspect: %v", err)
		}
		return out
	}
	sessions := func() string {
		return count(`@(Get-IscsiSession -ErrorAction SilentlyContinue | Where-Object { $_.TargetNodeAddress -eq $Env:CSI_IT_IQN }).Count`)
	}
	portals := func() string {
		return count(`@(Get-IscsiTargetPortal -ErrorAction SilentlyContinue | Where-Object { $_.TargetPortalAddress -eq $Env:CSI_IT_PORTAL }).Count`)
	}

	wrong := map[string]string{"node.session.auth.username": env["CHAP_USER"], "node.session.auth.password": "Wrong-secret-1"}
	if err := stage("iscsi-it-wrong", 0, wrong); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("stage with a wrong CHAP secret: %v, want Unauthenticated", err)
	}
	if n := sessions(); n != "0" {
		t.Fatalf("%s sessions after the failed stage, want 0", n)
	}

	step("stage v0", stage("iscsi-it-v0", 0, secrets))
	if n := sessions(); n != "1" {
		t.Fatalf("%s sessions after stage, want 1", n)
	}
	if p := count(`@(Get-IscsiSession | Where-Object { $_.TargetNodeAddress -eq $Env:CSI_IT_IQN -and $_.IsPersistent }).Count`); p != "1" {
		t.Fatalf("%s persistent sessions, want 1", p)
	}
	step("publish v0", publish("iscsi-it-v0"))
	data := []byte("written through the published path " + suffix + "\r\n")
	step("write", os.WriteFile(filepath.Join(target("iscsi-it-v0"), "hello.txt"), data, 0o640))
	hl, err := ns.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "iscsi-it-v0", StagingTargetPath: staging("iscsi-it-v0")})
	if err != nil || len(hl.GetVolumeHealth().GetHealthStatuses()) != 0 {
		t.Fatalf("health = %v, %v", hl, err)
	}

	step("stage v1 (LUN 1 of the same target)", stage("iscsi-it-v1", 1, secrets))
	step("unpublish v0", unpublish("iscsi-it-v0"))
	step("unstage v0", unstage("iscsi-it-v0"))
	if n := sessions(); n != "1" {
		t.Fatalf("%s sessions after unstaging one of two volumes, want 1", n)
	}
	step("unstage v1", unstage("iscsi-it-v1"))
	if n := sessions(); n != "0" {
		t.Fatalf("%s sessions after the last unstage, want 0", n)
	}
	if n := portals(); n != "0" {
		t.Fatalf("%s portals after the last unstage, want 0", n)
	}

	step("restage v0", stage("iscsi-it-v0", 0, secrets))
	step("republish v0", publish("iscsi-it-v0"))
	got, err := os.ReadFile(filepath.Join(target("iscsi-it-v0"), "hello.txt"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back after restage: %q, %v", got, err)
	}
	step("unpublish v0", unpublish("iscsi-it-v0"))
	step("unstage v0", unstage("iscsi-it-v0"))
	if n := sessions(); n != "0" {
		t.Fatalf("%s sessions at the end, want 0", n)
	}
}
