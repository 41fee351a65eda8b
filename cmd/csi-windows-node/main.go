// Command csi-windows-node is a generic CSI node plugin for Windows nodes: it
// serves the CSI Identity and Node services on a unix socket and does the
// host work (disks, SMB global mappings, iSCSI) itself. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hostmetrics"
	"github.com/wincsi/csi-windows-node/pkg/identity"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/node"
	"github.com/wincsi/csi-windows-node/pkg/server"
	"github.com/wincsi/csi-windows-node/pkg/version"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	klog.InitFlags(fs)
	opts := config.Register(fs, runtime.GOOS)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if opts.Version {
		fmt.Println(version.JSON())
		return 0
	}
	hostname, _ := os.Hostname() // empty on error; Finish then requires --node-id
	if err := opts.Finish(fs, runtime.GOOS, hostname); err != nil {
		fmt.Fprintf(os.Stderr, "csi-windows-node: invalid flags:\n%v\n", err)
		return 2
	}
	defer klog.Flush()
	logger := klog.Background().WithValues("driver", opts.DriverName)
	ctx, stop := signal.NotifyContext(klog.NewContext(context.Background(), logger), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := serve(ctx, opts); err != nil {
		logger.Error(err, "Plugin failed")
		return 1
	}
	logger.Info("Plugin stopped")
	return 0
}

func serve(ctx context.Context, opts *config.Options) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	logger.Info("Starting", "version", version.Version, "commit", version.Commit, "nodeID", opts.NodeID,
		"host", opts.Host, "kubeletDir", opts.KubeletDir, "endpoint", opts.Endpoint)

	copts, err := contractOptions(opts)
	if err != nil {
		return err
	}
	style := winpath.POSIX
	if runtime.GOOS == "windows" {
		style = winpath.Windows
	}
	root, err := winpath.NewRoot(opts.KubeletDir, style)
	if err != nil {
		return fmt.Errorf("--kubelet-dir: %w", err)
	}
	// Claim the socket first: a second instance must fail here, before it
	// touches the host that the first one is serving.
	socket, err := server.ParseEndpoint(opts.Endpoint)
	if err != nil {
		return fmt.Errorf("--endpoint: %w", err)
	}
	l, err := server.Listen(socket)
	if err != nil {
		return err
	}
	hh, err := newHost(ctx, opts)
	if err != nil {
		_ = l.Close() // the host error is the one to report
		return err
	}
	defer hh.Close()
	h := hh.Host
	// Every host call is counted and timed on /metrics
	// (csi_windows_node_host_calls_total and
	// csi_windows_node_host_call_duration_seconds, docs/performance.md).
	mm := metrics.NewCSIMetricsManagerForPlugin(opts.DriverName)
	hm, err := hostmetrics.New(mm.GetRegistry())
	if err != nil {
		_ = l.Close() // the registration error is the one to report
		return err
	}
	h = hm.Wrap(h)

	jr, err := journal.Open(opts.StateDir)
	if err != nil {
		_ = l.Close() // the journal error is the one to report
		return fmt.Errorf("open the stage journal: %w", err)
	}
	ids := identity.New(opts.DriverName, version.Version, len(opts.Topology) > 0)
	if hh.Healthy != nil {
		ids.SetHealthCheck(hh.Healthy)
	}
	ns := node.New(node.Config{
		NodeID:     opts.NodeID,
		MaxVolumes: opts.MaxVolumesPerNode,
		Topology:   opts.Topology,
		Root:       root,
		Host:       h,
		ForVolume:  hh.ForVolume,
		Journal:    jr,
		Contract:   copts,
		Backends:   backends(h, opts, jr),
	})

	srv := server.New(server.Config{Identity: ids, Node: ns, Metrics: mm})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	var web *server.HTTP
	if opts.HTTPEndpoint != "" {
		web, err = server.ListenHTTP(server.HTTPConfig{Addr: opts.HTTPEndpoint, Metrics: mm, Ready: ids.Ready, Pprof: opts.EnablePprof})
		if err != nil {
			srv.Stop(0)
			return err
		}
		go func() {
			if err := web.Serve(); err != nil {
				logger.Error(err, "HTTP endpoint failed")
			}
		}()
	}
	ids.SetReady(true)
	logger.Info("Ready", "socket", socket, "httpEndpoint", opts.HTTPEndpoint, "startup", time.Since(start))

	select {
	case <-ctx.Done():
		logger.Info("Shutting down; waiting for in-flight RPCs", "grace", opts.ShutdownGrace)
	case err := <-served:
		return fmt.Errorf("gRPC server stopped: %w", err)
	}
	ids.SetReady(false)
	srv.Stop(opts.ShutdownGrace)
	if web != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := web.Shutdown(sctx); err != nil {
			logger.Error(err, "HTTP endpoint did not stop cleanly")
		}
	}
	return nil
}

func contractOptions(opts *config.Options) (contract.Options, error) {
	o := contract.Options{
		DefaultKind:    contract.Kind(opts.DefaultBackend),
		Aliases:        opts.ContextAliases,
		Presets:        opts.DiskPresets,
		VolumeIDDisk:   opts.VolumeIDDisk,
		RequirePrivacy: opts.SMBRequirePriv,
		DefaultDomain:  opts.SMBDefaultDomain,
	}
	if err := o.Validate(); err != nil {
		return contract.Options{}, fmt.Errorf("parameter contract flags (--context-alias, --disk-preset, --default-backend, --volume-id-disk): %w", err)
	}
	return o, nil
}

func backends(h host.Host, opts *config.Options, jr *journal.Journal) map[contract.Kind]node.Backend {
	disks := disk.New(h, disk.Options{OfflineOnUnstage: opts.OfflineDiskOnUnstage, Notes: jr})
	return map[contract.Kind]node.Backend{
		contract.KindDisk:  disks,
		contract.KindSMB:   smb.New(h, jr, smb.Options{Notes: jr, KeepMappings: opts.SMBKeepMappings}),
		contract.KindISCSI: iscsi.New(h, disks, jr, iscsi.Options{KeepPortals: opts.KeepISCSIPortals}),
	}
}
