package plugin

import (
	"context"
	"errors"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
)

// preflightTimeout bounds the checks the plugin runs at start
// (Win32_OptionalFeature can take seconds).
const preflightTimeout = 2 * time.Minute

// PreflightConfig is the preflight checks' configuration for a plugin: its
// kubelet and state directories, and which backends it is expected to
// serve. Any volume_context may ask for any backend, so a backend counts
// as expected when it is --default-backend or the stage journal holds a
// volume of it: a stopped MSiSCSI fails the check on a node that has, or
// by default gets, iSCSI volumes, and warns on the others (every iSCSI
// stage would fail there too, but nothing says one will come).
func PreflightConfig(o Options, entries []journal.Entry) preflight.Config {
	c := preflight.Config{KubeletDir: o.KubeletDir, StateDir: o.StateDir}
	kinds := map[contract.Kind]bool{o.Contract.DefaultKind: true}
	for _, e := range entries {
		kinds[contract.Kind(e.Backend)] = true
	}
	c.SMB, c.ISCSI = kinds[contract.KindSMB], kinds[contract.KindISCSI]
	return c
}

// Preflight runs the checks read-only for a plugin's configuration, its
// journal read without changing it: what diagnose reports.
func Preflight(ctx context.Context, o Options, h host.Host, sys host.System) (preflight.Report, error) {
	var entries []journal.Entry
	jr, err := journal.OpenReadOnly(o.StateDir)
	switch {
	case err == nil:
		entries = jr.List(ctx)
	case !errors.Is(err, os.ErrNotExist):
		return preflight.Report{}, err
	}
	return preflight.Run(ctx, PreflightConfig(o, entries), h, sys), nil
}

// runPreflight runs the checks once, read-only, logs each warning and
// failure once (passes at verbosity 2) and sets the gauge.
func (p *Plugin) runPreflight(ctx context.Context) {
	if p.system == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	rep := preflight.Run(ctx, PreflightConfig(p.opts, p.journal.List(ctx)), p.host, p.system)
	if ctx.Err() != nil {
		return // cut by the shutdown: the findings say nothing about the node
	}
	p.preflight.Set(rep)
	logger := klog.FromContext(ctx)
	for _, f := range rep.Findings {
		kv := []any{"check", f.Check, "result", string(f.Result), "detail", f.Detail}
		if f.Fix != "" {
			kv = append(kv, "fix", f.Fix)
		}
		switch f.Result {
		case preflight.Fail, preflight.Warn:
			logger.Info("Preflight check", kv...)
		default:
			logger.V(2).Info("Preflight check", kv...)
		}
	}
}
