package plugin

import (
	"context"
	"fmt"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
)

// The credential gauges (docs/metrics.md): counted from the stage journal
// when scraped, so that they say what the journal records now.
const (
	credentialNamespace = "csi_windows_node"
	driftName           = "credential_drift"
	mismatchName        = "credential_mismatch"
)

// registerCredentialGauges registers csi_windows_node_credential_drift and
// csi_windows_node_credential_mismatch, by backend, counted from store.
func registerCredentialGauges(reg metrics.KubeRegistry, store backend.Store) error {
	counts := map[string]func(context.Context, backend.Store) (int, int, error){
		"smb": smb.CredentialCounts, "iscsi": iscsi.CredentialCounts,
	}
	for name, count := range counts {
		read := func(drift bool) func() float64 {
			return func() float64 {
				d, o, err := count(context.Background(), store)
				if err != nil {
					klog.Background().Error(err, "Cannot count the volumes whose credentials differ", "backend", name)
					return 0
				}
				if drift {
					return float64(d)
				}
				return float64(o)
			}
		}
		gauges := []metrics.GaugeFunc{
			metrics.NewGaugeFunc(&metrics.GaugeOpts{
				Namespace: credentialNamespace,
				Name:      driftName,
				Help: "Staged volumes whose node-stage secret holds another password or CHAP secret of the same user than their share's " +
					"global mapping (or another mapping of its server by that user) or their target's sessions were made with " +
					"(a rotation not finished on every volume, or a wrong secret).",
				ConstLabels:    map[string]string{"backend": name},
				StabilityLevel: metrics.ALPHA,
			}, read(true)),
			metrics.NewGaugeFunc(&metrics.GaugeOpts{
				Namespace: credentialNamespace,
				Name:      mismatchName,
				Help: "Staged volumes that reach their share or target through a mapping or sessions made with another user's credentials " +
					"(staged before the plugin refused it, or their Secret changed since).",
				ConstLabels:    map[string]string{"backend": name},
				StabilityLevel: metrics.ALPHA,
			}, read(false)),
		}
		for _, g := range gauges {
			if err := reg.Registerer().Register(g); err != nil {
				return fmt.Errorf("register the credential gauges: %w", err)
			}
		}
	}
	return nil
}

// keyedRecordCounts count, per backend, what the journal records of
// secrets as MACs under the node's credential key.
var keyedRecordCounts = []func(context.Context, backend.Store) (int, error){smb.KeyedRecords, iscsi.KeyedRecords}

// logNewCredentialKey says, once, that the credential key the plugin just
// made (made: there was none in the state directory) is not the one the
// journal's records of secrets were made under: they no longer compare
// with what is recorded under the new key, so a volume staged on a mapping
// or sessions made before shows as drift (csi_windows_node_credential_drift)
// until the mapping or logins are made again. Nothing is said when
// there are no such records (a new node). The key is never logged.
func logNewCredentialKey(ctx context.Context, logger klog.Logger, store backend.Store, made bool, stateDir string) {
	if !made {
		return
	}
	n := 0
	for _, count := range keyedRecordCounts {
		c, err := count(ctx, store)
		if err != nil {
			logger.Error(err, "Cannot count the credential records made under the earlier credential key", "stateDir", stateDir)
			return
		}
		n += c
	}
	if n == 0 {
		return
	}
	logger.Info("Made a new credential key while the journal holds credential records made under an earlier one: "+
		"volumes staged on those SMB mappings and iSCSI sessions show as credential drift until the mappings and logins are made again",
		"stateDir", stateDir, "keyedRecords", n)
}
