// Command csi-windows-node is a generic CSI node plugin for Windows nodes: it
// serves the CSI Identity and Node services on a unix socket and does the
// host work (disks, SMB global mappings, iSCSI) itself. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/server"
	"github.com/wincsi/csi-windows-node/pkg/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses: a flag error is reported before anything starts.
const (
	exitOK        = 0
	exitFailed    = 1
	exitFlagError = 2
)

// run is the whole command: flags, then the checks that need no host,
// then the start-up. Every flag error ends it with exitFlagError before
// the "Starting" line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case diagnoseCommand:
			return diagnose(args[1:], stdout, stderr)
		case preflightCommand:
			return preflightCmd(args[1:], stdout, stderr)
		case selftestCommand:
			return selftestCmd(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports errors and --help itself
	fs.Usage = func() {}
	logging := config.RegisterLogging(fs)
	opts := config.Register(fs, runtime.GOOS)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			config.Usage(stdout, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "csi-windows-node: %v\nRun csi-windows-node --help for the flags (docs/flags.md).\n", err)
		return exitFlagError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "csi-windows-node: unexpected argument %q: every setting is a --flag, and a subcommand (%s, %s or %s) comes first\nRun csi-windows-node --help for the flags (docs/flags.md).\n",
			fs.Arg(0), diagnoseCommand, preflightCommand, selftestCommand)
		return exitFlagError
	}
	if err := logging.Apply(); err != nil {
		fmt.Fprintf(stderr, "csi-windows-node: invalid flags:\n%v\n", err)
		return exitFlagError
	}
	if opts.Version {
		fmt.Fprintln(stdout, version.JSON())
		return exitOK
	}
	hostname, _ := os.Hostname() // empty on error; Finish then requires --node-id
	st, err := prepare(fs, opts, hostname)
	if err != nil {
		fmt.Fprintf(stderr, "csi-windows-node: invalid flags:\n%v\n", err)
		return exitFlagError
	}
	defer klog.Flush()
	logger := klog.Background().WithValues("driver", opts.DriverName)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	var running atomic.Pointer[plugin.Plugin]
	defer watchSignals(ctx, cancel, &running)()

	if err := nodeIdentity(ctx, opts); err != nil {
		logger.Error(err, "Could not settle the node's identity")
		return exitFailed
	}
	st.plugin.NodeID, st.plugin.Topology = opts.NodeID, opts.Topology
	st.running = &running
	if err := serve(ctx, opts, st); err != nil {
		logger.Error(err, "Plugin failed")
		return exitFailed
	}
	logger.Info("Plugin stopped")
	return exitOK
}

// startup is what the flags give once checked.
type startup struct {
	plugin plugin.Options
	socket string   // the path of --endpoint
	setup  simSetup // --sim-config, read
	// running is set to the plugin once it is wired, for a second signal
	// to halt it.
	running *atomic.Pointer[plugin.Plugin]
}

// exitInterrupted is the exit status after a second SIGINT or SIGTERM: the
// plugin ended without waiting for the RPCs in flight.
const exitInterrupted = exitFailed

// watchSignals turns SIGINT and SIGTERM into the shutdown: the first
// cancels ctx (Serve then waits for the RPCs in flight, at most
// --shutdown-grace, and logs which); a second ends the process at once,
// once the plugin set in running (if any yet) has sealed its journal
// (plugin.Halt), and says so. The returned function stops watching.
func watchSignals(ctx context.Context, cancel context.CancelFunc, running *atomic.Pointer[plugin.Plugin]) (stop func()) {
	logger := klog.FromContext(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			var rpcs []string
			var err error
			if p := running.Load(); p != nil {
				rpcs, err = p.Halt(context.WithoutCancel(ctx))
			}
			if err != nil {
				logger.Error(err, "Second signal: the journal's writes in progress did not finish; exiting anyway")
			}
			logger.Info("Second signal: exiting now, without waiting for the RPCs in flight (the journal is flushed; "+
				"kubelet retries the RPCs, and a stage cut short is finished by its retry, its unstage or the orphan sweep)",
				"signal", sig.String(), "rpcs", rpcs)
			klog.Flush()
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// prepare checks every flag that can be checked without touching the host
// or the network: config's own rules, the kubelet directory and the
// parameter contract (plugin.FromConfig), the endpoint's form, and the
// --sim-config file.
func prepare(fs *flag.FlagSet, opts *config.Options, hostname string) (startup, error) {
	if err := opts.Finish(fs, runtime.GOOS, hostname); err != nil {
		return startup{}, err
	}
	var st startup
	var errs []error
	var err error
	if st.plugin, err = plugin.FromConfig(opts, runtime.GOOS); err != nil {
		errs = append(errs, err)
	}
	if st.socket, err = server.ParseEndpoint(opts.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", opts.EndpointSource(), err))
	}
	if opts.SimConfig != "" {
		if st.setup, err = loadSimSetup(opts.SimConfig); err != nil {
			errs = append(errs, fmt.Errorf("--sim-config %s: %w", opts.SimConfig, err))
		}
	}
	return st, errors.Join(errs...)
}

// serve starts the plugin and serves it until ctx ends. The order makes a
// failed start-up harmless: the socket is claimed first, and with
// --kubelet-registration the registration socket (a second plugin on
// either stops here, before it touches anything), then the HTTP endpoint is
// bound (a taken port stops the start-up before the socket exists, so no
// sidecar reaches a plugin that then exits), then the host is started and
// the plugin wired, and only then does the socket appear.
func serve(ctx context.Context, opts *config.Options, st startup) (err error) {
	logger := klog.FromContext(ctx)
	start := time.Now()
	logger.Info("Starting", "version", version.Version, "commit", version.Commit, "nodeID", opts.NodeID,
		"host", opts.Host, "kubeletDir", opts.KubeletDir, "endpoint", opts.Endpoint)
	st.plugin.Started = start

	claim, err := server.Claim(ctx, st.socket)
	if err != nil {
		return err
	}
	defer claim.Release() // a no-op once the socket's listener holds it
	var ls plugin.Listeners
	// With --kubelet-registration, the registration socket is claimed the
	// same way, before anything else is touched.
	if ls.Registration, err = plugin.ClaimRegistration(ctx, st.plugin); err != nil {
		return err
	}
	if ls.Registration != nil {
		defer ls.Registration.Release() // a no-op once Serve listens on it
	}
	if opts.HTTPEndpoint != "" {
		if ls.HTTP, err = server.BindHTTP(opts.HTTPEndpoint); err != nil {
			return err
		}
		defer closeOnError(&err, ls.HTTP)
	}
	n, err := newHost(ctx, opts, st.setup, nil)
	if err != nil {
		return err
	}
	defer n.close()
	p, err := plugin.New(st.plugin, n.plugin)
	if err != nil {
		return err
	}
	if st.running != nil {
		st.running.Store(p)
	}
	if ls.CSI, err = claim.Listen(); err != nil {
		return err
	}
	return p.Serve(ctx, ls)
}

// closeOnError closes l when the start-up failed before Serve took it.
func closeOnError(err *error, l net.Listener) {
	if *err != nil {
		_ = l.Close() // the start-up error is the one to report
	}
}
