//go:build windows && integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

// TestHostContract runs the host contract (pkg/host/hosttest) against
// winhost over the real executor: the same cases the simulated host and
// the scripted executor answer in make test, here answered by Windows, on
// VHDX disks. A case that fails here shows where the documentation (and so
// the other two) is wrong; a case that accepts several answers logs the
// one Windows gave (go test -v).
//
// What the cases need is served by this machine itself: the SMB cases use
// two local accounts and two shares of its own SMB server (reached as
// \\<COMPUTERNAME>\…), and the server-drops case stops that server
// (LanmanServer) and starts it again; the iSCSI cases use a target of the
// iSCSI Target Server role (newLoopbackTarget), which they install only
// with CSI_WINDOWS_NODE_ISCSI_TESTS=1 and otherwise skip, saying so. A
// reboot is stood in for by restarting the initiator service (MSiSCSI),
// which logs in to the persistent targets when it starts (uncertain that
// it restores them as a boot does; the case shows it).
func TestHostContract(t *testing.T) {
	requireHost(t)
	hosttest.Run(t, windowsEnv{})
}

type windowsEnv struct{}

// Disk states are set with the Storage cmdlets in test setup (never by
// the plugin): Initialize-Disk, New-Partition, Format-Volume and Set-Disk.
const (
	psInitialize = `Initialize-Disk -Number ([uint32]$Env:CSI_IT_DISK) -PartitionStyle GPT`
	psPartition  = psInitialize + `; New-Partition -DiskNumber ([uint32]$Env:CSI_IT_DISK) -UseMaximumSize -AssignDriveLetter:$false | Out-Null`
	psFormat     = psPartition + `; Get-Partition -DiskNumber ([uint32]$Env:CSI_IT_DISK) | Where-Object Type -eq Basic | Format-Volume -FileSystem NTFS -Confirm:$false | Out-Null`
	psReadOnly   = `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsReadOnly $true`
	psOffline    = `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsOffline $true`
	psOnline     = `$d = Get-Disk -Number ([uint32]$Env:CSI_IT_DISK); if ($d.IsOffline) { Set-Disk -Number $d.Number -IsOffline $false }; if ($d.IsReadOnly) { Set-Disk -Number $d.Number -IsReadOnly $false }`
)

func (windowsEnv) Prepare(t *testing.T, c *hosttest.Case) hosttest.Fixture {
	w := newWinNode(t)
	dir := filepath.Join(w.kubelet, "contract", "dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := hosttest.Fixture{
		Host:          w.host,
		Dir:           dir,
		Path:          func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) },
		MissingVolume: `\\?\Volume{` + randomHex(t, 4) + `-0000-4000-8000-` + randomHex(t, 6) + `}\`,
		MissingShare:  `\\nosuchserver.invalid\share`,
		MissingPortal: host.Portal{Address: "192.0.2.1", Port: host.DefaultISCSIPort}, // TEST-NET-1, never registered
		MissingTarget: "iqn.2000-01.invalid:none",
	}
	disks, err := w.host.Disks.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.Number >= f.MissingDisk {
			f.MissingDisk = d.Number + 100
		}
		if d.IsCritical() && f.Disk.Ref == "" && c.Given == hosttest.CriticalDisk {
			f.Disk = d
		}
	}
	f.DropServer = func(t *testing.T) { t.Skipf("%s has no server to drop", c.Given) }
	f.Reboot = func(t *testing.T) { t.Skipf("%s has nothing to reboot", c.Given) }
	switch c.Given {
	case hosttest.SMBShares:
		smbShares(t, &f)
		return f
	case hosttest.ISCSITarget, hosttest.BusyISCSITarget:
		iscsiTarget(t, w, &f, c.Given == hosttest.BusyISCSITarget)
		return f
	}
	if c.Given == hosttest.Nothing || c.Given == hosttest.CriticalDisk {
		if c.Given == hosttest.CriticalDisk && f.Disk.Ref == "" {
			t.Skip("no boot or system disk reported")
		}
		return f
	}
	v := newVHD(t, 1<<30)
	scripts := map[hosttest.Given][]string{
		hosttest.OfflineDisk:       {psOnline, psInitialize, psOffline},
		hosttest.OfflineBlankDisk:  {psOnline, psReadOnly, psOffline},
		hosttest.BlankDisk:         {psOnline},
		hosttest.ReadOnlyBlankDisk: {psOnline, psReadOnly},
		hosttest.OnlineDisk:        {psOnline, psInitialize},
		hosttest.RawVolume:         {psOnline, psPartition},
		hosttest.FormattedVolume:   {psOnline, psFormat},
		hosttest.ReadOnlyVolume:    {psOnline, psFormat, psReadOnly},
		hosttest.DirWithFile:       {psOnline, psFormat},
	}
	steps, ok := scripts[c.Given]
	if !ok {
		t.Fatalf("no setup for %q", c.Given)
	}
	for _, s := range steps {
		mustPowershell(t, s, v.env())
	}
	if f.Disk, err = w.host.Disks.Get(ctx, v.disk); err != nil {
		t.Fatal(err)
	}
	switch c.Given {
	case hosttest.RawVolume, hosttest.FormattedVolume, hosttest.ReadOnlyVolume, hosttest.DirWithFile:
		parts, err := w.host.Disks.Partitions(ctx, f.Disk)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if !p.IsReserved() {
				f.Partition = p
			}
		}
		if f.Volume, err = w.host.Volumes.OfPartition(ctx, f.Partition); err != nil {
			t.Fatal(fmt.Errorf("the volume of disk %d: %w", v.disk, err))
		}
	}
	if c.Given == hosttest.DirWithFile {
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// smbShares serves the SMBShares state from this machine: two local
// accounts and two shares of its own SMB server, the first share open to
// the first account, the second to both. Cleanup removes the global
// mappings of both shares, the shares and the accounts.
func smbShares(t *testing.T, f *hosttest.Fixture) {
	t.Helper()
	computer := strings.ToLower(os.Getenv("COMPUTERNAME"))
	if computer == "" {
		t.Skip("COMPUTERNAME is not set: the SMB cases reach this machine's own shares by its name")
	}
	suffix := randomHex(t, 4)
	env := map[string]string{
		"USER":           "csiita" + suffix,
		"PASSWORD":       "Aa1!" + randomHex(t, 16), // meets the default complexity policy
		"OTHER_USER":     "csiitb" + suffix,
		"OTHER_PASSWORD": "Aa1!" + randomHex(t, 16),
		"SHARE":          "csiit" + suffix,
		"OTHER_SHARE":    "csiito" + suffix,
		"DIR":            t.TempDir(),
		"OTHER_DIR":      t.TempDir(),
	}
	f.Share = `\\` + computer + `\` + env["SHARE"]
	f.OtherShare = `\\` + computer + `\` + env["OTHER_SHARE"]
	env["REMOTE"], env["OTHER_REMOTE"] = f.Share, f.OtherShare
	// A local account is named with the computer as its domain
	// (csi-driver-smb known-issues.md #1).
	f.User = host.Credential{User: computer + `\` + env["USER"], Password: host.NewSecret(env["PASSWORD"])}
	f.OtherUser = host.Credential{User: computer + `\` + env["OTHER_USER"], Password: host.NewSecret(env["OTHER_PASSWORD"])}
	t.Cleanup(func() {
		// Best effort, each step on its own.
		for _, s := range []string{
			`Get-SmbGlobalMapping -ErrorAction SilentlyContinue | Where-Object { $_.RemotePath -eq $Env:CSI_IT_REMOTE -or $_.RemotePath -eq $Env:CSI_IT_OTHER_REMOTE } | Remove-SmbGlobalMapping -Force`,
			`Remove-SmbShare -Name $Env:CSI_IT_SHARE -Force -ErrorAction SilentlyContinue`,
			`Remove-SmbShare -Name $Env:CSI_IT_OTHER_SHARE -Force -ErrorAction SilentlyContinue`,
			`Remove-LocalUser -Name $Env:CSI_IT_USER -ErrorAction SilentlyContinue`,
			`Remove-LocalUser -Name $Env:CSI_IT_OTHER_USER -ErrorAction SilentlyContinue`,
		} {
			if _, err := runScript(t, env, s); err != nil {
				t.Logf("cleanup %q: %v", s, err)
			}
		}
	})
	mustPowershell(t, `
function Grant($dir, $user) {
  $acl = Get-Acl -Path $dir
  $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($user, 'Modify', 'ContainerInherit,ObjectInherit', 'None', 'Allow')
  $acl.AddAccessRule($rule)
  Set-Acl -Path $dir -AclObject $acl
}
New-LocalUser -Name $Env:CSI_IT_USER -Password (ConvertTo-SecureString -String $Env:CSI_IT_PASSWORD -AsPlainText -Force) -AccountNeverExpires -PasswordNeverExpires | Out-Null
New-LocalUser -Name $Env:CSI_IT_OTHER_USER -Password (ConvertTo-SecureString -String $Env:CSI_IT_OTHER_PASSWORD -AsPlainText -Force) -AccountNeverExpires -PasswordNeverExpires | Out-Null
Grant $Env:CSI_IT_DIR $Env:CSI_IT_USER
Grant $Env:CSI_IT_OTHER_DIR $Env:CSI_IT_USER
Grant $Env:CSI_IT_OTHER_DIR $Env:CSI_IT_OTHER_USER
New-SmbShare -Name $Env:CSI_IT_SHARE -Path $Env:CSI_IT_DIR -FullAccess $Env:CSI_IT_USER | Out-Null
New-SmbShare -Name $Env:CSI_IT_OTHER_SHARE -Path $Env:CSI_IT_OTHER_DIR -FullAccess @($Env:CSI_IT_USER, $Env:CSI_IT_OTHER_USER) | Out-Null
`, env)
	f.DropServer = func(t *testing.T) {
		t.Helper()
		// Stop this machine's SMB server, and wait (bounded) until the
		// share no longer answers through the mapping, so that no cached
		// attribute (the SMB client keeps them for seconds) hides it.
		t.Cleanup(func() {
			if _, err := runScript(t, env, `Start-Service -Name LanmanServer`); err != nil {
				t.Errorf("start the SMB server (LanmanServer) again: %v", err)
			}
		})
		if _, err := runScript(t, env, `
Stop-Service -Name LanmanServer -Force
for ($i = 0; $i -lt 120 -and (Test-Path -LiteralPath $Env:CSI_IT_REMOTE); $i++) { Start-Sleep -Seconds 1 }
if (Test-Path -LiteralPath $Env:CSI_IT_REMOTE) { throw 'the share still answers two minutes after its server stopped' }
`); err != nil {
			t.Skipf("cannot drop this machine's SMB server (LanmanServer): %v", err)
		}
	}
}

// iscsiTarget serves the ISCSITarget state from a target of this machine
// (newLoopbackTarget: skipped unless CSI_WINDOWS_NODE_ISCSI_TESTS=1) and,
// with busy, logs in and mounts a volume of its LUN at f.Dir
// (BusyISCSITarget).
func iscsiTarget(t *testing.T, w *winNode, f *hosttest.Fixture, busy bool) {
	t.Helper()
	lt := newLoopbackTarget(t, 1)
	f.Portal = host.Portal{Address: lt.portal, Port: host.DefaultISCSIPort}
	f.Target, f.CHAP = lt.iqn, lt.chap
	f.Reboot = func(t *testing.T) {
		t.Helper()
		if _, err := runScript(t, lt.env, `
$persistent = @(Get-IscsiSession -ErrorAction SilentlyContinue | Where-Object { $_.TargetNodeAddress -eq $Env:CSI_IT_IQN -and $_.IsPersistent }).Count
Restart-Service -Name MSiSCSI -Force
for ($i = 0; $i -lt 60; $i++) {
  if (@(Get-IscsiSession -ErrorAction SilentlyContinue | Where-Object { $_.TargetNodeAddress -eq $Env:CSI_IT_IQN }).Count -ge $persistent) { break }
  Start-Sleep -Seconds 1
}
`); err != nil {
			t.Skipf("cannot restart the iSCSI initiator service (MSiSCSI) to stand in for a reboot: %v", err)
		}
	}
	if !busy {
		return
	}
	hosttest.LoginAndMount(t, f)
	t.Cleanup(func() {
		// A failed case may leave the volume mounted, which would keep
		// the target's cleanup from logging out.
		ctx := context.Background()
		_ = w.host.Volumes.Unmount(ctx, f.Dir)         // best effort: gone when the case passed
		_ = w.host.Disks.SetOnline(ctx, f.Disk, false) // idem
	})
}
