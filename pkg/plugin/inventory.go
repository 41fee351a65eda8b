package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Inventory takes stock of the node (pkg/inventory): the stage journal in
// o.StateDir, opened read-only, set against h as it is, with the backends'
// health checks wired as New wires them. It changes nothing on the host or
// in the journal, so it runs while the plugin serves (csi-windows-node
// diagnose); h must be a host the caller may read while the plugin uses
// it (the Windows host, or sim.OpenReadOnly).
//
// A state directory that does not exist is not an error: the report then
// says so in Report.Incomplete, and still shows what the host holds (after
// the state directory was lost, that is all there is to see).
func Inventory(ctx context.Context, o Options, h host.Host) (*inventory.Report, error) {
	if o.DriverName == "" || o.StateDir == "" {
		return nil, errors.New("plugin: inventory needs the driver name and the state directory")
	}
	root, err := winpath.NewRoot(o.KubeletDir, o.PathStyle)
	if err != nil {
		return nil, fmt.Errorf("kubelet directory: %w", err)
	}
	var store readStore = emptyJournal{}
	missing := false
	jr, err := journal.OpenReadOnly(o.StateDir)
	switch {
	case err == nil:
		store = jr
	case errors.Is(err, os.ErrNotExist):
		missing = true
	default:
		return nil, fmt.Errorf("read the stage journal: %w", err)
	}
	rep, err := takeStock(ctx, o, h, store, root)
	if err != nil {
		return nil, err
	}
	if !missing {
		rep.StateDir = stateDirReport(o.StateDir, jr)
	}
	if missing {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("stage journal: %s does not exist (is --state-dir right?); "+
			"no volume is recorded, and every mapping, session and portal shows as foreign", o.StateDir))
	}
	return rep, nil
}

// TakeStock takes stock of the node as Inventory does, from the plugin's
// own journal and host: for the orphan sweep, which runs in the plugin
// (pkg/sweep). It only reads, as background work (host.Background): on
// Windows its calls run on workers of their own, never on one an RPC
// waits for.
func (p *Plugin) TakeStock(ctx context.Context) (*inventory.Report, error) {
	return takeStock(host.Background(ctx), p.opts, p.host, p.journal, p.root)
}

// takeStock sets the journal store against h (pkg/inventory), with the
// backends' health checks built as New builds them, over the stock-take's
// snapshot of h (inventory.Snapshot): backends of their own, which only
// read.
func takeStock(ctx context.Context, o Options, h host.Host, store readStore, root *winpath.Root) (*inventory.Report, error) {
	return inventory.Take(ctx, inventory.Input{
		Host: h, Journal: store, Root: root, DriverName: o.DriverName,
		KeepSMBMappings: o.SMBKeepMappings, KeepISCSIPortals: o.KeepISCSIPortals,
		Checkers: func(snap host.Host) (map[string]inventory.HealthChecker, inventory.DiskLocator) {
			disks, backends := newBackends(snap, store, nil, o)
			health := make(map[string]inventory.HealthChecker, len(backends))
			for k, b := range backends {
				health[string(k)] = b
			}
			return health, disks
		},
	})
}

// readStore is what Inventory reads the journal through: the backends'
// store and the inventory's journal.
type readStore interface {
	backend.Store
	inventory.Journal
}

var _ readStore = (*journal.Journal)(nil)

// emptyJournal stands for a state directory that does not exist: no entry,
// no note, and no write.
type emptyJournal struct{}

func (emptyJournal) List(context.Context) []journal.Entry { return nil }
func (emptyJournal) Notes(context.Context, string) (map[string]string, error) {
	return map[string]string{}, nil
}
func (emptyJournal) ByResource(context.Context, string) ([]journal.Entry, error) { return nil, nil }
func (emptyJournal) ByBackend(context.Context, string) ([]journal.Entry, error)  { return nil, nil }
func (emptyJournal) Note(context.Context, string) (string, bool, error)          { return "", false, nil }
func (emptyJournal) PutNote(context.Context, string, string) error               { return journal.ErrReadOnly }
func (emptyJournal) DeleteNote(context.Context, string) error                    { return journal.ErrReadOnly }
func (emptyJournal) Refused() []journal.Refused                                  { return nil }
