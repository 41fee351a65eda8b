package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestSecretNeverPrints(t *testing.T) {
	s := NewSecret("hunter2-very-secret")
	c := Credential{User: "alice", Password: s}
	ch := CHAP{User: "u", Secret: s}
	outs := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s),
		fmt.Sprintf("%v %+v %#v", c, c, c), fmt.Sprintf("%+v", ch),
		fmt.Sprintf("%v", []Secret{s}), fmt.Sprintf("%v", map[string]Secret{"k": s}),
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(b))
	for _, o := range outs {
		if strings.Contains(o, "hunter2") {
			t.Fatalf("secret leaked: %s", o)
		}
	}
	if s.Reveal() != "hunter2-very-secret" || s.Len() != 19 || s.IsZero() || !s.Equal(NewSecret("hunter2-very-secret")) {
		t.Fatal("Reveal/Len/IsZero/Equal broken")
	}
}

func TestParseLocation(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	tests := []struct {
		in     string
		want   Location
		wantOK bool
	}{
		{"PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0", Location{Adapter: u(0), Bus: u(0), Target: u(1), LUN: u(0)}, true},
		{"Integrated : Adapter 2 : Bus 1 : Target 3 : LUN 12", Location{Adapter: u(2), Bus: u(1), Target: u(3), LUN: u(12)}, true},
		{"", Location{}, false},
		{"Adapter x : LUN y", Location{}, false},
		{"LUN 7", Location{LUN: u(7)}, true},
		// Azure's longer form (kubernetes-sigs/azuredisk-csi-driver#2661): the
		// first Bus is the PCI bus; the path is Port.
		{"Integrated : Bus 0 : Device 63667 : Function 30747 : Adapter 1 : Port 0 : Target 0 : LUN 1", Location{Adapter: u(1), Bus: u(0), Target: u(0), LUN: u(1)}, true},
		{"Integrated : Bus 5 : Device 63667 : Function 30747 : Adapter 1 : Port 2 : Target 0 : LUN 1", Location{Adapter: u(1), Bus: u(2), Target: u(0), LUN: u(1)}, true},
		{"Integrated : Bus 5 : Device 1 : Adapter 1 : Target 0 : LUN 1", Location{Adapter: u(1), Target: u(0), LUN: u(1)}, true},
		// An NVMe namespace (PR #3632 of the same driver): no LUN, no path.
		{"Integrated : Bus 12606208 : Device 0 : Function 0 : Adapter 0", Location{Adapter: u(0)}, false},
		// IDE on a Gen1 VM (ansible-collections/community.windows#622): no LUN.
		{"PCI Slot 1 : Adapter 0 : Channel 1 : Device 0", Location{Adapter: u(0)}, false},
	}
	for _, tt := range tests {
		got, ok := ParseLocation(tt.in)
		if ok != tt.wantOK || fmt.Sprint(deref(got)) != fmt.Sprint(deref(tt.want)) {
			t.Errorf("ParseLocation(%q) = %v %v, want %v %v", tt.in, deref(got), ok, deref(tt.want), tt.wantOK)
		}
	}
}

func deref(l Location) [4]int64 {
	v := func(p *uint32) int64 {
		if p == nil {
			return -1
		}
		return int64(*p)
	}
	return [4]int64{v(l.Adapter), v(l.Bus), v(l.Target), v(l.LUN)}
}

func TestPartitionIsReserved(t *testing.T) {
	for _, tt := range []struct {
		p    Partition
		want bool
	}{
		{Partition{GptType: GptTypeMSR}, true},
		{Partition{GptType: strings.ToUpper(GptTypeMSR)}, true},
		{Partition{GptType: GptTypeBasicData}, false},
		{Partition{MbrType: MbrTypeIFS}, false},
		{Partition{MbrType: MbrTypeExtended}, true},
	} {
		if got := tt.p.IsReserved(); got != tt.want {
			t.Errorf("%+v.IsReserved() = %v", tt.p, got)
		}
	}
}

func TestTrackerCountsDetachedCalls(t *testing.T) {
	ctx, outer := Track(context.Background())
	ctx, inner := Track(ctx)
	release := make(chan struct{})
	// The caller gives up once the call runs, not at a time: a deadline
	// that passed before Detached started would leave nothing to count.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := Detached(cctx, func(context.Context) error {
		cancel()
		<-release
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
	if outer.Outstanding() != 1 || inner.Outstanding() != 1 {
		t.Fatalf("outstanding = %d/%d, want 1/1 while the call hangs", outer.Outstanding(), inner.Outstanding())
	}
	var mu sync.Mutex
	fired := false
	idle := make(chan struct{})
	inner.WhenIdle(func() {
		mu.Lock()
		fired = true
		mu.Unlock()
		close(idle)
	})
	mu.Lock()
	if fired {
		t.Fatal("WhenIdle fired while a call was outstanding")
	}
	mu.Unlock()
	close(release)
	<-idle
	if outer.Outstanding() != 0 {
		t.Fatalf("outer outstanding = %d after the call ended", outer.Outstanding())
	}
	ran := false
	outer.WhenIdle(func() { ran = true })
	if !ran {
		t.Fatal("WhenIdle on an idle tracker must run at once")
	}
}

func TestDetachedReturnsResult(t *testing.T) {
	want := errors.New("boom")
	tctx, tr := Track(context.Background())
	for range 2000 {
		if err := Detached(tctx, func(context.Context) error { return want }); !errors.Is(err, want) {
			t.Fatalf("err = %v", err)
		}
		// A caller that got the result finds the call ended (the shared
		// resources of pkg/backend/shared decide on it).
		if n := tr.Outstanding(); n != 0 {
			t.Fatalf("%d calls outstanding after Detached returned their result", n)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	if err := Detached(ctx, func(context.Context) error { called = true; return nil }); !errors.Is(err, context.Canceled) || called {
		t.Fatalf("cancelled ctx: err=%v called=%v", err, called)
	}
}

func TestSecretDigest(t *testing.T) {
	a, b := NewSecret("chap-secret-1"), NewSecret("chap-secret-2")
	salt := []byte("salt")
	d1, d2 := a.Digest(salt), a.Digest(salt)
	if d1 != d2 || d1 == b.Digest(salt) || d1 == a.Digest([]byte("other")) {
		t.Fatal("digest does not tell secrets and salts apart")
	}
	if strings.Contains(a.Digest(salt), "chap-secret") || len(a.Digest(salt)) != 64 {
		t.Fatalf("digest = %q", a.Digest(salt))
	}
}

func TestDiskNVMeNeverSCSI(t *testing.T) {
	nvme := Disk{BusType: BusTypeNVMe, Location: "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 3"}
	if _, ok := nvme.SCSILocation(); ok || !nvme.IsNVMe() {
		t.Fatal("an NVMe disk's location was read as SCSI")
	}
	// stornvme's device path names the NVMe device whatever BusType says.
	byPath := Disk{BusType: BusTypeSCSI, Path: `\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`,
		Location: "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 3"}
	if _, ok := byPath.SCSILocation(); ok || !byPath.IsNVMe() {
		t.Fatal("a stornvme namespace's location was read as SCSI")
	}
	scsi := Disk{BusType: BusTypeSAS, Path: `\\?\scsi#disk&ven_msft&prod_virtual_disk#5&23db5f40&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}`,
		Location: "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 1"}
	if l, ok := scsi.SCSILocation(); !ok || scsi.IsNVMe() || *l.LUN != 1 {
		t.Fatal("a SCSI disk's location was not read")
	}
}

func TestPage83(t *testing.T) {
	naa := Designator{Type: DesignatorFCPHName, CodeSet: CodeSetBinary, Value: []byte{0x60, 0x02, 0x24, 0x80}}
	tests := []struct {
		name   string
		ids    []Designator
		want   string
		wantOK bool
	}{
		{"none", nil, "", false},
		{"binary in hex", []Designator{naa}, "60022480", true},
		{"ASCII as text", []Designator{{Type: DesignatorVendorID, CodeSet: CodeSetASCII, Value: []byte("Google  pd-1")}}, "Google  pd-1", true},
		{"port association skipped", []Designator{{Association: AssociationPort, CodeSet: CodeSetBinary, Value: []byte{1}}, naa}, "60022480", true},
		{"UTF-8 skipped, as csi-proxy does", []Designator{{Type: DesignatorSCSINameString, CodeSet: CodeSetUTF8, Value: []byte("nvme.1414")}}, "", false},
		{"first wins, whatever its type", []Designator{{Type: DesignatorVendorSpecific, CodeSet: CodeSetBinary, Value: []byte{0xab}}, naa}, "ab", true},
		{"empty first", []Designator{{CodeSet: CodeSetBinary}, naa}, "", false},
	}
	for _, tt := range tests {
		got, ok := Page83(tt.ids)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: Page83 = %q %v, want %q %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
	eui := Designator{Type: DesignatorEUI64, CodeSet: CodeSetBinary, Value: make([]byte, 8)}
	nguid := Designator{Type: DesignatorEUI64, CodeSet: CodeSetBinary, Value: make([]byte, 16)}
	if !eui.IsEUI64() || eui.IsNGUID() || !nguid.IsNGUID() || nguid.IsEUI64() {
		t.Fatal("EUI-64 and NGUID are told apart by length")
	}
	if port := (Designator{Type: DesignatorEUI64, CodeSet: CodeSetBinary, Association: AssociationPort, Value: make([]byte, 8)}); port.IsEUI64() {
		t.Fatal("a port's EUI-64 is not the disk's")
	}
}

// TestSecretMAC: the MAC tells secrets, keys and labels apart, is the same
// for the same inputs, never holds the secret, and is empty without a key.
func TestSecretMAC(t *testing.T) {
	a, b := NewSecret("alice-password"), NewSecret("other-password")
	key, key2 := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210fedcba9876543210")
	m := a.MAC(key, `\\srv\data`, "alice")
	for name, other := range map[string]string{
		"another secret":      b.MAC(key, `\\srv\data`, "alice"),
		"another key":         a.MAC(key2, `\\srv\data`, "alice"),
		"another share":       a.MAC(key, `\\srv\other`, "alice"),
		"another user":        a.MAC(key, `\\srv\data`, "bob"),
		"labels run together": a.MAC(key, `\\srv\dataalice`),
	} {
		if other == m {
			t.Errorf("%s gives the same MAC", name)
		}
	}
	if a.MAC(key, `\\srv\data`, "alice") != m || len(m) != 64 || strings.Contains(m, "alice-password") {
		t.Fatalf("MAC = %q", m)
	}
	if got := a.MAC(nil, "x"); got != "" {
		t.Fatalf("MAC without a key = %q, want empty", got)
	}
}
