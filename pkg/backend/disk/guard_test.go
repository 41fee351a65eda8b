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
	chosen.Ref, chosen.SerialNumber = "ref-3", "SER-3"
	sel := contract.DiskSelector{Serial: "SER-3"}
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
		{"another serial", func() (host.Disk, error) {
			d := chosen
			d.SerialNumber = "SER-4"
			return d, nil
		}, true, host.ErrConflict, `no longer carries the identity it was chosen by, disk selector serial="SER-3"; refusing`},
		{"another serial, found otherwise (iSCSI)", func() (host.Disk, error) {
			d := chosen
			d.SerialNumber = "SER-4"
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
			g := &writeGuard{b: backendOn(f, Options{}), d: chosen}
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
	g := &writeGuard{b: b, d: d, chosen: &c}
	if _, err := g.confirm(context.Background()); !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "does not tell namespace 4") {
		t.Fatalf("confirm = %v, want the path's doubt", err)
	}
	g = &writeGuard{b: b, d: d, chosen: &c}
	f.addrs[2] = host.SCSIAddress{LUN: 9}
	if _, err := g.confirm(context.Background()); !errors.Is(err, host.ErrConflict) || !strings.Contains(err.Error(), "nvmeNSID=4 (IOCTL_SCSI_GET_ADDRESS reports LUN 9") {
		t.Fatalf("confirm = %v, want the contradiction", err)
	}
}
