package preflight

import (
	"context"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Fix makes the one change preflight makes: the iSCSI initiator service
// MSiSCSI starts automatically and runs. It changes the start type (and
// nothing else of the service's configuration) only when it is not
// automatic, and starts the service only when it does not run. It returns
// one line per change made, none when there was nothing to do.
func Fix(ctx context.Context, sys host.System) ([]string, error) {
	svc, err := sys.Service(ctx, ServiceISCSI)
	if err != nil {
		return nil, err
	}
	var changes []string
	if svc.StartType != host.StartAuto {
		if err := sys.SetServiceAutoStart(ctx, ServiceISCSI); err != nil {
			return changes, err
		}
		changes = append(changes, fmt.Sprintf("%s: start type %s -> %s", ServiceISCSI, svc.StartType, host.StartAuto))
	}
	if svc.State != host.ServiceRunning {
		if err := sys.StartService(ctx, ServiceISCSI); err != nil {
			return changes, err
		}
		changes = append(changes, fmt.Sprintf("%s: %s -> %s", ServiceISCSI, svc.State, host.ServiceRunning))
	}
	return changes, nil
}
