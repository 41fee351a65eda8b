package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/hostmetrics"
	csiplugin "github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sim"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// stockTakeReport is one round of the orphan sweep's stock-take
// (plugin.TakeStock, what a sweep round and diagnose run) on a node with
// Volumes staged volumes of each backend, the host calls it made, read
// from the plugin's /metrics registry (csi_windows_node_host_calls_total),
// and its wall time with WMILatency before every WMI-backed simulated
// call and Win32Latency before every Win32-backed one (sim.Config).
type stockTakeReport struct {
	Volumes      int            `json:"volumesPerBackend"`
	WMILatency   string         `json:"wmiLatency"`
	Win32Latency string         `json:"win32Latency"`
	Calls        map[string]int `json:"calls"`
	WMIBacked    int            `json:"wmiBackedCalls"`
	Win32Backed  int            `json:"win32BackedCalls"`
	RoundMs      float64        `json:"roundMs"`
	SetupMs      float64        `json:"setupMs"`
	Incomplete   []string       `json:"incomplete,omitempty"`
}

// stockTakeGoal is issue 23's goal for a round with 500 volumes of each
// backend and 50 ms per WMI-backed call.
const stockTakeGoalMs = 2000

// measureStockTake stages n volumes of each backend on a fresh simulated
// host (without latency: the staging is not measured), then reopens the
// host with the latencies and runs one stock-take in the plugin itself,
// wired by plugin.New as the binary wires it.
func measureStockTake(ctx context.Context, c *config, dir string, n int) (*stockTakeReport, error) {
	kubelet := filepath.Join(dir, "kubelet")
	var vols []volume
	s, err := sim.New(sim.Config{Dir: filepath.Join(dir, "sim")})
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"disk", "smb", "iscsi"} {
		b := backends[name]
		set := volumeSet(b, kubelet, "st-"+name, n, 10)
		if name == "disk" {
			b.setup = setupDisks
		}
		if err := b.setup(s, set); err != nil {
			_ = s.Close() // the setup error is the one to report
			return nil, fmt.Errorf("set up the %s volumes: %w", name, err)
		}
		vols = append(vols, set...)
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	for _, v := range vols {
		if err := os.MkdirAll(v.staging, 0o750); err != nil {
			return nil, err
		}
	}
	open := func(cfg sim.Config) (*csiplugin.Plugin, *sim.Sim, error) {
		cfg.Dir = filepath.Join(dir, "sim")
		s, err := sim.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		p, err := csiplugin.New(csiplugin.Options{DriverName: driverName, NodeID: "bench", KubeletDir: kubelet,
			PathStyle: winpath.POSIX, StateDir: filepath.Join(dir, "state")}, csiplugin.Host{Host: s.Host()})
		if err != nil {
			_ = s.Close() // the wiring error is the one to report
			return nil, nil, err
		}
		return p, s, nil
	}

	start := time.Now()
	p, s, err := open(sim.Config{})
	if err != nil {
		return nil, err
	}
	_, _, err = run(ctx, len(vols), c.Concurrency, func(ctx context.Context, i int) error {
		_, err := p.Node().NodeStageVolume(ctx, vols[i].stage())
		return err
	})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("stage %d volumes: %w", len(vols), err)
	}
	setup := time.Since(start)

	win32 := c.StockWin32Latency
	p, s, err = open(sim.Config{Latency: c.StockLatency, Win32Latency: &win32})
	if err != nil {
		return nil, err
	}
	defer s.Close() // read-only use: nothing to flush
	before, err := hostCalls(p)
	if err != nil {
		return nil, err
	}
	start = time.Now()
	rep, err := p.TakeStock(ctx)
	round := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("take stock: %w", err)
	}
	after, err := hostCalls(p)
	if err != nil {
		return nil, err
	}
	calls, _, _ := hostUsage{Calls: after}.since(hostUsage{Calls: before})
	out := &stockTakeReport{Volumes: n, WMILatency: c.StockLatency.String(), Win32Latency: win32.String(), Calls: calls,
		WMIBacked: wmiBacked(calls), RoundMs: ms(round), SetupMs: ms(setup), Incomplete: rep.Incomplete}
	for op, k := range calls {
		if win32Ops[op] {
			out.Win32Backed += k
		}
	}
	if len(rep.Volumes) != len(vols) {
		return nil, fmt.Errorf("the stock-take reports %d volumes, %d were staged", len(rep.Volumes), len(vols))
	}
	return out, nil
}

// hostCalls reads csi_windows_node_host_calls_total from the plugin's
// registry (what /metrics serves), by "area.operation".
func hostCalls(p *csiplugin.Plugin) (map[string]int, error) {
	mfs, err := p.Metrics.GetRegistry().Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "csi_windows_node_host_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var area, op string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case hostmetrics.LabelArea:
					area = l.GetValue()
				case hostmetrics.LabelOperation:
					op = l.GetValue()
				}
			}
			out[area+"."+op] += int(m.GetCounter().GetValue())
		}
	}
	return out, nil
}
