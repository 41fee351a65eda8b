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

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/server"
	"github.com/wincsi/csi-windows-node/pkg/version"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == diagnoseCommand {
		return diagnose(args[1:], os.Stdout, os.Stderr)
	}
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	logging := config.RegisterLogging(fs)
	opts := config.Register(fs, runtime.GOOS)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "csi-windows-node: unexpected argument %q; the only subcommand is %s, which comes first\n", fs.Arg(0), diagnoseCommand)
		return 2
	}
	if err := logging.Apply(); err != nil {
		fmt.Fprintf(os.Stderr, "csi-windows-node: invalid flags:\n%v\n", err)
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

	if err := nodeIdentity(ctx, opts); err != nil {
		logger.Error(err, "Could not settle the node's identity")
		return 1
	}
	if err := serve(ctx, opts); err != nil {
		logger.Error(err, "Plugin failed")
		return 1
	}
	logger.Info("Plugin stopped")
	return 0
}

// serve builds the plugin the flags describe and serves it until ctx ends.
func serve(ctx context.Context, cfg *config.Options) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	logger.Info("Starting", "version", version.Version, "commit", version.Commit, "nodeID", cfg.NodeID,
		"host", cfg.Host, "kubeletDir", cfg.KubeletDir, "endpoint", cfg.Endpoint)

	opts, err := plugin.FromConfig(cfg, runtime.GOOS)
	if err != nil {
		return err
	}
	opts.Started = start
	// Claim the socket first: a second instance must fail here, before it
	// touches the host that the first one is serving.
	socket, err := server.ParseEndpoint(cfg.Endpoint)
	if err != nil {
		return fmt.Errorf("--endpoint: %w", err)
	}
	l, err := server.Listen(ctx, socket)
	if err != nil {
		return err
	}
	h, closeHost, err := newHost(ctx, cfg)
	if err != nil {
		_ = l.Close() // the host error is the one to report
		return err
	}
	defer closeHost()
	p, err := plugin.New(opts, h)
	if err != nil {
		_ = l.Close() // the wiring error is the one to report
		return err
	}
	return p.Serve(ctx, l)
}
