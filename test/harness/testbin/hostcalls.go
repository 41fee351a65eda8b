package testbin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/hostmetrics"
)

// The series of pkg/hostmetrics that ParseHostUsage reads.
const (
	hostCallsMetric    = hostmetrics.Namespace + "_" + hostmetrics.Name
	hostDurationMetric = hostmetrics.Namespace + "_" + hostmetrics.DurationName + "_sum"
)

// HostUsage is what the plugin's host-call metrics (pkg/hostmetrics) say
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

// ReadHostUsage is HostUsage for callers that must not fail the test from
// another goroutine, or while the plugin may be exiting: it returns the
// error instead.
func (p *Plugin) ReadHostUsage() (HostUsage, error) {
	if p.HTTPAddr == "" {
		return HostUsage{}, errors.New("testbin: ReadHostUsage needs a plugin started with Options.HTTP")
	}
	resp, err := http.Get("http://" + p.HTTPAddr + "/metrics")
	if err != nil {
		return HostUsage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return HostUsage{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return ParseHostUsage(resp.Body)
}
