package winhost_test

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// The persistent logins as ReportIScsiPersistentLoginsW returns them: an
// array of PERSISTENT_ISCSI_LOGIN_INFOW (iscsidsc.h). The offsets below
// are those C alignment gives the structure on amd64 (WCHAR TargetName[224]
// at 0, BOOLEAN at 448, WCHAR InitiatorInstance[256] at 450, ULONG at 964,
// ISCSI_TARGET_PORTALW {WCHAR[256], WCHAR[256], USHORT} at 968, ULONGLONG
// SecurityFlags at 2000, the Mappings pointer at 2008, ISCSI_LOGIN_OPTIONS
// {11 ULONG, PUCHAR Username, PUCHAR Password} at 2016, 2080 bytes in
// all); they are written here independently of the parser's.
const (
	loginSize         = 2080
	offTargetName     = 0
	offInformational  = 448
	offInitiator      = 450
	offInitiatorPort  = 964
	offPortalName     = 968
	offPortalAddress  = 968 + 512
	offPortalSocket   = 968 + 1024
	offLoginOptions   = 2016
	offUsernameLength = offLoginOptions + 9*4
)

func putW(b []byte, off int, s string) {
	for i, c := range utf16.Encode([]rune(s)) {
		binary.LittleEndian.PutUint16(b[off+2*i:], c)
	}
}

// loginRecord is one record; what its LoginOptions point at (the CHAP user
// name and secret, in the variable part after the records) is never in
// what the executor hands over, but the lengths are.
func loginRecord(iqn, instance string, port uint32, portalAddr string, socket uint16) []byte {
	b := make([]byte, loginSize)
	putW(b, offTargetName, iqn)
	putW(b, offInitiator, instance)
	binary.LittleEndian.PutUint32(b[offInitiatorPort:], port)
	putW(b, offPortalAddress, portalAddr)
	binary.LittleEndian.PutUint16(b[offPortalSocket:], socket)
	binary.LittleEndian.PutUint32(b[offUsernameLength:], 8)
	return b
}

func TestPersistentLoginLayout(t *testing.T) {
	if winhost.PersistentLoginInfoSize != loginSize {
		t.Fatalf("PERSISTENT_ISCSI_LOGIN_INFOW is %d bytes, want %d (amd64)", winhost.PersistentLoginInfoSize, loginSize)
	}
}

const swInitiator = `ROOT\ISCSIPRT\0000_0`

func TestPersistentLogins(t *testing.T) {
	buf := append(loginRecord(iscIQN, swInitiator, host.AnyInitiatorPort, "array.example.com", 3260),
		loginRecord("iqn.2024-01.test.array:vol2", swInitiator, 1, "10.0.0.2", 3261)...)
	want := []host.PersistentLogin{
		{TargetNodeAddress: iscIQN, Portal: host.Portal{Address: "array.example.com", Port: 3260},
			InitiatorInstance: swInitiator, InitiatorPort: host.AnyInitiatorPort},
		{TargetNodeAddress: "iqn.2024-01.test.array:vol2", Portal: host.Portal{Address: "10.0.0.2", Port: 3261},
			InitiatorInstance: swInitiator, InitiatorPort: 1},
	}
	ctx := context.Background()
	e := scripted.New(t)
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Count: 2, Bytes: buf})
	got, err := winhost.NewISCSI(e).PersistentLogins(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("PersistentLogins = %+v, %v; want %+v", got, err, want)
	}

	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{})
	if got, err := winhost.NewISCSI(e).PersistentLogins(ctx); err != nil || len(got) != 0 {
		t.Fatalf("PersistentLogins of none = %+v, %v", got, err)
	}
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Count: 2, Bytes: buf[:loginSize]})
	if _, err := winhost.NewISCSI(e).PersistentLogins(ctx); err == nil {
		t.Fatalf("PersistentLogins of a short buffer succeeded")
	}
	// The initiator service not running: ISDSC_SERVICE_NOT_RUNNING.
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Err: w32("ReportIScsiPersistentLoginsW", 0xEFFF003E)})
	if _, err := winhost.NewISCSI(e).PersistentLogins(ctx); !errors.Is(err, host.ErrNotReady) {
		t.Fatalf("PersistentLogins with the service stopped = %v, want ErrNotReady", err)
	}
}

// TestRemovePersistentLogin: the login is passed back to
// RemoveIScsiPersistentTargetW exactly as listed (initiator instance and
// port, portal with its symbolic name); one not listed is ErrNotFound
// without a call.
func TestRemovePersistentLogin(t *testing.T) {
	rec := loginRecord(iscIQN, swInitiator, host.AnyInitiatorPort, "10.0.0.1", 3260)
	putW(rec, offPortalName, "array-a")
	ctx := context.Background()
	login := host.PersistentLogin{TargetNodeAddress: strings.ToUpper(iscIQN), Portal: host.Portal{Address: "10.0.0.1"}}

	e := scripted.New(t)
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Count: 1, Bytes: rec}).
		ExpectWin32("RemoveIScsiPersistentTarget", []any{swInitiator, host.AnyInitiatorPort, iscIQN,
			winhost.PortalW{SymbolicName: "array-a", Address: "10.0.0.1", Socket: 3260}}, scripted.Reply{})
	if err := winhost.NewISCSI(e).RemovePersistentLogin(ctx, login); err != nil {
		t.Fatalf("RemovePersistentLogin: %v", err)
	}
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Count: 1, Bytes: rec})
	other := login
	other.Portal.Address = "10.0.0.2"
	if err := winhost.NewISCSI(e).RemovePersistentLogin(ctx, other); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("RemovePersistentLogin of a login not listed = %v, want ErrNotFound", err)
	}
	// Windows could not remove it: ISDSC_COULD_NOT_REMOVE_PERSISTENT_LOGIN_DATA, no host meaning.
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Count: 1, Bytes: rec}).
		ExpectWin32("RemoveIScsiPersistentTarget", []any{swInitiator, host.AnyInitiatorPort, iscIQN,
			winhost.PortalW{SymbolicName: "array-a", Address: "10.0.0.1", Socket: 3260}},
			scripted.Reply{Err: w32("RemoveIScsiPersistentTargetW", 0xEFFF0042)})
	err := winhost.NewISCSI(e).RemovePersistentLogin(ctx, login)
	if err == nil || !strings.Contains(err.Error(), "failed to remove persistent login information") {
		t.Fatalf("RemovePersistentLogin refused = %v, want the ISDSC status named", err)
	}
}
