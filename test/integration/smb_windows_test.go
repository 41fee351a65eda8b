//go:build windows && integration

package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/windows"

	"github.com/wincsi/csi-windows-node/pkg/contract"
)

// TestSMBGlobalMappingLifecycle creates a local user and an SMB share on
// the runner itself, stages and publishes a directory of the share through
// the node service over the real executor, writes through the published
// path, reads the file back from the share's local directory, and checks
// that unstaging removes the global mapping.
func TestSMBGlobalMappingLifecycle(t *testing.T) {
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Skip("the SMB integration test needs an elevated (administrator) process: it creates a local user, a share and a global mapping")
	}
	if os.Getenv("COMPUTERNAME") == "" {
		t.Skip("COMPUTERNAME is not set")
	}
	computer := strings.ToLower(os.Getenv("COMPUTERNAME"))
	suffix := randomHex(t, 4)
	// Read by the scripts as $Env:CSI_IT_<key>.
	env := map[string]string{
		"USER":     "csiit" + suffix,
		"PASSWORD": "Aa1!" + randomHex(t, 16), // meets the default complexity policy
		"SHARE":    "csiit" + suffix,
		"DIR":      t.TempDir(),
	}
	remote := `\\` + computer + `\` + env["SHARE"]
	env["REMOTE"] = remote

	t.Cleanup(func() {
		// Best effort, each step on its own: a failed setup may have
		// created only some of these.
		for _, s := range []string{
			`Get-SmbGlobalMapping -RemotePath $Env:CSI_IT_REMOTE -ErrorAction SilentlyContinue | Remove-SmbGlobalMapping -Force`,
			`Remove-SmbShare -Name $Env:CSI_IT_SHARE -Force -ErrorAction SilentlyContinue`,
			`Remove-LocalUser -Name $Env:CSI_IT_USER -ErrorAction SilentlyContinue`,
		} {
			if _, err := runScript(t, env, s); err != nil {
				t.Logf("cleanup %q: %v", s, err)
			}
		}
	})
	setup := `
$pw = ConvertTo-SecureString -String $Env:CSI_IT_PASSWORD -AsPlainText -Force
New-LocalUser -Name $Env:CSI_IT_USER -Password $pw -AccountNeverExpires -PasswordNeverExpires | Out-Null
New-Item -ItemType Directory -Path (Join-Path $Env:CSI_IT_DIR 'v1') -Force | Out-Null
$acl = Get-Acl -Path $Env:CSI_IT_DIR
$rule = New-Object System.Security.AccessControl.FileSystemAccessRule($Env:CSI_IT_USER, 'Modify', 'ContainerInherit,ObjectInherit', 'None', 'Allow')
$acl.AddAccessRule($rule)
Set-Acl -Path $Env:CSI_IT_DIR -AclObject $acl
New-SmbShare -Name $Env:CSI_IT_SHARE -Path $Env:CSI_IT_DIR -FullAccess $Env:CSI_IT_USER | Out-Null
`
	if _, err := runScript(t, env, setup); err != nil {
		t.Fatalf("set up the user and the share: %v", err)
	}
	mappings := func() string {
		t.Helper()
		out, err := runScript(t, env, `@(Get-SmbGlobalMapping -RemotePath $Env:CSI_IT_REMOTE -ErrorAction SilentlyContinue).Count`)
		if err != nil {
			t.Fatalf("Get-SmbGlobalMapping: %v", err)
		}
		return out
	}
	if n := mappings(); n != "0" {
		t.Fatalf("%s is already mapped (%s mappings) before the test", remote, n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := newWinNode(t)
	ns := w.server(t, computer, contract.Options{RequirePrivacy: true})

	const volumeID = "smb-it-v1"
	staging := filepath.Join(w.kubelet, `plugins\kubernetes.io\csi\smb.example.com`, volumeID, "globalmount")
	target := filepath.Join(w.kubelet, `pods\pod-1\volumes\kubernetes.io~csi`, volumeID, "mount")
	if err := os.MkdirAll(staging, 0o750); err != nil { // as kubelet does
		t.Fatal(err)
	}
	smbCap := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
	// A local account is named with the computer as its domain
	// (csi-driver-smb known-issues.md #1).
	secrets := map[string]string{"username": computer + `\` + env["USER"], "password": env["PASSWORD"]}
	leaks := func(what string, err error) {
		t.Helper()
		if err != nil && strings.Contains(err.Error(), env["PASSWORD"]) {
			t.Fatalf("%s: the error reveals the password", what)
		}
	}

	_, err := ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId:          volumeID,
		StagingTargetPath: staging,
		VolumeCapability:  smbCap,
		VolumeContext:     map[string]string{"source": remote, "subDir": "v1"},
		Secrets:           secrets,
	})
	leaks("stage", err)
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	if n := mappings(); n != "1" {
		t.Fatalf("%s mappings of %s after stage, want 1", n, remote)
	}
	_, err = ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: volumeID, StagingTargetPath: staging, TargetPath: target, VolumeCapability: smbCap,
	})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}

	data := []byte("written through the published path " + suffix + "\r\n")
	if err := os.WriteFile(filepath.Join(target, "hello.txt"), data, 0o640); err != nil {
		t.Fatalf("write through the published path: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(env["DIR"], "v1", "hello.txt"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back from the share's directory: %q, %v", got, err)
	}
	st, err := ns.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: volumeID, VolumePath: target})
	if err != nil || len(st.GetUsage()) != 1 || st.GetUsage()[0].GetTotal() <= 0 {
		t.Fatalf("stats = %v, %v", st, err)
	}
	hl, err := ns.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: volumeID, StagingTargetPath: staging})
	if err != nil || len(hl.GetVolumeHealth().GetHealthStatuses()) != 0 {
		t.Fatalf("health = %v, %v", hl, err)
	}

	if _, err := ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: target}); err != nil {
		t.Fatalf("unpublish: %v", err)
	}
	if _, err := ns.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging}); err != nil {
		t.Fatalf("unstage: %v", err)
	}
	if n := mappings(); n != "0" {
		t.Fatalf("%s mappings of %s after unstage, want 0", n, remote)
	}
	if fi, err := os.Lstat(staging); err != nil || !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("staging path after unstage: %v, %v; want an empty directory", fi, err)
	}
	// Unstaging removes links, never data.
	if _, err := os.Stat(filepath.Join(env["DIR"], "v1", "hello.txt")); err != nil {
		t.Fatalf("the file on the share after unstage: %v", err)
	}
}
