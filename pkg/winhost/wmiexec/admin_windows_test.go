package wmiexec

import (
	"context"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// The layouts of the structures the operator's calls hand to Windows
// themselves (x/sys declares neither): a wrong offset is a crash or a
// silently wrong call on the node.
func TestAdminStructLayouts(t *testing.T) {
	// RESIZE_VIRTUAL_DISK_PARAMETERS: a RESIZE_VIRTUAL_DISK_VERSION
	// (an enum, 4 bytes), then the union whose ULONGLONG aligns it at 8
	// (learn.microsoft.com/windows/win32/api/virtdisk/ns-virtdisk-resize_virtual_disk_parameters).
	var r resizeVirtualDiskParameters
	if got := unsafe.Sizeof(r); got != 16 {
		t.Errorf("sizeof RESIZE_VIRTUAL_DISK_PARAMETERS = %d, want 16", got)
	}
	if got := unsafe.Offsetof(r.newSize); got != 8 {
		t.Errorf("offset of Version1.NewSize = %d, want 8", got)
	}
	// USER_INFO_1: LPWSTR name, password; DWORD password_age, priv;
	// LPWSTR home_dir, comment; DWORD flags; LPWSTR script_path
	// (learn.microsoft.com/windows/win32/api/lmaccess/ns-lmaccess-user_info_1),
	// with C's natural alignment.
	var u userInfo1
	p := unsafe.Sizeof(uintptr(0))
	align := func(n uintptr) uintptr { return (n + p - 1) &^ (p - 1) }
	want := map[string][2]uintptr{
		"password":    {unsafe.Offsetof(u.password), p},
		"passwordAge": {unsafe.Offsetof(u.passwordAge), 2 * p},
		"priv":        {unsafe.Offsetof(u.priv), 2*p + 4},
		"homeDir":     {unsafe.Offsetof(u.homeDir), align(2*p + 8)},
		"comment":     {unsafe.Offsetof(u.comment), align(2*p+8) + p},
		"flags":       {unsafe.Offsetof(u.flags), align(2*p+8) + 2*p},
		"scriptPath":  {unsafe.Offsetof(u.scriptPath), align(align(2*p+8) + 2*p + 4)},
	}
	for field, w := range want {
		if w[0] != w[1] {
			t.Errorf("offset of USER_INFO_1 %s = %d, want %d", field, w[0], w[1])
		}
	}
	if got, w := unsafe.Sizeof(u), align(align(2*p+8)+2*p+4)+p; got != w {
		t.Errorf("sizeof USER_INFO_1 = %d, want %d", got, w)
	}
}

// The operator's read-only calls answer on any Windows, without
// administrator rights: the token, a service every Windows runs, the
// registry value preflight reads the build from, the volume of the
// temporary directory.
func TestAdminReadOnlyCalls(t *testing.T) {
	e := newTestExecutor(t)
	ctx := context.Background()

	tok, err := e.ProcessToken(ctx)
	if err != nil || !strings.HasPrefix(tok.User, "S-1-") {
		t.Errorf("ProcessToken() = %+v, %v", tok, err)
	}
	svc, err := e.QueryService(ctx, "LanmanWorkstation")
	if err != nil || svc.State == 0 || svc.StartType > host.StartDisabled {
		t.Errorf("QueryService(LanmanWorkstation) = %+v, %v", svc, err)
	}
	_, err = e.QueryService(ctx, "csiwn-no-such-service")
	wantCode(t, "QueryService(missing)", err, winhost.ErrorServiceDoesNotExist)

	build, err := e.RegistryValue(ctx, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, "CurrentBuild")
	if s, ok := build.(string); err != nil || !ok || s == "" {
		t.Errorf("RegistryValue(CurrentBuild) = %#v, %v; want a string", build, err)
	}
	_, err = e.RegistryValue(ctx, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, "csiwn-no-such-value")
	wantCode(t, "RegistryValue(missing)", err, winhost.ErrorFileNotFound)

	root, err := e.GetVolumePathName(ctx, os.TempDir())
	if err != nil || !strings.HasSuffix(root, `\`) {
		t.Fatalf("GetVolumePathName(%s) = %q, %v", os.TempDir(), root, err)
	}
	if dt, err := e.GetDriveType(ctx, root); err != nil || host.DriveType(dt) != host.DriveFixed {
		t.Errorf("GetDriveType(%s) = %d, %v; want fixed", root, dt, err)
	}
	if fs, err := e.GetVolumeFileSystem(ctx, root); err != nil || fs == "" {
		t.Errorf("GetVolumeFileSystem(%s) = %q, %v", root, fs, err)
	}
}
