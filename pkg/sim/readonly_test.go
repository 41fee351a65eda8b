//go:build linux

// Linux only: the simulated host runs only on Linux (see doc.go).

package sim

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// TestOpenReadOnlyBesideTheWriter: a read-only Sim opens while another Sim
// holds the directory (as the running plugin does), sees what the writer
// made durable, changes nothing, and leaves the writer working.
func TestOpenReadOnlyBesideTheWriter(t *testing.T) {
	ctx := context.Background()
	w := newSim(t)
	num, err := w.AttachDisk(DiskSpec{Serial: "vol-1", FileSystem: "NTFS", Adapter: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A write of the plugin in progress, which a reader must not remove.
	tmp := filepath.Join(w.Dir(), stateFile+".12345.tmp")
	if err := os.WriteFile(tmp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(w.Dir(), stateFile))
	if err != nil {
		t.Fatal(err)
	}

	r, err := OpenReadOnly(w.Dir(), klog.Background())
	if err != nil {
		t.Fatalf("OpenReadOnly while the writer holds the directory: %v", err)
	}
	d, err := r.Host().Disks.Get(ctx, num)
	if err != nil || d.SerialNumber != "vol-1" {
		t.Fatalf("Get = %+v, %v; want the writer's disk", d, err)
	}

	// Every call that would change the host fails before any effect.
	hv := reflect.ValueOf(r.Host())
	for i := range hv.NumField() {
		area := strings.ToLower(hv.Type().Field(i).Name)
		iface := hv.Field(i)
		for j := range iface.NumMethod() {
			name := iface.Type().Method(j).Name
			op := area + "." + name
			if readOps[op] {
				continue
			}
			fn := iface.Method(j)
			args := []reflect.Value{reflect.ValueOf(ctx)}
			for k := 1; k < fn.Type().NumIn(); k++ {
				args = append(args, reflect.Zero(fn.Type().In(k)))
			}
			out := fn.Call(args)
			err, _ := out[len(out)-1].Interface().(error)
			if !errors.Is(err, ErrReadOnly) || !errors.Is(err, host.ErrNotImplemented) {
				t.Errorf("%s on a read-only sim: %v, want ErrReadOnly", op, err)
			}
		}
	}
	for name, err := range map[string]error{
		"AttachDisk": func() error { _, err := r.AttachDisk(DiskSpec{Serial: "x"}); return err }(),
		"Reboot":     r.Reboot(),
		"AddShare":   r.AddShare(ShareSpec{Server: "srv", Share: "data"}),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only sim: %v, want ErrReadOnly", name, err)
		}
	}
	if err := r.Host().Files.MakeDir(ctx, filepath.Join(t.TempDir(), "x")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("MakeDir: %v", err)
	}
	after, err := os.ReadFile(filepath.Join(w.Dir(), stateFile))
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("state.json changed under a read-only sim (%v)", err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the read-only sim touched a temporary file: %v", err)
	}

	// The writer goes on; the reader sees its next durable change.
	if err := w.Host().Disks.SetOnline(ctx, d, true); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Host().Disks.Get(ctx, num); err != nil || d.IsOffline {
		t.Fatalf("after the writer brought the disk online: %+v, %v", d, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Host().Disks.List(ctx); err == nil {
		t.Fatal("a call after Close succeeded")
	}
	if _, err := w.Host().Disks.Get(ctx, num); err != nil {
		t.Fatalf("the writer after the reader closed: %v", err)
	}
}

func TestOpenReadOnlyNeedsAState(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenReadOnly(dir, klog.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty directory: %v, want os.ErrNotExist", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("OpenReadOnly created %v", ents)
	}
	if _, err := OpenReadOnly(filepath.Join(dir, "missing"), klog.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory: %v, want os.ErrNotExist", err)
	}
}
