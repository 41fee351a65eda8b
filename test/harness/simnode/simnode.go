// Package simnode wires the node service over the simulated Windows host in
// the test process ("library mode") exactly the way cmd/csi-windows-node
// wires it with --host=sim and default flags: the same backends and
// options, the journal in <sim-dir>/journal, the kubelet directory as the
// confinement root. The reliability suites (crash matrix, soak, hangs,
// confinement, fuzzing, secrets) use it to prepare host state, to learn the
// host-call sequence of an RPC and to drive hundreds of volumes without a
// process per run.
//
// The directory layout is the one test/harness/testbin gives the plugin binary
// (<base>/kubelet, <base>/sim, <base>/sim/journal), so a base directory
// prepared here can be handed to the binary once Close has released the
// simulated host's directory lock.
//
// Test tooling only; never imported by the plugin.
package simnode

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/sim"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Options configure Open. The zero value (apart from Base) is the binary's
// default configuration with --host=sim.
type Options struct {
	// Base holds kubelet/, sim/ and sim/journal; required.
	Base string
	// NoAutoAttach turns off the simulated host's auto-attach
	// (--sim-auto-attach=false).
	NoAutoAttach bool
	// AutoAttachSize is --sim-disk-size (0: the sim's default, 1 GiB).
	AutoAttachSize uint64
	// Backoff paces waits for disks (zero: backend.DefaultBackoff, the
	// binary's).
	Backoff backend.Backoff
	// Contract overrides the contract options; nil means the binary's
	// defaults with --host=sim (--volume-id-disk=serial,
	// --smb-require-privacy=true).
	Contract *contract.Options
	// Logger is given to the simulated host (zero: klog.Background()).
	Logger klog.Logger
	// WrapHost, when set, wraps the host before the backends see it (the
	// binary wraps it with host-call metrics).
	WrapHost func(host.Host) host.Host
}

// Node is a node service on a simulated host.
type Node struct {
	Base    string
	Kubelet string
	SimDir  string
	Sim     *sim.Sim
	Journal *journal.Journal
	Root    *winpath.Root
	Server  *node.Server
}

// Dirs returns the kubelet, sim and journal directories under base.
func Dirs(base string) (kubelet, simDir, journalDir string) {
	return filepath.Join(base, "kubelet"), filepath.Join(base, "sim"), filepath.Join(base, "sim", "journal")
}

// Open opens (or creates) the simulated host and journal under o.Base and
// builds the node service.
func Open(o Options) (*Node, error) {
	if o.Base == "" {
		return nil, fmt.Errorf("simnode: Options.Base is required")
	}
	kubelet, simDir, jdir := Dirs(o.Base)
	if err := os.MkdirAll(kubelet, 0o755); err != nil {
		return nil, err
	}
	s, err := sim.New(sim.Config{Dir: simDir, AutoAttach: !o.NoAutoAttach, AutoAttachSize: o.AutoAttachSize, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	jr, err := journal.Open(jdir)
	if err != nil {
		_ = s.Close() // the journal error is the one to report
		return nil, err
	}
	root, err := winpath.NewRoot(kubelet, winpath.POSIX)
	if err != nil {
		_ = s.Close() // the root error is the one to report
		return nil, err
	}
	copts := contract.Options{VolumeIDDisk: contract.VolumeIDDiskSerial, RequirePrivacy: true}
	if o.Contract != nil {
		copts = *o.Contract
	}
	h := s.Host()
	if o.WrapHost != nil {
		h = o.WrapHost(h)
	}
	return &Node{
		Base: o.Base, Kubelet: kubelet, SimDir: simDir,
		Sim: s, Journal: jr, Root: root,
		Server: node.New(node.Config{
			NodeID:    "test-node",
			Root:      root,
			Host:      h,
			ForVolume: sim.WithVolume,
			Journal:   jr,
			Contract:  copts,
			Backends:  Backends(h, jr, o.Backoff),
		}),
	}, nil
}

// Backends returns the three backends as cmd/csi-windows-node builds them
// with default flags (disks offlined at unstage, SMB mappings and iSCSI
// portals removed with their last volume).
func Backends(h host.Host, jr *journal.Journal, b backend.Backoff) map[contract.Kind]node.Backend {
	disks := disk.New(h, disk.Options{OfflineOnUnstage: true, Backoff: b})
	return map[contract.Kind]node.Backend{
		contract.KindDisk:  disks,
		contract.KindSMB:   smb.New(h, jr, smb.Options{Notes: jr}),
		contract.KindISCSI: iscsi.New(h, disks, jr, iscsi.Options{Backoff: b}),
	}
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
