package hostmetrics

// wrap.go, the decorator of every host method (Wrap) and the area labels,
// is written by hostgen from the interfaces of pkg/host.
//go:generate go run ../host/internal/hostgen -kind wrap -host ../host -o wrap.go

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/component-base/metrics"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Metric name parts and label names.
const (
	Namespace    = "csi_windows_node"
	Name         = "host_calls_total"
	DurationName = "host_call_duration_seconds"

	LabelArea      = "area"
	LabelOperation = "operation"
	LabelResult    = "result"
)

// ResultOK is the result label of a call that returned no error.
const ResultOK = "ok"

// results maps the host sentinels to result labels, in the order they are
// tried (a wrapped error matching several takes the first).
var results = []struct {
	err   error
	label string
}{
	{host.ErrNotFound, "notfound"},
	{host.ErrAlreadyExists, "alreadyexists"},
	{host.ErrDirNotEmpty, "dirnotempty"},
	{host.ErrInUse, "inuse"},
	{host.ErrConflict, "conflict"},
	{host.ErrCredentialConflict, "credentialconflict"},
	{host.ErrGuestLogonBlocked, "guestlogonblocked"},
	{host.ErrLogonFailure, "logonfailure"},
	{host.ErrAccessDenied, "accessdenied"},
	{host.ErrUnreachable, "unreachable"},
	{host.ErrNotReady, "notready"},
	{host.ErrReadOnly, "readonly"},
	{host.ErrOutOfRange, "outofrange"},
	{host.ErrInvalid, "invalid"},
	{host.ErrBusy, "busy"},
	{host.ErrNotImplemented, "notimplemented"},
	{context.DeadlineExceeded, "deadlineexceeded"},
	{context.Canceled, "canceled"},
}

// Result returns the result label of a call's error: "ok" for nil, the
// host sentinel's name in lower case without spaces ("notfound",
// "accessdenied", ...), "deadlineexceeded" or "canceled" for an error
// wrapping the context's, and "error" for anything else. The set is fixed,
// so the counter's cardinality is bounded.
func Result(err error) string {
	if err == nil {
		return ResultOK
	}
	for _, r := range results {
		if errors.Is(err, r.err) {
			return r.label
		}
	}
	return "error"
}

// DurationBuckets are the upper bounds of the duration histogram, in
// seconds: from a Win32 call on a local path (tens of µs, below the first
// bucket) through WMI queries (0.01 s to 0.6 s in csi-proxy's
// measurements, csi-proxy PR #360) to formats and resizes (seconds to
// minutes).
var DurationBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics holds the host-call counter and duration histogram.
type Metrics struct {
	calls     *metrics.CounterVec
	durations *metrics.HistogramVec
}

// New creates the counter and the histogram and registers them on reg (the
// metrics manager's GetRegistry()). It fails when reg already holds
// metrics of those names.
func New(reg metrics.KubeRegistry) (*Metrics, error) {
	m := &Metrics{
		calls: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      Namespace,
			Name:           Name,
			Help:           "Host calls made by the plugin, by area (disks, volumes, files, smb, iscsi), operation (method) and result (ok or the error class).",
			StabilityLevel: metrics.ALPHA,
		}, []string{LabelArea, LabelOperation, LabelResult}),
		durations: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace:      Namespace,
			Name:           DurationName,
			Help:           "Duration of the plugin's host calls in seconds, by area and operation, whatever their result.",
			Buckets:        DurationBuckets,
			StabilityLevel: metrics.ALPHA,
		}, []string{LabelArea, LabelOperation}),
	}
	for _, c := range []metrics.Registerable{m.calls, m.durations} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the host call metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observe(area, operation string, start time.Time, err error) {
	m.durations.WithLabelValues(area, operation).Observe(time.Since(start).Seconds())
	m.calls.WithLabelValues(area, operation, Result(err)).Inc()
}
