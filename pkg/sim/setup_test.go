//go:build linux

// Linux only: the simulated host runs only on Linux (mount points are
// Linux symlinks, paths are POSIX paths; see doc.go).

package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// fullSetup declares every key a setup file knows.
const fullSetup = `
disks:
  - serial: data-1
    size: 10Gi
    page83: 60022480-0000-0000-0000-00000000AB01
    lun: 3
  - serial: data-2
    size: 2147483648
shares:
  - path: //files/data
    encrypted: true
    users:
      - name: alice
        password: alice-password
  - path: '\\nas\plain'
    encrypted: false
    capacity: 1Ti
    users:
      - {name: bob, password: bob-password}
targets:
  - iqn: iqn.2026-01.io.example:Storage
    portals: ["127.0.0.1:3260", "127.0.0.2"]
    luns:
      - lun: 0
        size: 1Gi
      - lun: 1
        size: 2Gi
        serial: LUN1SERIAL
        page83: 0123456789abcdef0123456789abcdef
    chap:
      username: node1
      secret: node1-chapsecret
    mutualSecret: mutual-secret-1
    discoveryChap: {username: disc, secret: discovery-secret}
accounts:
  - name: CONTOSO\app-writers
    sid: s-1-5-21-1-2-3-1107
`

func mustParse(t *testing.T, yaml string) *Setup {
	t.Helper()
	s, err := ParseSetup([]byte(yaml))
	if err != nil {
		t.Fatalf("ParseSetup: %v", err)
	}
	return s
}

func TestParseSetup(t *testing.T) {
	s := mustParse(t, fullSetup)
	if len(s.Disks) != 2 || len(s.Shares) != 2 || len(s.Targets) != 1 {
		t.Fatalf("parsed %d disks, %d shares, %d targets", len(s.Disks), len(s.Shares), len(s.Targets))
	}
	d := s.Disks[0]
	if d.Serial != "data-1" || d.Size != 10<<30 || d.Page83 != "6002248000000000000000000000ab01" || d.LUN == nil || *d.LUN != 3 {
		t.Errorf("disk 0 = %+v", d)
	}
	if d := s.Disks[1]; d.Size != 2<<30 || d.LUN != nil || d.Page83 != "" {
		t.Errorf("disk 1 = %+v", d)
	}
	if sh := s.Shares[0]; sh.Server != "files" || sh.Share != "data" || sh.NoEncryption || sh.Users["alice"] != "alice-password" || sh.Capacity != 0 {
		t.Errorf("share 0 = %+v", sh)
	}
	if sh := s.Shares[1]; sh.Server != "nas" || sh.Share != "plain" || !sh.NoEncryption || sh.Capacity != 1<<40 {
		t.Errorf("share 1 = %+v", sh)
	}
	tg := s.Targets[0]
	if tg.IQN != "iqn.2026-01.io.example:storage" || len(tg.Portals) != 2 || portalKey(tg.Portals[1]) != "127.0.0.2:3260" {
		t.Errorf("target = %+v", tg)
	}
	if len(tg.LUNs) != 2 || tg.LUNs[1].Serial != "LUN1SERIAL" || tg.LUNs[1].Size != 2<<30 {
		t.Errorf("LUNs = %+v", tg.LUNs)
	}
	if tg.CHAP == nil || tg.CHAP.User != "node1" || tg.CHAP.Secret.Reveal() != "node1-chapsecret" ||
		tg.MutualSecret != "mutual-secret-1" || tg.DiscoveryCHAP == nil || tg.DiscoveryCHAP.User != "disc" {
		t.Errorf("target credentials = %+v", tg)
	}
	if len(s.Accounts) != 1 || s.Accounts[0] != (AccountState{Name: `CONTOSO\app-writers`, SID: "S-1-5-21-1-2-3-1107"}) {
		t.Errorf("accounts %+v", s.Accounts)
	}
	if s.Windows.OfflineReadOnly != "" {
		t.Errorf("windows = %+v, want the defaults", s.Windows)
	}
	if s := mustParse(t, "windows:\n  offlineReadOnly: refuse\n  volumeRootACL: client\n  secondPersistentLogin: add\n"); s.Windows.OfflineReadOnly != OfflineReadOnlyRefuse ||
		s.Windows.VolumeRootACL != RootACLClient || s.Windows.SecondPersistentLogin != SecondPersistentLoginAdd {
		t.Errorf("windows = %+v", s.Windows)
	}
	for _, empty := range []string{"", "# nothing yet\n", "disks: []\nshares:\n"} {
		if s := mustParse(t, empty); len(s.Disks)+len(s.Shares)+len(s.Targets) != 0 {
			t.Errorf("%q declares %+v", empty, s)
		}
	}
}

func TestParseSetupErrors(t *testing.T) {
	const share = "shares:\n  - path: //f/d\n    users: [{name: a, password: secret-pw-xyz}]\n"
	const target = "targets:\n  - iqn: iqn.2026-01.io.example:t\n    portals: [10.0.0.1]\n"
	tests := []struct {
		name  string
		yaml  string
		line  int    // 0: not checked
		entry string // the entry the error names
	}{
		{"unknown top-level key", "disk:\n  - serial: a\n", 1, ""},
		{"unknown disk key", "disks:\n  - serial: a\n    sise: 1Gi\n", 3, "disks[0]"},
		{"unknown user key", "shares:\n  - path: //f/d\n    users:\n      - name: a\n        passwd: x\n", 5, "shares[0].users[0]"},
		{"serial missing", "disks:\n  - size: 1Gi\n", 2, "disks[0]"},
		{"size not a size", "disks:\n  - serial: a\n    size: ten\n", 3, "disks[0].size"},
		{"size not whole sectors", "disks:\n  - serial: a\n    size: 1000\n", 3, "disks[0].size"},
		{"page83 not hex", "disks:\n  - serial: a\n    page83: zz00112233445566\n", 3, "disks[0].page83"},
		{"lun out of range", "disks:\n  - serial: a\n    lun: 70000\n", 3, "disks[0].lun"},
		{"key twice", "disks:\n  - serial: a\n    serial: b\n", 3, "disks[0]"},
		{"disks not a list", "disks: {serial: a}\n", 1, "disks"},
		{"share path names a directory", "shares:\n  - path: //f/d/sub\n    users: [{name: a, password: p}]\n", 2, "shares[0].path"},
		{"share path not UNC", "shares:\n  - path: C:/data\n    users: [{name: a, password: p}]\n", 2, "shares[0].path"},
		{"share without users", "shares:\n  - path: //f/d\n    users: []\n", 2, "shares[0]"},
		{"encrypted not a bool", "shares:\n  - path: //f/d\n    encrypted: yes\n    users: [{name: a, password: p}]\n", 3, "shares[0].encrypted"},
		{"user twice", "shares:\n  - path: //f/d\n    users: [{name: a, password: p}, {name: A, password: q}]\n", 3, "shares[0].users[1]"},
		{"empty password", "shares:\n  - path: //f/d\n    users: [{name: a, password: ''}]\n", 3, "shares[0].users[0].password"},
		{"bad iqn", "targets:\n  - iqn: target-1\n    portals: [10.0.0.1]\n", 2, "targets[0].iqn"},
		{"no portals", "targets:\n  - iqn: iqn.2026-01.io.example:t\n    portals: []\n", 3, "targets[0].portals"},
		{"bad portal", "targets:\n  - iqn: iqn.2026-01.io.example:t\n    portals: ['10.0.0.1:0']\n", 3, "targets[0].portals[0]"},
		{"LUN twice", target + "    luns: [{lun: 1}, {lun: 1}]\n", 4, "targets[0].luns[1]"},
		{"short CHAP secret", target + "    chap: {username: u, secret: short}\n", 4, "targets[0].chap.secret"},
		{"mutual without chap", target + "    mutualSecret: mutual-secret-1\n", 2, "targets[0]"},
		{"mutual equals chap", target + "    chap: {username: u, secret: same-secret-1}\n    mutualSecret: same-secret-1\n", 2, "targets[0]"},
		{"disk declared twice", "disks:\n  - serial: a\n  - serial: a\n", 0, "disks[1] (serial a)"},
		{"LUN of two disks", "disks:\n  - {serial: a, lun: 2}\n  - {serial: b, lun: 2}\n", 0, "disks[1] (serial b)"},
		// A device path names one device instance (the serials of these
		// two may repeat; their paths may not, in any case).
		{"device path of two disks", "disks:\n  - {number: 1, path: '\\\\?\\scsi#disk&ven_msft#5&1&0&000001#{x}'}\n" +
			"  - {number: 2, path: '\\\\?\\SCSI#Disk&Ven_Msft#5&1&0&000001#{x}'}\n", 0, "disks[1] (disk 2)"},
		{"share declared twice", share + "  - path: '\\\\F\\D'\n    users: [{name: b, password: p}]\n", 0, `shares[1] (\\F\D)`},
		{"target declared twice", target + "  - iqn: IQN.2026-01.io.example:T\n    portals: [10.0.0.2]\n", 0, "targets[1] (iqn.2026-01.io.example:t)"},
		{"account without sid", "accounts:\n  - name: a\n", 2, "accounts[0]"},
		{"account SID malformed", "accounts:\n  - name: a\n    sid: S-1-5-x\n", 3, "accounts[0].sid"},
		{"account SID alias", "accounts:\n  - name: a\n    sid: BA\n", 3, "accounts[0].sid"},
		{"account name with a colon", "accounts:\n  - name: 'a:b'\n    sid: S-1-5-21-1\n", 2, "accounts[0].name"},
		{"account declared twice", "accounts:\n  - {name: a, sid: S-1-5-21-1}\n  - {name: A, sid: S-1-5-21-2}\n", 0, "accounts[1] (A)"},
		{"unknown volume root ACL", "windows:\n  volumeRootACL: desktop\n", 2, "windows.volumeRootACL"},
		{"not YAML", "disks: [\n", 0, ""},
		{"two documents", "disks: []\n---\nshares: []\n", 3, ""},
		{"a broken second document", "disks: []\n---\nshares: [\n", 0, ""},
		{"unknown Windows answer", "windows:\n  offlineReadOnly: maybe\n", 2, "windows.offlineReadOnly"},
		{"unknown second persistent login answer", "windows:\n  secondPersistentLogin: merge\n", 2, "windows.secondPersistentLogin"},
		{"unknown windows key", "windows:\n  offlineReadonly: accept\n", 2, "windows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSetup([]byte(tt.yaml))
			var se *SetupError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSetup = %v, want a *SetupError", err)
			}
			if se.Entry != tt.entry || (tt.line != 0 && se.Line != tt.line) {
				t.Errorf("error at line %d, entry %q; want line %d, entry %q: %v", se.Line, se.Entry, tt.line, tt.entry, err)
			}
			for _, secret := range []string{"secret-pw-xyz", "same-secret-1", "mutual-secret-1"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a secret: %v", err)
				}
			}
		})
	}
}

// applied opens a sim on dir with setup applied.
func applied(t *testing.T, dir string, setup *Setup) (*Sim, error) {
	t.Helper()
	quiet := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(io.Discard)))
	s, err := New(Config{Dir: dir, Setup: setup, Logger: quiet})
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// TestSetupWindowsAnswers: the setup's answers apply where Config leaves
// them unset, Config's win, and an unknown answer stops New.
func TestSetupWindowsAnswers(t *testing.T) {
	ctx := context.Background()
	refuse := &Setup{Windows: WindowsAnswers{OfflineReadOnly: OfflineReadOnlyRefuse}}
	for _, tt := range []struct {
		name   string
		config WindowsAnswers
		setup  *Setup
		want   error // SetReadOnly on an offline disk
	}{
		{"default", WindowsAnswers{}, nil, nil},
		{"from the setup", WindowsAnswers{}, refuse, host.ErrNotReady},
		{"Config wins", WindowsAnswers{OfflineReadOnly: OfflineReadOnlyAccept}, refuse, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Dir: t.TempDir(), Setup: tt.setup, Windows: tt.config})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			n, err := s.AttachDisk(DiskSpec{Serial: "d", Adapter: 1, Offline: true})
			if err != nil {
				t.Fatal(err)
			}
			d, err := s.Host().Disks.Get(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, "SetReadOnly while offline", s.Host().Disks.SetReadOnly(ctx, d, true), tt.want)
		})
	}
	if _, err := New(Config{Dir: t.TempDir(), Windows: WindowsAnswers{OfflineReadOnly: "maybe"}}); err == nil {
		t.Fatal("New accepted an unknown answer")
	}
	if _, err := New(Config{Dir: t.TempDir(), Windows: WindowsAnswers{SecondPersistentLogin: "merge"}}); err == nil {
		t.Fatal("New accepted an unknown second persistent login answer")
	}
}

func TestSetupApplied(t *testing.T) {
	dir := t.TempDir()
	s, err := applied(t, dir, mustParse(t, fullSetup))
	if err != nil {
		t.Fatal(err)
	}
	st := s.Snapshot()
	var d1, d2 *DiskState
	for i := range st.Disks {
		switch st.Disks[i].Serial {
		case "data-1":
			d1 = &st.Disks[i]
		case "data-2":
			d2 = &st.Disks[i]
		}
	}
	if d1 == nil || d2 == nil {
		t.Fatalf("declared disks missing: %+v", st.Disks)
	}
	if d1.Size != 10<<30 || d1.Location != autoLocation(3) || d1.Page83 != "6002248000000000000000000000ab01" ||
		!d1.Offline || d1.PartitionStyle != host.PartitionStyleRAW || d1.BusType != host.BusTypeSCSI {
		t.Errorf("data-1 = %+v", d1)
	}
	if d2.Location != autoLocation(0) || d2.Page83 != page83For("data-2") {
		t.Errorf("data-2 = %+v", d2)
	}

	ctx := context.Background()
	h := s.Host()
	// The share takes its user's password, and refuses privacy when it does
	// not encrypt.
	alice := host.Credential{User: "alice", Password: host.NewSecret("alice-password")}
	wantErr(t, "map with the declared password", h.SMB.Map(ctx, `\\files\data`, alice, true), nil)
	wrong := host.Credential{User: "bob", Password: host.NewSecret("wrong")}
	wantErr(t, "map with a wrong password", h.SMB.Map(ctx, `\\nas\plain`, wrong, false), host.ErrLogonFailure)
	bob := host.Credential{User: "bob", Password: host.NewSecret("bob-password")}
	wantErr(t, "privacy on a share without encryption", h.SMB.Map(ctx, `\\nas\plain`, bob, true), host.ErrAccessDenied)
	if _, err := os.Stat(filepath.Join(s.Dir(), "smb", "files", "data")); err != nil {
		t.Errorf("share contents directory: %v", err)
	}

	// The target wants its CHAP and shows its LUNs once logged in.
	p := host.Portal{Address: "127.0.0.1", Port: 3260}
	wantErr(t, "add portal", h.ISCSI.AddPortal(ctx, p, "", &host.CHAP{User: "disc", Secret: host.NewSecret("discovery-secret")}), nil)
	const iqn = "iqn.2026-01.io.example:storage"
	_, err = h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqn, Portal: p, Auth: host.AuthNone})
	wantErr(t, "login without CHAP credentials", err, host.ErrLogonFailure)
	c := chap("node1", "node1-chapsecret")
	if _, err := h.ISCSI.Connect(ctx, host.ConnectRequest{TargetIQN: iqn, Portal: p, Auth: host.AuthOneWay, CHAP: c}); err != nil {
		t.Fatalf("login with the declared CHAP: %v", err)
	}
	luns := 0
	for _, d := range s.Snapshot().Disks {
		if d.Target == iqn {
			luns++
		}
	}
	if luns != 2 {
		t.Errorf("%d LUN disks after login, want 2", luns)
	}

	// A volume's disk is attached at a LUN no declared disk has.
	if _, _, err := s.AttachVolumeDisk("vol-auto", 0); err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Snapshot().Disks {
		if d.Serial == "vol-auto" && (d.Location == autoLocation(0) || d.Location == autoLocation(3)) {
			t.Errorf("volume disk at a declared disk's location %q", d.Location)
		}
	}

	// Nothing secret is written.
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"alice-password", "bob-password", "node1-chapsecret", "mutual-secret-1", "discovery-secret"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("state.json holds %q", secret)
		}
	}
}

// TestSetupIdempotentAndAdditive: applying the same setup again changes
// nothing; the state a host gained since (contents, sessions, grown
// disks, other entries) is kept; entries a setup adds later join it.
func TestSetupIdempotentAndAdditive(t *testing.T) {
	dir := t.TempDir()
	setup := mustParse(t, fullSetup)
	s, err := applied(t, dir, setup)
	if err != nil {
		t.Fatal(err)
	}
	// The host lives on: a disk is grown, another attached by hand.
	var n uint32
	for _, d := range s.Snapshot().Disks {
		if d.Serial == "data-2" {
			n = d.Number
		}
	}
	wantErr(t, "grow data-2", s.ResizeDisk(n, 4<<30), nil)
	if _, err := s.AttachDisk(DiskSpec{Serial: "by-hand", Adapter: 1, LUN: 9}); err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot()
	wantErr(t, "close", s.Close(), nil)

	s, err = applied(t, dir, setup)
	if err != nil {
		t.Fatalf("same setup again: %v", err)
	}
	after := s.Snapshot()
	if !stateEqual(t, before, after) {
		t.Errorf("applying the same setup again changed the state")
	}
	wantErr(t, "close", s.Close(), nil)

	// A later setup adds a user, a portal, a LUN and a disk; it need not
	// repeat what the host has.
	more := mustParse(t, `
disks:
  - serial: data-3
shares:
  - path: //files/data
    users:
      - {name: alice, password: alice-password}
      - {name: carol, password: carol-password}
targets:
  - iqn: iqn.2026-01.io.example:storage
    portals: ["127.0.0.3:3260"]
    luns: [{lun: 0}, {lun: 5, size: 3Gi}]
    chap: {username: node1, secret: node1-chapsecret}
    mutualSecret: mutual-secret-1
    discoveryChap: {username: disc, secret: discovery-secret}
`)
	s, err = applied(t, dir, more)
	if err != nil {
		t.Fatalf("additive setup: %v", err)
	}
	st := s.Snapshot()
	if len(st.Disks) != len(before.Disks)+1 {
		t.Errorf("%d disks, want %d", len(st.Disks), len(before.Disks)+1)
	}
	if sh := st.share("files", "data"); sh == nil || len(sh.Users) != 2 {
		t.Errorf("share after adding carol: %+v", sh)
	}
	tg := st.target("iqn.2026-01.io.example:storage")
	if len(tg.Portals) != 3 || len(tg.LUNs) != 3 {
		t.Errorf("target after additions: %+v", tg)
	}
	carol := host.Credential{User: "carol", Password: host.NewSecret("carol-password")}
	wantErr(t, "map as the added user", s.Host().SMB.Map(context.Background(), `\\files\data`, carol, true), nil)
}

func stateEqual(t *testing.T, a, b State) bool {
	t.Helper()
	var ba, bb bytes.Buffer
	da, err := encodeState(&ba, &a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := encodeState(&bb, &b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(da, db)
}

// TestSetupConflicts: an entry that disagrees with the state fails New
// with ErrSetupConflict naming the entry, and leaves the state as it was.
func TestSetupConflicts(t *testing.T) {
	base := `
disks:
  - {serial: data-1, size: 2Gi, lun: 3}
shares:
  - path: //files/data
    users: [{name: alice, password: alice-password}]
targets:
  - iqn: iqn.2026-01.io.example:storage
    portals: [127.0.0.1]
    luns: [{lun: 0, size: 2Gi}]
    chap: {username: node1, secret: node1-chapsecret}
`
	tests := []struct {
		name  string
		yaml  string
		entry string
	}{
		{"disk larger than the one attached", "disks: [{serial: data-1, size: 4Gi}]", "disks[0] (serial data-1)"},
		{"disk at another LUN", "disks: [{serial: data-1, size: 2Gi, lun: 4}]", "disks[0] (serial data-1)"},
		{"disk with another page83", "disks: [{serial: data-1, size: 2Gi, page83: 00112233445566778899aabbccddeeff}]", "disks[0] (serial data-1)"},
		{"new disk at a taken LUN", "disks: [{serial: data-9, lun: 3}]", "disks[0] (serial data-9)"},
		{"the boot disk's serial", "disks: [{serial: SIMBOOT0000000000000}]", "disks[0] (serial SIMBOOT0000000000000)"},
		{"share turns unencrypted", "shares: [{path: //files/data, encrypted: false, users: [{name: alice, password: alice-password}]}]", `shares[0] (\\files\data)`},
		{"user with another password", "shares: [{path: //FILES/data, users: [{name: Alice, password: other-password}]}]", `shares[0] (\\FILES\data)`},
		{"share with another capacity", "shares: [{path: //files/data, capacity: 1Gi, users: [{name: alice, password: alice-password}]}]", `shares[0] (\\files\data)`},
		{"target without its CHAP", "targets: [{iqn: iqn.2026-01.io.example:storage, portals: [127.0.0.1]}]", "targets[0] (iqn.2026-01.io.example:storage)"},
		{"target with another CHAP secret", "targets: [{iqn: iqn.2026-01.io.example:storage, portals: [127.0.0.1], chap: {username: node1, secret: other-secret-12}}]", "targets[0] (iqn.2026-01.io.example:storage)"},
		{"target with another CHAP user", "targets: [{iqn: iqn.2026-01.io.example:storage, portals: [127.0.0.1], chap: {username: node2, secret: node1-chapsecret}}]", "targets[0] (iqn.2026-01.io.example:storage)"},
		{"target gains mutual CHAP", "targets: [{iqn: iqn.2026-01.io.example:storage, portals: [127.0.0.1], chap: {username: node1, secret: node1-chapsecret}, mutualSecret: mutual-secret-1}]", "targets[0] (iqn.2026-01.io.example:storage)"},
		{"LUN larger than the target's", "targets: [{iqn: iqn.2026-01.io.example:storage, portals: [127.0.0.1], luns: [{lun: 0, size: 3Gi}], chap: {username: node1, secret: node1-chapsecret}}]", "targets[0] (iqn.2026-01.io.example:storage)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := applied(t, dir, mustParse(t, base))
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, "close", s.Close(), nil)
			before, err := os.ReadFile(filepath.Join(dir, stateFile))
			if err != nil {
				t.Fatal(err)
			}
			// A valid entry before the conflicting one must not be added
			// either.
			setup := mustParse(t, tt.yaml)
			setup.Disks = append([]SetupDisk{{Serial: "innocent"}}, setup.Disks...)
			_, err = applied(t, dir, setup)
			if !errors.Is(err, ErrSetupConflict) {
				t.Fatalf("New = %v, want ErrSetupConflict", err)
			}
			// The entry is named by its position in the file, but the
			// innocent disk shifted the disks' positions.
			want := tt.entry
			if strings.HasPrefix(want, "disks[0]") {
				want = "disks[1]" + strings.TrimPrefix(want, "disks[0]")
			}
			if !strings.HasPrefix(err.Error(), want+": ") {
				t.Errorf("error does not start with the entry %q: %v", want, err)
			}
			for _, secret := range []string{"other-password", "other-secret-12", "node1-chapsecret", "mutual-secret-1"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a secret: %v", err)
				}
			}
			after, err := os.ReadFile(filepath.Join(dir, stateFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("a refused setup changed state.json")
			}
			// The directory is not left locked.
			if _, err := applied(t, dir, nil); err != nil {
				t.Errorf("open after the refused setup: %v", err)
			}
		})
	}
}
