package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
)

// diagnoseCommand is the subcommand that reports the node's storage state.
const diagnoseCommand = "diagnose"

const diagnoseUsage = `Usage: csi-windows-node diagnose [-o table|json] [--timeout=2m] [plugin flags]

Reports, read-only, what the plugin's stage journal records set against the
host as it is: every staged volume, what backs it and whether it is healthy;
its publications; every SMB global mapping, iSCSI session and portal and
whether the plugin made it; what nothing explains; and the preflight
checks (csi-windows-node preflight). It changes nothing and
can run while the plugin serves (inside its pod: kubectl exec). It takes the
plugin's own flags, so the container's arguments can be reused: it reads
--driver-name, --kubelet-dir, --state-dir, --host, --sim-dir,
--smb-keep-mappings and --keep-iscsi-portals and ignores the others.
docs/troubleshooting.md explains the report.

Exit status: 0 when the report was printed (whatever it shows), 1 when the
node could not be read, 2 for bad flags.

Flags:
`

// diagnose is csi-windows-node diagnose: it parses its flags, opens the
// host read-only, takes stock of the node (plugin.Inventory) and prints the
// report on stdout, as a table or as JSON.
func diagnose(args []string, stdout, stderr io.Writer) int {
	sc := newSubcommand(diagnoseCommand, diagnoseUsage, stdout, stderr)
	var output string
	config.RegisterOutput(sc.fs, &output)
	timeout := sc.fs.Duration("timeout", 2*time.Minute, "how long reading the node may take before diagnose gives up")
	code, ok := sc.parse(args, func() error {
		if err := config.CheckOutput(output); err != nil {
			return err
		}
		if *timeout <= 0 {
			return fmt.Errorf("--timeout=%s: must be positive", *timeout)
		}
		return nil
	})
	if !ok {
		return code
	}
	opts := sc.opts
	popts, code, ok := sc.pluginOptions()
	if !ok {
		return code
	}
	defer klog.Flush()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background().WithValues("driver", opts.DriverName))
	n, err := readHost(ctx, opts)
	if err != nil {
		return sc.failed(err)
	}
	defer n.close()
	rep, err := plugin.Inventory(ctx, popts, n.plugin.Host)
	if err != nil {
		return sc.failed(err)
	}
	checks, err := plugin.Preflight(ctx, popts, n.plugin.Host, n.admin.System)
	if err != nil {
		return sc.failed(err)
	}
	rep.Preflight = &checks
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeTable(stdout, rep)
	}
	if err != nil {
		return sc.failed(fmt.Errorf("write the report: %w", err))
	}
	return exitOK
}
