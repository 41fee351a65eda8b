package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
)

// preflightCommand checks the node the plugin is about to serve.
const preflightCommand = "preflight"

const preflightUsage = `Usage: csi-windows-node preflight [-o table|json] [--fix] [--backends disk,smb,iscsi] [--record FILE] [--timeout=2m] [plugin flags]

Checks that this node can serve the plugin, each check pass, warn, fail or
info (reported, not judged), with what it found and a one-line fix: the
Windows release, the process's rights, the kubelet directory (--kubelet-dir)
and the state directory (--state-dir, or the default under --driver-name),
the storage provider, the SMB client, the iSCSI initiator service MSiSCSI,
Multipath-IO, the SAN policy, and Windows Server 2025's native NVMe stack.
It only reads, unless --fix: that sets MSiSCSI to start automatically and
starts it (it is manual and stopped on a fresh Windows Server, and every
iSCSI login fails until it runs), says what it changed, and checks again.
Nothing else is ever changed. It takes the plugin's own flags, so the
container's arguments can be reused. docs/troubleshooting.md explains each
check.

Exit status: 0 when no check fails (warnings allowed), 1 when a check fails
(or --fix could not make its change), 2 for bad flags.

Flags:
`

// preflightOutput is preflight -o json.
type preflightOutput struct {
	preflight.Report
	// Result is the worst result: pass, warn or fail.
	Result preflight.Result `json:"result"`
	// Fixed lists what --fix changed.
	Fixed []string `json:"fixed,omitempty"`
}

func preflightCmd(args []string, stdout, stderr io.Writer) int {
	sc := newSubcommand(preflightCommand, preflightUsage, stdout, stderr)
	po := config.RegisterPreflight(sc.fs)
	if code, ok := sc.parse(args, po.Finish); !ok {
		return code
	}
	opts, fail := sc.opts, sc.usageError
	// The driver name only places the default state directory: without
	// it (and without --state-dir) that check is left out.
	noDriver := opts.DriverName == ""
	if noDriver {
		opts.DriverName = "preflight.invalid"
	}
	popts, code, ok := sc.pluginOptions()
	if !ok {
		return code
	}
	if noDriver && !opts.IsSet("state-dir") {
		popts.StateDir = ""
	}
	defer klog.Flush()

	ctx, cancel := context.WithTimeout(context.Background(), po.Timeout)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())
	cfg := plugin.PreflightConfig(popts, nil)
	cfg.SMB, cfg.ISCSI = slices.Contains(po.Backends, "smb"), slices.Contains(po.Backends, "iscsi")
	var rec *record
	if po.Record != "" {
		if opts.Host != config.HostWindows {
			return fail("--record: only the Windows host's calls are recorded; --host=%s makes none", opts.Host)
		}
		rec = &record{path: po.Record, header: recording.Header{Scenario: recording.ScenarioPreflight, Params: cfg.Params(po.Fix)}}
	}
	open := readHost
	if po.Fix || rec != nil {
		open = func(ctx context.Context, opts *config.Options) (*node, error) {
			return newHost(ctx, opts, simSetup{}, rec)
		}
	}
	n, err := open(ctx, opts)
	if err != nil {
		return sc.failed(err)
	}
	defer n.close()

	out := preflightOutput{}
	if po.Fix {
		changes, err := preflight.Fix(ctx, n.admin.System)
		out.Fixed = changes
		if err != nil {
			for _, c := range changes {
				sc.printf("--fix changed %s", c)
			}
			return sc.failed(fmt.Errorf("--fix: %w", err))
		}
	}
	out.Report = preflight.Run(ctx, cfg, n.plugin.Host, n.admin.System)
	out.Result = out.Worst()
	if n.recorder != nil {
		if err := n.recorder.WriteResult(out.Outcome()); err != nil {
			sc.printf("--record %s: %v", po.Record, err)
		}
	}
	if output := po.Output; output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(out)
	} else {
		err = writePreflight(stdout, out, po.Fix)
	}
	if err != nil {
		return sc.failed(fmt.Errorf("write the report: %w", err))
	}
	if out.Result == preflight.Fail {
		return exitFailed
	}
	return exitOK
}

// writePreflight prints what --fix changed, the checks, and a summary
// line.
func writePreflight(w io.Writer, out preflightOutput, fixed bool) error {
	p := &printer{w: w}
	switch {
	case fixed && len(out.Fixed) == 0:
		p.print("FIXED: nothing to change, MSiSCSI runs and starts automatically\n")
		p.n++
	case fixed:
		p.section("FIXED", len(out.Fixed), "CHANGE")
		for _, c := range out.Fixed {
			p.row(c)
		}
	}
	findingsSection(p, out.Findings)
	p.flush()
	counts := map[preflight.Result]int{}
	for _, f := range out.Findings {
		counts[f.Result]++
	}
	verdict := "READY"
	switch out.Result {
	case preflight.Warn:
		verdict = "READY, with warnings"
	case preflight.Fail:
		verdict = "NOT READY: fix what fails, then run preflight again (docs/troubleshooting.md#preflight)"
	}
	p.print(fmt.Sprintf("\n%d pass, %d warn, %d fail, %d info: %s\n", counts[preflight.Pass], counts[preflight.Warn],
		counts[preflight.Fail], counts[preflight.Info], verdict))
	return p.err
}
