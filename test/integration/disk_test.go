//go:build windows && integration

package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

// near reports whether got is within tol of want.
func near(got, want, tol int64) bool {
	d := got - want
	return -tol <= d && d <= tol
}

// assertMounted checks, with Win32 through the executor, that a volume is
// mounted at the staging path.
func assertMounted(t *testing.T, h *harness, v *volume) string {
	t.Helper()
	guid, err := h.exec.GetVolumeNameForVolumeMountPoint(context.Background(), v.staging+`\`)
	if err != nil || !strings.HasPrefix(guid, `\\?\Volume{`) {
		t.Fatalf("no volume mounted at %s: %q, %v", v.staging, guid, err)
	}
	return guid
}

// TestStagePublishCycle drives a fresh disk through the whole life of a
// volume and checks that data written through the publish link survives
// unstage (which takes the disk offline) and a restage.
func TestStagePublishCycle(t *testing.T) {
	h := newHarness(t)
	d := newVHD(t, gib)
	v := h.newVolume("cycle", d)
	data := []byte("written through the publish link\r\n")

	mustOK(t, "stage", h.stage(v))
	guid := assertMounted(t, h, v)
	mustOK(t, "stage again (idempotent)", h.stage(v))
	mustOK(t, "publish", h.publish(v))
	mustOK(t, "publish again (idempotent)", h.publish(v))
	if err := os.WriteFile(filepath.Join(v.target, "hello.txt"), data, 0o644); err != nil {
		t.Fatalf("write through the publish link: %v", err)
	}
	mustOK(t, "unpublish", h.unpublish(v))
	if _, err := os.Lstat(v.target); !os.IsNotExist(err) {
		t.Errorf("target path still there after unpublish: %v", err)
	}
	if _, err := os.Stat(filepath.Join(v.staging, "hello.txt")); err != nil {
		t.Errorf("the file is gone from the staged volume after unpublish: %v", err)
	}
	mustOK(t, "unstage", h.unstage(v))
	if offline, _ := diskState(t, d); !offline {
		t.Errorf("disk %d is online after unstage; --offline-disk-on-unstage is on", d.disk)
	}
	mustOK(t, "unstage again (idempotent)", h.unstage(v))

	mustOK(t, "restage", h.stage(v))
	if again := assertMounted(t, h, v); again != guid {
		t.Errorf("restage mounted volume %s, want the same volume %s", again, guid)
	}
	mustOK(t, "publish after restage", h.publish(v))
	got, err := os.ReadFile(filepath.Join(v.target, "hello.txt"))
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("read back %q, want %q", got, data)
	}
	mustOK(t, "unpublish", h.unpublish(v))
	mustOK(t, "unstage", h.unstage(v))
}

// TestStats checks NodeGetVolumeStats on the publish and staging paths
// against the disk's size.
func TestStats(t *testing.T) {
	h := newHarness(t)
	d := newVHD(t, gib)
	v := h.newVolume("stats", d)
	mustOK(t, "stage", h.stage(v))
	mustOK(t, "publish", h.publish(v))
	defer func() {
		mustOK(t, "unpublish", h.unpublish(v))
		mustOK(t, "unstage", h.unstage(v))
	}()

	for _, path := range []string{v.target, v.staging} {
		resp, err := h.stats(v, path)
		mustOK(t, "stats "+path, err)
		var bytesUsage *csi.VolumeUsage
		for _, u := range resp.GetUsage() {
			if u.GetUnit() == csi.VolumeUsage_BYTES {
				bytesUsage = u
			}
		}
		if bytesUsage == nil {
			t.Fatalf("no BYTES usage for %s: %v", path, resp)
		}
		// GPT, the MSR partition and NTFS metadata take a few tens of MiB
		// of a 1 GiB disk.
		if !near(bytesUsage.GetTotal(), gib, 64*mib) {
			t.Errorf("%s: total %d bytes, want about 1 GiB", path, bytesUsage.GetTotal())
		}
		if bytesUsage.GetAvailable() <= 0 || bytesUsage.GetAvailable() > bytesUsage.GetTotal() ||
			bytesUsage.GetUsed() < 0 || bytesUsage.GetUsed() > bytesUsage.GetTotal() {
			t.Errorf("%s: inconsistent usage %+v", path, bytesUsage)
		}
	}
}

// TestExpand grows the VHDX behind the plugin's back and checks that
// NodeExpandVolume grows the volume and reports its real size.
func TestExpand(t *testing.T) {
	h := newHarness(t)
	d := newVHD(t, gib)
	v := h.newVolume("expand", d)
	mustOK(t, "stage", h.stage(v))
	defer func() { mustOK(t, "unstage", h.unstage(v)) }()

	before, err := h.stats(v, v.staging)
	mustOK(t, "stats before", err)
	d.resize(t, 2*gib)

	capacity, err := h.expand(v, 2*gib)
	mustOK(t, "expand", err)
	oldTotal := before.GetUsage()[0].GetTotal()
	if capacity < oldTotal+gib-64*mib || capacity > 2*gib {
		t.Errorf("expand reported %d bytes; the volume was %d and the disk is now 2 GiB", capacity, oldTotal)
	}
	after, err := h.stats(v, v.staging)
	mustOK(t, "stats after", err)
	if total := after.GetUsage()[0].GetTotal(); !near(total, capacity, 16*mib) {
		t.Errorf("stats total %d bytes, but expand reported %d: the reported size must be the real one", total, capacity)
	}
	again, err := h.expand(v, 2*gib)
	mustOK(t, "expand again (no growth left)", err)
	if again != capacity {
		t.Errorf("second expand reported %d, want the same %d", again, capacity)
	}
}

// TestReadOnlyReattach marks the blank disk read-only before stage, as
// hypervisors do on re-attach (csi-proxy #437); stage must clear it.
func TestReadOnlyReattach(t *testing.T) {
	h := newHarness(t)
	d := newVHD(t, gib)
	mustPowershell(t, `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsReadOnly $true`, d.env())
	if _, ro := diskState(t, d); !ro {
		t.Fatalf("setup: disk %d is not read-only", d.disk)
	}
	v := h.newVolume("readonly", d)
	mustOK(t, "stage", h.stage(v))
	defer func() { mustOK(t, "unstage", h.unstage(v)) }()
	if _, ro := diskState(t, d); ro {
		t.Errorf("disk %d is still read-only after stage", d.disk)
	}
	if err := os.WriteFile(filepath.Join(v.staging, "probe.txt"), []byte("x"), 0o644); err != nil {
		t.Errorf("write to the staged volume: %v", err)
	}
}

// TestHealthDiskOffline takes the disk offline behind the plugin's back and
// expects NodeGetVolumeHealth to report the volume inaccessible.
func TestHealthDiskOffline(t *testing.T) {
	h := newHarness(t)
	d := newVHD(t, gib)
	v := h.newVolume("health", d)
	mustOK(t, "stage", h.stage(v))

	healthy, err := h.health(v)
	mustOK(t, "health while healthy", err)
	for _, s := range healthy.GetHealthStatuses() {
		if s.GetStatus() == csi.VolumeHealthErrorType_INACCESSIBLE {
			t.Errorf("healthy volume reported inaccessible: %v", s)
		}
	}

	mustPowershell(t, `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsOffline $true`, d.env())
	sick, err := h.health(v)
	mustOK(t, "health with the disk offline", err)
	found := false
	for _, s := range sick.GetHealthStatuses() {
		if s.GetStatus() == csi.VolumeHealthErrorType_INACCESSIBLE {
			found = true
			t.Logf("reported: %s: %s", s.GetReason(), s.GetMessage())
		}
	}
	if !found {
		t.Errorf("offline disk not reported INACCESSIBLE: %v", sick)
	}

	mustPowershell(t, `Set-Disk -Number ([uint32]$Env:CSI_IT_DISK) -IsOffline $false`, d.env())
	if err := h.unstage(v); err != nil {
		t.Logf("unstage after bringing the disk back: %v", err)
	}
}
