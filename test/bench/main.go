package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// config holds the flags.
type config struct {
	Bin          string        `json:"-"`
	Iterations   int           `json:"iterations"`
	Floor        int           `json:"floorCalls"`
	Cycles       int           `json:"cycles"`
	Concurrency  int           `json:"concurrency"`
	Latency      time.Duration `json:"-"`
	LatencyText  string        `json:"latency"`
	ScaleLatency time.Duration `json:"-"`
	ScaleText    string        `json:"scaleLatency"`
	Scale        []scaleGroup  `json:"scale"`
	ScaleRuns    int           `json:"scaleRuns"`
	RSSVolumes   int           `json:"rssVolumes"`
	// StockVolumes, StockLatency and StockWin32Latency shape the
	// stock-take phase (stocktake.go).
	StockVolumes      int           `json:"stockTakeVolumesPerBackend"`
	StockLatency      time.Duration `json:"-"`
	StockWin32Latency time.Duration `json:"-"`
	Short             bool          `json:"short"`
	Backends          []string      `json:"backends"`
	Phases            []string      `json:"phases"`
	Verbosity         int           `json:"verbosity"`
	JSON              string        `json:"-"`
	Work              string        `json:"-"`
	Keep              bool          `json:"-"`
	Pprof             string        `json:"-"`
	// ServeFloor, when set, makes this process the bare floor server
	// (floor.go) on that socket instead of a bench.
	ServeFloor string `json:"-"`
}

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	c := &config{}
	var backendsFlag, phasesFlag string
	fs.StringVar(&c.Bin, "bin", "", "plugin binary to run; empty builds cmd/csi-windows-node")
	fs.IntVar(&c.Iterations, "iterations", 0, "volumes per backend for the per-RPC latencies and for throughput (default 200, -short 20)")
	fs.IntVar(&c.Concurrency, "concurrency", 8, "concurrent clients in the throughput pass and while staging the RSS volumes")
	fs.DurationVar(&c.Latency, "latency", 0, "latency injected before every simulated host call in the per-RPC passes (--sim-latency)")
	fs.DurationVar(&c.ScaleLatency, "scale-latency", 50*time.Millisecond, "latency per host call in the scaling runs")
	fs.IntVar(&c.ScaleRuns, "scale-runs", 0, "scaling runs on fresh hosts, of which the median counts (default 3, -short 1)")
	fs.BoolVar(&c.Short, "short", false, "quick smoke mode: few iterations, N up to 10, 50 volumes for RSS")
	fs.StringVar(&backendsFlag, "backends", "disk,smb,iscsi", "backends to measure (comma-separated: disk, smb, iscsi)")
	fs.StringVar(&phasesFlag, "phases", "rpc,scale,memory,stocktake", "what to measure (comma-separated: rpc for the floor, RPC latencies and host calls per backend; scale; memory; stocktake, one orphan-sweep stock-take)")
	fs.IntVar(&c.StockVolumes, "stocktake-volumes", 0, "staged volumes of each backend in the stock-take phase (default 500, -short 50)")
	fs.DurationVar(&c.StockLatency, "stocktake-latency", 50*time.Millisecond, "latency before every WMI-backed simulated call in the stock-take phase")
	fs.DurationVar(&c.StockWin32Latency, "stocktake-win32-latency", 0, "latency before every Win32-backed simulated call (file checks, mount points, SMB checks) in the stock-take phase")
	fs.IntVar(&c.Verbosity, "v", 2, "plugin log verbosity (--v), as deployed")
	fs.StringVar(&c.JSON, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.Work, "work", "", "work directory (default: a new temporary directory)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work directory (plugin logs, sim state)")
	fs.StringVar(&c.Pprof, "pprof", "", "write CPU profiles of the plugin (floor loop, publish/unpublish loop) per backend into this directory")
	fs.StringVar(&c.ServeFloor, "serve-floor", "", "internal: serve the bare grpc-go NodeGetCapabilities floor on this unix socket (the bench runs itself so)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, b := range strings.Split(backendsFlag, ",") {
		b = strings.TrimSpace(b)
		if _, ok := backends[b]; !ok {
			return nil, fmt.Errorf("-backends: unknown backend %q (want disk, smb, iscsi)", b)
		}
		c.Backends = append(c.Backends, b)
	}
	for _, ph := range strings.Split(phasesFlag, ",") {
		ph = strings.TrimSpace(ph)
		if ph != "rpc" && ph != "scale" && ph != "memory" && ph != "stocktake" {
			return nil, fmt.Errorf("-phases: unknown phase %q (want rpc, scale, memory, stocktake)", ph)
		}
		c.Phases = append(c.Phases, ph)
	}
	if c.StockVolumes == 0 {
		c.StockVolumes = 500
		if c.Short {
			c.StockVolumes = 50
		}
	}
	if c.Short {
		c.Floor, c.Cycles, c.RSSVolumes = 200, 50, 50
		c.Scale = scaleGroups(true)
		if c.Iterations == 0 {
			c.Iterations = 20
		}
		if c.ScaleRuns == 0 {
			c.ScaleRuns = 1
		}
	} else {
		c.Floor, c.Cycles, c.RSSVolumes = 2000, 500, 500
		c.Scale = scaleGroups(false)
		if c.Iterations == 0 {
			c.Iterations = 200
		}
		if c.ScaleRuns == 0 {
			c.ScaleRuns = 3
		}
	}
	if c.Iterations < 1 || c.Concurrency < 1 || c.ScaleRuns < 1 || c.Latency < 0 || c.ScaleLatency < 0 {
		return nil, errors.New("-iterations, -concurrency and -scale-runs must be positive, latencies not negative")
	}
	c.LatencyText, c.ScaleText = c.Latency.String(), c.ScaleLatency.String()
	return c, nil
}

func mainErr() error {
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.ServeFloor != "" {
		return serveFloor(c.ServeFloor)
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the bench runs the plugin on the simulated host, which runs on Linux only (this is %s)", runtime.GOOS)
	}
	ctx := context.Background()
	if c.Work == "" {
		if c.Work, err = os.MkdirTemp("", "csi-bench-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(c.Work, 0o750); err != nil {
		return err
	}
	if !c.Keep {
		defer os.RemoveAll(c.Work)
	}
	if c.Bin == "" {
		fmt.Fprintln(os.Stderr, "bench: building cmd/csi-windows-node")
		if c.Bin, err = buildPlugin(ctx, c.Work); err != nil {
			return err
		}
	}
	rep := &report{Command: "go run ./test/bench " + strings.Join(os.Args[1:], " "), Machine: machine(), Config: *c,
		Started: time.Now().UTC().Format(time.RFC3339)}
	dw, err := durableWrite(c.Work, 50)
	if err != nil {
		return fmt.Errorf("durable write probe: %w", err)
	}
	rep.Machine.DurableWriteMs = ms(dw)
	if err := measureAll(ctx, c, rep); err != nil {
		if c.Keep {
			err = fmt.Errorf("%w (work directory kept: %s)", err, c.Work)
		}
		return err
	}
	rep.Machine.LoadEnd = loadAverage()
	rep.evaluate()
	rep.print(os.Stdout)
	if c.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.JSON, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if c.Keep {
		fmt.Fprintln(os.Stderr, "bench: work directory kept:", c.Work)
	}
	return nil
}

func measureAll(ctx context.Context, c *config, rep *report) error {
	if contains(c.Phases, "rpc") {
		if err := measureRPCs(ctx, c, rep); err != nil {
			return err
		}
	}
	if contains(c.Phases, "scale") {
		if err := measureScale(ctx, c, rep); err != nil {
			return err
		}
	}
	if contains(c.Phases, "stocktake") {
		fmt.Fprintf(os.Stderr, "bench: stock-take with %d volumes of each backend\n", c.StockVolumes)
		st, err := measureStockTake(ctx, c, filepath.Join(c.Work, "stocktake"), c.StockVolumes)
		if err != nil {
			return fmt.Errorf("stock-take: %w", err)
		}
		rep.StockTake = st
	}
	if contains(c.Phases, "memory") {
		fmt.Fprintln(os.Stderr, "bench: memory")
		mem, err := measureMemory(ctx, c, filepath.Join(c.Work, "memory"), rep)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		rep.Memory = mem
	}
	return nil
}

func measureRPCs(ctx context.Context, c *config, rep *report) error {
	bare, err := startBareFloor(ctx, filepath.Join(c.Work, "floor"))
	if err != nil {
		return fmt.Errorf("bare floor: %w", err)
	}
	defer bare.stop()
	for _, name := range c.Backends {
		fmt.Fprintf(os.Stderr, "bench: %s backend\n", name)
		br, err := measureBackend(ctx, c, backends[name], filepath.Join(c.Work, name), bare, rep)
		if err != nil {
			return fmt.Errorf("%s backend: %w", name, err)
		}
		rep.Backends = append(rep.Backends, br)
	}
	return nil
}

// scaleGroup is one scaling measurement: sets of volumes of one backend,
// each set staged at once and then unstaged at once, on one plugin
// process; ratios are to the group's first set (one volume).
type scaleGroup struct {
	Name    string     `json:"name"`
	Backend string     `json:"backend"`
	Sets    []scaleSet `json:"sets"`
}

// scaleSet is one set of a scaling group.
type scaleSet struct {
	Volumes int `json:"volumes"`
	// Shares spreads an SMB set over that many shares of its own; an
	// iSCSI set is always the LUNs of one target of its own.
	Shares int `json:"shares,omitempty"`
}

// scaleGroups returns the scaling groups: disks, SMB volumes spread over
// ten shares, SMB volumes on one share, and the LUNs of one iSCSI target,
// each from one volume up (-short: smaller sets).
func scaleGroups(short bool) []scaleGroup {
	if short {
		return []scaleGroup{
			{Name: "disk", Backend: "disk", Sets: []scaleSet{{Volumes: 1}, {Volumes: 10}}},
			{Name: "smb-10-shares", Backend: "smb", Sets: []scaleSet{{Volumes: 1, Shares: 1}, {Volumes: 10, Shares: 10}}},
			{Name: "smb-1-share", Backend: "smb", Sets: []scaleSet{{Volumes: 1, Shares: 1}, {Volumes: 10, Shares: 1}}},
			{Name: "iscsi-1-target", Backend: "iscsi", Sets: []scaleSet{{Volumes: 1}, {Volumes: 8}}},
		}
	}
	return []scaleGroup{
		{Name: "disk", Backend: "disk", Sets: []scaleSet{{Volumes: 1}, {Volumes: 10}, {Volumes: 100}}},
		{Name: "smb-10-shares", Backend: "smb", Sets: []scaleSet{{Volumes: 1, Shares: 1}, {Volumes: 10, Shares: 10}, {Volumes: 100, Shares: 10}}},
		{Name: "smb-1-share", Backend: "smb", Sets: []scaleSet{{Volumes: 1, Shares: 1}, {Volumes: 100, Shares: 1}}},
		{Name: "iscsi-1-target", Backend: "iscsi", Sets: []scaleSet{{Volumes: 1}, {Volumes: 32}}},
	}
}

func measureScale(ctx context.Context, c *config, rep *report) error {
	fmt.Fprintln(os.Stderr, "bench: scaling")
	for _, g := range c.Scale {
		if !contains(c.Backends, g.Backend) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: scaling %s\n", g.Name)
		rows, err := measureScaling(ctx, c, g, filepath.Join(c.Work, "scale-"+g.Name), rep)
		if err != nil {
			return fmt.Errorf("%s scaling: %w", g.Name, err)
		}
		rep.Scaling = append(rep.Scaling, rows...)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
