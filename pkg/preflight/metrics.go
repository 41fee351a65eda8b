package preflight

import (
	"fmt"

	"k8s.io/component-base/metrics"
)

// GaugeName is the gauge's full name (docs/metrics.md).
const GaugeName = "csi_windows_node_preflight"

// Gauge is csi_windows_node_preflight{check,result}: 1 for each check's
// result in the last run, 0 for its other results, so that
// csi_windows_node_preflight{result="fail"} == 1 selects what fails.
type Gauge struct{ g *metrics.GaugeVec }

// NewGauge registers the gauge.
func NewGauge(reg metrics.KubeRegistry) (*Gauge, error) {
	g := metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           GaugeName,
		Help:           "The preflight checks the plugin ran at start: 1 for each check's result (pass, info, warn or fail), 0 for its other results.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"check", "result"})
	if err := reg.Register(g); err != nil {
		return nil, fmt.Errorf("register %s: %w", GaugeName, err)
	}
	return &Gauge{g: g}, nil
}

// Set records a report.
func (m *Gauge) Set(r Report) {
	for _, f := range r.Findings {
		for _, res := range Results {
			v := 0.0
			if res == f.Result {
				v = 1
			}
			m.g.WithLabelValues(f.Check, string(res)).Set(v)
		}
	}
}
