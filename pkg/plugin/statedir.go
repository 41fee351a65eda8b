package plugin

import (
	"context"
	"fmt"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// refusedFilesName is the gauge of the journal files Open refused
// (docs/metrics.md).
const refusedFilesName = "journal_refused_files"

// registerRefused registers the gauge of the journal files refused at
// start, set once: the journal is read only then.
func registerRefused(reg metrics.KubeRegistry, jr *journal.Journal) error {
	g := metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      "csi_windows_node",
		Name:           refusedFilesName,
		Help:           "Files in the state directory the plugin refused at start because it did not write them (owned by neither SYSTEM, Administrators nor the plugin, without an owner, hard-linked, or denying the plugin their owner): never loaded or acted on.",
		StabilityLevel: metrics.ALPHA,
	})
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("register the journal metrics: %w", err)
	}
	g.Set(float64(len(jr.Refused())))
	return nil
}

// logStateDir logs, at start, the owner of the plugin's own files and every
// journal file refused.
func logStateDir(ctx context.Context, jr *journal.Journal) {
	logger := klog.FromContext(ctx)
	if owner := jr.TokenOwner(); owner != "" {
		logger.V(2).Info("Journal files are owned by the plugin's token owner", "tokenOwner", owner)
	}
	for _, r := range jr.Refused() {
		logger.Error(nil, "Refusing a journal file the plugin did not write: it is never acted on", "path", r.Path, "owner", r.Owner, "reason", r.Reason)
	}
}

// stateDirReport is the state directory as diagnose shows it.
func stateDirReport(dir string, jr *journal.Journal) *inventory.StateDir {
	sd := &inventory.StateDir{Path: dir, Refused: []inventory.RefusedFile{}}
	if jr == nil {
		return sd
	}
	acl, err := jr.Security()
	if err != nil {
		sd.ACL = "unreadable: " + err.Error()
	} else {
		sd.ACL = acl
	}
	sd.TokenOwner = jr.TokenOwner()
	for _, r := range jr.Refused() {
		sd.Refused = append(sd.Refused, inventory.RefusedFile{Path: r.Path, Owner: r.Owner, Reason: r.Reason})
	}
	return sd
}
