package sweep

import (
	"fmt"

	"k8s.io/component-base/metrics"
)

// The sweep's metrics (docs/metrics.md).
const (
	namespace = "csi_windows_node"

	orphansName  = "orphans"
	removalsName = "orphan_removals_total"
	roundsName   = "orphan_sweeps_total"
)

type sweepMetrics struct {
	orphans  *metrics.GaugeVec
	removals *metrics.CounterVec
	rounds   *metrics.CounterVec
}

func newMetrics(reg metrics.KubeRegistry) (*sweepMetrics, error) {
	m := &sweepMetrics{
		orphans: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace:      namespace,
			Name:           orphansName,
			Help:           "Orphans the last orphan sweep round left on the node, by kind: resources this plugin made that no staged volume uses.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind"}),
		removals: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      namespace,
			Name:           removalsName,
			Help:           "Orphans the orphan sweep removed (result removed) or failed to decide about or remove (result failed), by kind.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind", "result"}),
		rounds: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      namespace,
			Name:           roundsName,
			Help:           "Orphan sweep rounds, by result: ok, incomplete (part of the node could not be read) or failed.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"result"}),
	}
	for _, c := range []metrics.Registerable{m.orphans, m.removals, m.rounds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the orphan sweep metrics: %w", err)
		}
	}
	return m, nil
}

// round records a round: the orphans it left by kind (every kind, so that
// a kind cleaned shows 0), its removals and failures, and its result.
func (m *sweepMetrics) round(r Round, err error) {
	if err != nil {
		m.rounds.WithLabelValues("failed").Inc()
		return
	}
	left := r.Left()
	for _, k := range Kinds {
		m.orphans.WithLabelValues(string(k)).Set(float64(left[k]))
	}
	for _, o := range r.Outcomes {
		if o.Result == ResultRemoved || o.Result == ResultFailed {
			m.removals.WithLabelValues(string(o.Kind), string(o.Result)).Inc()
		}
	}
	result := "ok"
	if len(r.Incomplete) > 0 {
		result = "incomplete"
	}
	m.rounds.WithLabelValues(result).Inc()
}
