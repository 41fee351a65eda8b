package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestWriteGuard(t *testing.T) {
	chosen := scsiDisk(3, 1, 1)
	chosen.Ref, chosen.SerialNumber, chosen.UniqueID, chosen.Size = "ref-3", "SER-3", "60022480F48D294F", 8<<30
	chosen.PartitionStyle, chosen.GUID = host.PartitionStyleGPT, "{6E0C3B5A-1F2D-4C3B-9A8E-7D6C5B4A3F21}"
	sel := contract.DiskSelector{Serial: "SER-3", Location: chosen.Location}
	tests := []struct {
		name   string
		now    func() (host.Disk, error)
		chosen bool
		err    error
		in     string
	}{
		{"still the disk", func() (host.Disk, error) {
			d := chosen
			d.IsOffline, d.PartitionStyle = false, host.PartitionStyleGPT
			return d, nil
		}, true, nil, ""},
		{"gone", func() (host.Disk, error) { return host.Disk{}, fmt.Errorf("disk 3: %w", host.ErrNotFound) }, true, host.ErrConflict, "went away"},
		{"unreadable", func() (host.Disk, error) { return host.Disk{}, fmt.Errorf("wmi: %w", host.ErrBusy) }, true, host.ErrBusy, "read again before the first write"},
		{"another device under the number", func() (host.Disk, error) {
			d := chosen
			d.Path = `\\?\scsi#disk&ven_msft&prod_virtual_disk#5&23db5f40&0&000002#{x}`
			return d, nil
		}, false, host.ErrConflict, "disk numbers changed"},
		{"another object under the number", func() (host.Disk, error) {
			d := chosen
			d.Ref = "ref-9"
			return d, nil
		}, false, host.ErrConflict, "disk numbers changed"},
		{"now the system disk", func() (host.Disk, error) {
			d := chosen
			d.IsSystem = true
			return d, nil
		}, false, host.ErrConflict, "boot or system"},
		// Found by review: the guard compared the number and path only.
		// The identity of the disk read again is compared with the one
		// chosen, whatever found it, and both are named.
		{"another serial", func() (host.Disk, error) {
			d := chosen
			d.SerialNumber = "SER-4"
			return d, nil
		}, true, host.ErrConflict, `disk 3 changed since it was chosen (serial number differ): chosen as disk 3 [serial "SER-3", ` +
			`UniqueId "60022480F48D294F", size 8589934592, GPT disk GUID {6E0C3B5A-1F2D-4C3B-9A8E-7D6C5B4A3F21}], read again as disk 3 [serial "SER-4",`},
		{"another serial, found otherwise (iSCSI)", func() (host.Disk, error) {
			d := chosen
			d.SerialNumber = "SER-4"
			return d, nil
		}, false, host.ErrConflict, "(serial number differ)"},
		{"another UniqueId", func() (host.Disk, error) {
			d := chosen
			d.UniqueID = "60022480AAAAAAAA"
			return d, nil
		}, false, host.ErrConflict, `(UniqueId differ): chosen as disk 3 [serial "SER-3", UniqueId "60022480F48D294F"`},
		{"another size", func() (host.Disk, error) {
			d := chosen
			d.Size = 16 << 30
			return d, nil
		}, false, host.ErrConflict, "(size differ)"},
		{"another GPT disk GUID", func() (host.Disk, error) {
			d := chosen
			d.GUID = "{00000000-1F2D-4C3B-9A8E-7D6C5B4A3F21}"
			return d, nil
		}, false, host.ErrConflict, "(GPT disk GUID differ)"},
		{"no GPT disk GUID any more", func() (host.Disk, error) {
			d := chosen
			d.PartitionStyle, d.GUID = host.PartitionStyleRAW, ""
			return d, nil
		}, false, host.ErrConflict, "(GPT disk GUID differ)"},
		{"the GUID in another case, without braces", func() (host.Disk, error) {
			d := chosen
			d.GUID = "6e0c3b5a-1f2d-4c3b-9a8e-7d6c5b4a3f21"
			return d, nil
		}, true, nil, ""},
		{"everything differs", func() (host.Disk, error) {
			d := chosen
			d.SerialNumber, d.UniqueID, d.Size, d.GUID = "X", "Y", 1, "{Z}"
			return d, nil
		}, false, host.ErrConflict, "(serial number, UniqueId, size, GPT disk GUID differ)"},
		{"a GUID where the chosen reading showed none", func() (host.Disk, error) {
			d := chosen
			d.GUID = "{11111111-1F2D-4C3B-9A8E-7D6C5B4A3F21}"
			return d, nil
		}, false, nil, ""},
		{"another location, found by it", func() (host.Disk, error) {
			d := chosen
			d.Location = "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 2"
			return d, nil
		}, true, host.ErrConflict, `no longer carries the identity it was chosen by, disk selector serial="SER-3",location=`},
		{"another location, found otherwise (iSCSI)", func() (host.Disk, error) {
			d := chosen
			d.Location = "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 2"
			return d, nil
		}, false, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(chosen)
			gets := 0
			f.get = func(n uint32) (host.Disk, error) {
				gets++
				if n != 3 {
					t.Errorf("Get(%d)", n)
				}
				return tt.now()
			}
			was := chosen
			if strings.HasPrefix(tt.name, "a GUID where") {
				was.GUID = "" // listed offline or RAW
			}
			g := newWriteGuard(backendOn(f, Options{}), was, nil, nil)
			if tt.chosen {
				g.chosen = &choice{disk: chosen, sel: sel}
			}
			d, err := g.confirm(context.Background())
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("confirm: %v", err)
			case tt.err != nil && (!errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.in)):
				t.Fatalf("confirm = %v, want %v saying %q", err, tt.err, tt.in)
			case tt.err != nil:
				return
			}
			want, _ := tt.now()
			if d != want {
				t.Fatalf("confirm = %+v, want the disk as it is now", d)
			}
			if again, err := g.confirm(context.Background()); err != nil || again != want || gets != 1 {
				t.Fatalf("a second confirm: %+v, %v after %d reads; want the same disk, read once", again, err, gets)
			}
		})
	}
}

// The re-read disk is judged as at the lookup: when the IOCTL stops
// answering, its device path alone does not tell the namespace (it reads
// two ways), and a contradiction is refused.
func TestWriteGuardUncertain(t *testing.T) {
	d := nvmeDisk(2, "03")
	f := newFake(d)
	f.addrs[2] = host.SCSIAddress{LUN: 3}
	b := backendOn(f, Options{})
	c, err := b.find(context.Background(), contract.DiskSelector{NVMeNSID: u32(4)})
	if err != nil {
		t.Fatal(err)
	}
	delete(f.addrs, 2)
	g := newWriteGuard(b, d, &c, nil)
	if _, err := g.confirm(context.Background()); !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "does not tell namespace 4") {
		t.Fatalf("confirm = %v, want the path's doubt", err)
	}
	g = newWriteGuard(b, d, &c, nil)
	f.addrs[2] = host.SCSIAddress{LUN: 9}
	if _, err := g.confirm(context.Background()); !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "nvmeNSID=4 (IOCTL_SCSI_GET_ADDRESS reports LUN 9") {
		t.Fatalf("confirm = %v, want the contradiction", err)
	}
}

// The caller's own check (PrepareRequest.Confirm: the iSCSI session) runs
// on the disk read again, after the identity; its refusal is the guard's,
// and the disk is read again the next time.
func TestWriteGuardCallerCheck(t *testing.T) {
	d := scsiDisk(3, 1, 1)
	d.SerialNumber = "S"
	f := newFake(d)
	refused := fmt.Errorf("session gone: %w", host.ErrConflict)
	var seen []host.Disk
	still := func(_ context.Context, now host.Disk) error {
		seen = append(seen, now)
		if len(seen) == 1 {
			return refused
		}
		return nil
	}
	g := newWriteGuard(backendOn(f, Options{}), d, nil, still)
	if _, err := g.confirm(context.Background()); !errors.Is(err, refused) {
		t.Fatalf("confirm = %v, want the caller's refusal", err)
	}
	if _, err := g.confirm(context.Background()); err != nil || len(seen) != 2 || seen[1] != d {
		t.Fatalf("confirm again = %v after %d checks of %+v", err, len(seen), seen)
	}
	f.disks[0].SerialNumber = "OTHER"
	g = newWriteGuard(backendOn(f, Options{}), d, nil, still)
	if _, err := g.confirm(context.Background()); !errors.Is(err, host.ErrConflict) || len(seen) != 2 {
		t.Fatalf("confirm = %v after %d checks: the identity is compared first", err, len(seen))
	}
}
