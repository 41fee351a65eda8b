package testbin

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host/hostmetrics"
)

// The series of pkg/host/hostmetrics that ParseHostUsage reads.
const (
	hostCallsMetric    = hostmetrics.Namespace + "_" + hostmetrics.Name
	hostDurationMetric = hostmetrics.Namespace + "_" + hostmetrics.DurationName + "_sum"
)

// HostUsage is what the plugin's host-call metrics (pkg/host/hostmetrics) say
// at one moment, keyed "area.operation" (the simulated host's op names).
type HostUsage struct {
	Calls   map[string]int     // calls, summed over results
	Seconds map[string]float64 // time spent in them
}

// ParseHostUsage reads the host-call metrics of a /metrics page, lines
// such as
//
//	csi_windows_node_host_calls_total{area="disks",operation="List",result="ok"} 3
//	csi_windows_node_host_call_duration_seconds_sum{area="disks",operation="List"} 0.0021
func ParseHostUsage(r io.Reader) (HostUsage, error) {
	u := HostUsage{Calls: map[string]int{}, Seconds: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != hostCallsMetric && name != hostDurationMetric) {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return HostUsage{}, fmt.Errorf("metrics line %q", line)
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return HostUsage{}, fmt.Errorf("metrics line %q: %w", line, err)
		}
		op := l[hostmetrics.LabelArea] + "." + l[hostmetrics.LabelOperation]
		if name == hostCallsMetric {
			u.Calls[op] += int(n)
		} else {
			u.Seconds[op] += n
		}
	}
	return u, sc.Err()
}

// HostUsage reads the host-call metrics from the plugin's /metrics
// (Options.HTTP).
func (p *Plugin) HostUsage(t testing.TB) HostUsage {
	t.Helper()
	u, err := ParseHostUsage(strings.NewReader(p.Get(t, "/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	return u
}
