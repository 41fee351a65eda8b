package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/cloud"
	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/hostmetrics"
	"github.com/wincsi/csi-windows-node/pkg/identity"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
	"github.com/wincsi/csi-windows-node/pkg/registration"
	"github.com/wincsi/csi-windows-node/pkg/server"
	"github.com/wincsi/csi-windows-node/pkg/sweep"
	"github.com/wincsi/csi-windows-node/pkg/version"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Options is the configuration of a plugin: what the flags say
// (FromConfig), plus what only tests change.
type Options struct {
	DriverName string
	// Version is what GetPluginInfo reports; "" means version.Version.
	Version           string
	NodeID            string
	MaxVolumesPerNode int64
	Topology          map[string]string

	// KubeletDir is the confinement root of every path from the CO, in
	// PathStyle (winpath.Windows on Windows, winpath.POSIX with the
	// simulated host on Linux).
	KubeletDir string
	PathStyle  winpath.Style
	// StateDir is the stage journal's directory.
	StateDir string

	// Contract says how volume_context, publish_context and secrets are
	// read.
	Contract contract.Options

	// Backend behaviour (see the flags of the same names).
	OfflineDiskOnUnstage bool
	SMBKeepMappings      bool
	KeepISCSIPortals     bool
	// GCEDisks lists the instance's disks from the Compute Engine metadata
	// server, for the gce-pd preset on NVMe machine types; FromConfig sets
	// it with --cloud=gce (disk.Options.GCEDisks).
	GCEDisks func(ctx context.Context) ([]cloud.GCEDisk, error)

	// OrphanSweep and OrphanSweepInterval are --orphan-sweep and
	// --orphan-sweep-interval (pkg/sweep); the zero mode is sweep.Off.
	OrphanSweep         sweep.Mode
	OrphanSweepInterval time.Duration

	// Serving (Serve). HTTPEndpoint is --http-endpoint, which the caller
	// binds (server.BindHTTP) and hands to Serve in Listeners.HTTP.
	HTTPEndpoint  string
	EnablePprof   bool
	ShutdownGrace time.Duration
	// Started is when start-up began, for the start-up time Serve logs
	// once ready; zero means when New was called.
	Started time.Time

	// KubeletRegistration is --kubelet-registration: Serve also serves
	// kubelet's plugin registration API (pkg/registration) on
	// RegistrationSocket, once the CSI socket is served, and tells kubelet
	// KubeletRegistrationPath as the CSI endpoint. The caller claims the
	// socket (ClaimRegistration) and hands it to Serve.
	KubeletRegistration     bool
	RegistrationSocket      string
	KubeletRegistrationPath string

	// Backoff paces the waits for a disk or LUN to appear; zero means
	// backend.DefaultBackoff. Tests shorten it; no flag sets it.
	Backoff backend.Backoff
	// FS is what the node service checks the ancestors of request paths
	// with; nil means the machine's (winpath.DefaultFS). Benchmarks
	// replace it to measure what the check costs.
	FS winpath.FS
}

// FromConfig returns the options the parsed flags give, for a binary
// running on goos. It checks what config cannot check alone (the kubelet
// directory as a confinement root, the parameter contract's flags
// together), so that a bad flag fails before the host is touched.
func FromConfig(c *config.Options, goos string) (Options, error) {
	o := Options{
		DriverName:        c.DriverName,
		Version:           version.Version,
		NodeID:            c.NodeID,
		MaxVolumesPerNode: c.MaxVolumesPerNode,
		Topology:          c.Topology,
		KubeletDir:        c.KubeletDir,
		PathStyle:         winpath.POSIX,
		StateDir:          c.StateDir,
		Contract: contract.Options{
			DefaultKind:       contract.Kind(c.DefaultBackend),
			Aliases:           c.ContextAliases,
			Presets:           c.DiskPresets,
			VolumeIDDisk:      c.VolumeIDDisk,
			RequirePrivacy:    c.SMBRequirePriv,
			DefaultDomain:     c.SMBDefaultDomain,
			DefaultRootAccess: c.VolumeRootAccess,
		},
		OfflineDiskOnUnstage: c.OfflineDiskOnUnstage,
		SMBKeepMappings:      c.SMBKeepMappings,
		KeepISCSIPortals:     c.KeepISCSIPortals,
		OrphanSweep:          sweep.Mode(c.OrphanSweep),
		OrphanSweepInterval:  c.OrphanSweepInterval,
		HTTPEndpoint:         c.HTTPEndpoint,
		EnablePprof:          c.EnablePprof,
		ShutdownGrace:        c.ShutdownGrace,
	}
	if goos == "windows" {
		o.PathStyle = winpath.Windows
	}
	if c.Cloud == config.CloudGCE {
		o.GCEDisks = cloud.NewGCEMetadata(c.CloudMetadataEndpoint, 0).Disks
	}
	root, err := winpath.NewRoot(o.KubeletDir, o.PathStyle)
	if err != nil {
		return Options{}, fmt.Errorf("--kubelet-dir: %w", err)
	}
	if c.KubeletRegistration {
		if err := o.registrationFromConfig(c, root); err != nil {
			return Options{}, err
		}
	}
	if err := o.Contract.Validate(); err != nil {
		return Options{}, fmt.Errorf("parameter contract flags (--context-alias, --disk-preset, --default-backend, --volume-id-disk, --volume-root-access): %w", err)
	}
	return o, nil
}

// Host is a started host as the plugin uses it.
type Host struct {
	host.Host
	// Healthy reports a host that can no longer serve (a wedged Windows
	// executor); Probe turns not ready while it fails. Nil: always healthy.
	Healthy func() error
	// System is what the preflight checks read, which Serve runs once at
	// start (pkg/preflight); nil runs none.
	System host.System
	// Controller, when set, stands in for the controller side of the CSI
	// driver on a host no controller serves: New calls it with the node
	// service and the contract options that service parses volumes with,
	// and serves what it returns in the node service's place. Only the
	// wiring of the simulated host sets it (pkg/sim/controller: attaching
	// and growing a disk volume's disk before the node sees the request);
	// on Windows the vendor's controller does that work and it is nil.
	Controller func(node csi.NodeServer, c contract.Options) csi.NodeServer
}

// Plugin is a wired plugin: the services the gRPC server serves (Identity,
// Node), its metrics, and what the orphan sweep asks of it (TakeStock,
// ReleaseGone, ReleaseUnused, Sweep).
type Plugin struct {
	Identity *identity.Server
	// Metrics holds the CSI operation metrics and the host-call metrics
	// (/metrics).
	Metrics metrics.CSIMetricsManager
	// Registration is the plugin's own kubelet registration; nil unless
	// Options.KubeletRegistration.
	Registration *registration.Service

	// served is the node service as Serve serves it (Node).
	served csi.NodeServer
	// node is the node service itself, for ReleaseGone.
	node *node.Server
	// journal is the stage journal every backend keeps its records in.
	journal *journal.Journal
	// host is the host as the backends see it: counted and timed.
	host host.Host
	// root is the confinement root (the kubelet directory).
	root *winpath.Root
	// releasers are the backends whose volumes share host resources
	// (ReleaseUnused).
	releasers []backend.Releaser
	// sweeper is the orphan sweep (Sweep; Serve runs it).
	sweeper *sweep.Sweeper
	// system and preflight are the preflight checks Serve runs at start
	// and their gauge.
	system    host.System
	preflight *preflight.Gauge
	// serving is the gRPC server while Serve runs (Halt names its RPCs).
	serving atomic.Pointer[server.Server]

	opts Options
}

// New wires a plugin over h: it opens the stage journal in o.StateDir
// (upgrading what an earlier version wrote, upgrade.go),
// wraps the host with host-call metrics, builds the three backends over
// the host and the journal, and the node and identity services over them.
// It is the only place that decides how these are put together: the binary
// and every test harness call it.
func New(o Options, h Host) (*Plugin, error) {
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	if o.DriverName == "" {
		return nil, errors.New("plugin: no driver name")
	}
	if o.StateDir == "" {
		return nil, errors.New("plugin: no state directory for the stage journal")
	}
	if err := o.Contract.Validate(); err != nil {
		return nil, fmt.Errorf("parameter contract options: %w", err)
	}
	root, err := winpath.NewRoot(o.KubeletDir, o.PathStyle)
	if err != nil {
		return nil, fmt.Errorf("kubelet directory: %w", err)
	}
	// Every host call is counted and timed on /metrics
	// (csi_windows_node_host_calls_total and
	// csi_windows_node_host_call_duration_seconds, docs/performance.md).
	mm := metrics.NewCSIMetricsManagerForPlugin(o.DriverName)
	hm, err := hostmetrics.New(mm.GetRegistry())
	if err != nil {
		return nil, err
	}
	hh := hm.Wrap(h.Host)
	jr, err := journal.Open(o.StateDir)
	if err != nil {
		return nil, fmt.Errorf("open the stage journal: %w", err)
	}
	if err := registerRefused(mm.GetRegistry(), jr); err != nil {
		return nil, err
	}
	if err := upgradeJournal(context.Background(), jr); err != nil {
		return nil, fmt.Errorf("upgrade the stage journal in %s: %w", o.StateDir, err)
	}

	key, err := jr.CredentialKey()
	if err != nil {
		return nil, err
	}
	logNewCredentialKey(context.Background(), klog.Background(), jr, jr.KeyMade(), o.StateDir)
	if err := registerCredentialGauges(mm.GetRegistry(), jr); err != nil {
		return nil, err
	}
	_, backends := newBackends(hh, jr, key, o)
	// The backends whose volumes share host resources answer
	// ReleaseUnused.
	var releasers []backend.Releaser
	for _, k := range []contract.Kind{contract.KindDisk, contract.KindSMB, contract.KindISCSI} {
		if r, ok := backends[k].(backend.Releaser); ok {
			releasers = append(releasers, r)
		}
	}

	ver := o.Version
	if ver == "" {
		ver = version.Version
	}
	ids := identity.New(o.DriverName, ver, len(o.Topology) > 0)
	if h.Healthy != nil {
		ids.SetHealthCheck(h.Healthy)
	}
	ns := node.New(node.Config{
		NodeID:     o.NodeID,
		MaxVolumes: o.MaxVolumesPerNode,
		Topology:   o.Topology,
		Root:       root,
		FS:         o.FS,
		Publisher:  backend.NewPublisher(hh),
		Backends:   backends,
		Journal:    jr,
		Contract:   o.Contract,
	})
	var served csi.NodeServer = ns
	if h.Controller != nil {
		served = h.Controller(ns, o.Contract)
	}
	p := &Plugin{Identity: ids, Metrics: mm, served: served, node: ns, journal: jr, host: hh, root: root,
		releasers: releasers, system: h.System, opts: o}
	if p.preflight, err = preflight.NewGauge(mm.GetRegistry()); err != nil {
		return nil, err
	}
	if p.Registration, err = newRegistration(o, mm.GetRegistry()); err != nil {
		return nil, err
	}
	mode := o.OrphanSweep
	if mode == "" {
		mode = sweep.Off
	}
	if p.sweeper, err = sweep.New(sweep.Config{Mode: mode, Interval: o.OrphanSweepInterval, Plugin: p, Registry: mm.GetRegistry()}); err != nil {
		return nil, err
	}
	return p, nil
}

// Node is the node service as Serve serves it, and as a CO calls it: the
// node behind the host's stand-in for the controller when there is one
// (Host.Controller). In-process callers (the test harnesses, benchmarks)
// call it instead of a socket; what the node keeps (its journal, the
// host) they read as diagnose does, from the state directory and the host.
func (p *Plugin) Node() csi.NodeServer { return p.served }

// Sweep runs one round of the orphan sweep in the configured mode
// (pkg/sweep; nothing with --orphan-sweep=off). Serve runs rounds at start
// and every --orphan-sweep-interval; tests call it to run one when they
// choose.
func (p *Plugin) Sweep(ctx context.Context) (sweep.Round, error) {
	return p.sweeper.Sweep(ctx)
}

// ReleaseGone decides about the journal entry of a volume whose staging
// path may be gone, and with remove finishes the volume as
// NodeUnstageVolume would, under the volume's lock (node.Server.ReleaseGone).
func (p *Plugin) ReleaseGone(ctx context.Context, volumeID string, remove bool) (bool, error) {
	return p.node.ReleaseGone(ctx, volumeID, remove)
}

// ReleaseUnused asks the backend that owns key (smb.ShareKey,
// iscsi.TargetKey, iscsi.PortalKey) whether the shared host resource it
// names is unused, and with remove removes it: the same decision, through
// the same transition and locks, as the unstage of the resource's last
// volume (backend.Releaser). It is for callers that are not a volume, such
// as an orphan sweep, which must only ask about resources the plugin made.
// A key no backend owns is host.ErrInvalid.
func (p *Plugin) ReleaseUnused(ctx context.Context, key string, remove bool) (bool, error) {
	for _, r := range p.releasers {
		if r.Owns(key) {
			return r.ReleaseUnused(ctx, key, remove)
		}
	}
	return false, fmt.Errorf("%q is not the key of a shared host resource: %w", key, host.ErrInvalid)
}

// newBackends builds the disk, SMB and iSCSI backends over h and store, as
// the plugin runs them; key is the node's credential key (nil for a tool
// that records nothing). It returns the disk backend too, which the iSCSI
// backend prepares its disks with.
func newBackends(h host.Host, store backend.Store, key []byte, o Options) (*disk.Backend, map[contract.Kind]backend.Backend) {
	disks := disk.New(h, store, disk.Options{OfflineOnUnstage: o.OfflineDiskOnUnstage, Backoff: o.Backoff, GCEDisks: o.GCEDisks})
	return disks, map[contract.Kind]backend.Backend{
		contract.KindDisk:  disks,
		contract.KindSMB:   smb.New(h, store, smb.Options{KeepMappings: o.SMBKeepMappings, CredentialKey: key}),
		contract.KindISCSI: iscsi.New(h, disks, store, iscsi.Options{KeepPortals: o.KeepISCSIPortals, Backoff: o.Backoff, CredentialKey: key}),
	}
}
