// Package simnode builds the plugin over the simulated Windows host in the
// test process ("library mode") exactly as cmd/csi-windows-node does with
// --host=sim: the options come from the binary's own flags (pkg/config,
// then plugin.FromConfig, so the defaults cannot drift), the plugin from
// plugin.New, with the journal in <sim-dir>/journal and the kubelet
// directory as the confinement root. The reliability suites (crash matrix,
// soak, hangs, confinement, fuzzing, secrets), the csi-sanity library runs
// and the benchmarks use it to prepare host state, to learn the host-call
// sequence of an RPC and to drive hundreds of volumes without a process per
// run.
//
// The directory layout is the one test/harness/testbin gives the plugin binary
// (<base>/kubelet, <base>/sim, <base>/sim/journal), so a base directory
// prepared here can be handed to the binary once Close has released the
// simulated host's directory lock.
//
// Test tooling only; never imported by the plugin.
package simnode

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/sim/controller"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// DriverName is the driver name the plugin is built with, as
// test/harness/testbin starts the binary.
const DriverName = "sim.csi.wincsi.io"

// Options configure Open. The zero value (apart from Base) is the binary's
// default configuration with --host=sim.
type Options struct {
	// Base holds kubelet/, sim/ and sim/journal; required.
	Base string
	// NoAutoAttach turns off the attaching of disks by the stand-in for
	// the controller (--sim-auto-attach=false).
	NoAutoAttach bool
	// AutoAttachSize is --sim-disk-size (0: the sim's default, 1 GiB).
	AutoAttachSize uint64
	// Args are more flags of the binary (--smb-keep-mappings, ...).
	Args []string
	// Backoff paces waits for disks (zero: backend.DefaultBackoff, the
	// binary's).
	Backoff backend.Backoff
	// Contract overrides the contract options the flags give; nil keeps
	// them (--smb-require-privacy=true).
	Contract *contract.Options
	// FS overrides what the node service checks the ancestors of request
	// paths with (plugin.Options.FS); nil keeps the machine's.
	FS winpath.FS
	// Logger is given to the simulated host (zero: klog.Background()).
	Logger klog.Logger
	// WrapHost, when set, wraps the simulated host before the plugin sees
	// it (to inject hangs); the plugin wraps the result with host-call
	// metrics as it wraps any host.
	WrapHost func(host.Host) host.Host
}

// Node is the plugin on a simulated host.
type Node struct {
	Base     string
	Kubelet  string
	SimDir   string
	StateDir string // the stage journal's directory
	Sim      *sim.Sim
	Plugin   *plugin.Plugin
	Server   csi.NodeServer // Plugin.Node(): the node service as a CO calls it
}

// Dirs returns the kubelet, sim and journal directories under base.
func Dirs(base string) (kubelet, simDir, journalDir string) {
	return filepath.Join(base, "kubelet"), filepath.Join(base, "sim"), filepath.Join(base, "sim", "journal")
}

// Open opens (or creates) the simulated host and journal under o.Base and
// builds the plugin over them with plugin.New.
func Open(o Options) (*Node, error) {
	if o.Base == "" {
		return nil, fmt.Errorf("simnode: Options.Base is required")
	}
	kubelet, simDir, _ := Dirs(o.Base)
	if err := os.MkdirAll(kubelet, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--host=sim", "--sim-dir=" + simDir, "--kubelet-dir=" + kubelet,
		"--driver-name=" + DriverName, "--node-id=test-node"}
	if o.NoAutoAttach {
		args = append(args, "--sim-auto-attach=false")
	}
	if o.AutoAttachSize != 0 {
		args = append(args, "--sim-disk-size="+strconv.FormatUint(o.AutoAttachSize, 10))
	}
	cfg, err := Flags(append(args, o.Args...)...)
	if err != nil {
		return nil, err
	}
	opts, err := plugin.FromConfig(cfg, runtime.GOOS)
	if err != nil {
		return nil, err
	}
	opts.Backoff, opts.FS = o.Backoff, o.FS
	if o.Contract != nil {
		opts.Contract = *o.Contract
	}
	var setup *sim.Setup
	if cfg.SimConfig != "" {
		if setup, err = sim.LoadSetup(cfg.SimConfig); err != nil {
			return nil, fmt.Errorf("--sim-config %s: %w", cfg.SimConfig, err)
		}
	}
	s, err := sim.New(sim.Config{Dir: cfg.SimDir, Logger: o.Logger, Setup: setup})
	if err != nil {
		return nil, err
	}
	h := s.Host()
	if o.WrapHost != nil {
		h = o.WrapHost(h)
	}
	ctl := controller.Wrap(s, controller.Options{Attach: cfg.SimAutoAttach, DiskSize: uint64(cfg.SimDiskSize)})
	p, err := plugin.New(opts, plugin.Host{Host: h, Controller: ctl})
	if err != nil {
		_ = s.Close() // the wiring error is the one to report
		return nil, err
	}
	return &Node{
		Base: o.Base, Kubelet: kubelet, SimDir: simDir, StateDir: cfg.StateDir, Sim: s,
		Plugin: p, Server: p.Node(),
	}, nil
}

// Journal reads the stage journal as diagnose does
// (journal.OpenReadOnly): a snapshot of what the plugin has written so
// far. It fails the test when the journal cannot be read.
func (n *Node) Journal(t testing.TB) *journal.Journal {
	t.Helper()
	j, err := journal.OpenReadOnly(n.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Flags parses the binary's flags as cmd/csi-windows-node does on this
// machine's OS, with "test-node" as the host name.
func Flags(args ...string) (*config.Options, error) {
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := config.Register(fs, runtime.GOOS)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("simnode: flags %q: %w", args, err)
	}
	if err := cfg.Finish(fs, runtime.GOOS, "test-node"); err != nil {
		return nil, fmt.Errorf("simnode: flags %q: %w", args, err)
	}
	return cfg, nil
}

// Close closes the simulated host, releasing its directory.
func (n *Node) Close() error { return n.Sim.Close() }

// Path joins parts below the kubelet directory.
func (n *Node) Path(parts ...string) string {
	return filepath.Join(append([]string{n.Kubelet}, parts...)...)
}

// StagingPath is where kubelet stages volume vol (the directory is not
// created).
func StagingPath(kubelet, vol string) string {
	return filepath.Join(kubelet, "plugins", "kubernetes.io", "csi", "sim.csi.wincsi.io", vol, "globalmount")
}

// TargetPath is where kubelet publishes volume vol for pod (the parent is
// not created).
func TargetPath(kubelet, pod, vol string) string {
	return filepath.Join(kubelet, "pods", pod, "volumes", "kubernetes.io~csi", vol, "mount")
}

// MustOpen is Open for a test that builds a node and closes it again
// before it goes on (to copy the directory, or to let the plugin binary
// open it): it fails t if the node does not open, and the func it returns
// closes the node, failing t if that fails.
func MustOpen(t testing.TB, o Options) (*Node, func()) {
	t.Helper()
	n, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return n, func() {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
