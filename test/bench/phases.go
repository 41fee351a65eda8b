package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/internal/durable"
)

// rpcTimeout bounds every RPC, like kubelet's operation timeouts.
const rpcTimeout = 2 * time.Minute

// rpc is one kind of call on a volume.
type rpc struct {
	name string
	call func(ctx context.Context, p *plugin, v volume) error
}

func stageRPC() rpc {
	return rpc{"NodeStageVolume", func(ctx context.Context, p *plugin, v volume) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		_, err := p.node.NodeStageVolume(ctx, v.stage())
		return err
	}}
}

func publishRPC() rpc {
	return rpc{"NodePublishVolume", func(ctx context.Context, p *plugin, v volume) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		_, err := p.node.NodePublishVolume(ctx, v.publish())
		return err
	}}
}

func statsRPC() rpc {
	return rpc{"NodeGetVolumeStats", func(ctx context.Context, p *plugin, v volume) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		resp, err := p.node.NodeGetVolumeStats(ctx, v.stats())
		if err == nil && len(resp.GetUsage()) == 0 {
			err = fmt.Errorf("volume %s: stats without usage", v.id)
		}
		return err
	}}
}

func expandRPC(b backend) rpc {
	return rpc{"NodeExpandVolume", func(ctx context.Context, p *plugin, v volume) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		resp, err := p.node.NodeExpandVolume(ctx, v.expand(b.expandTo))
		if err == nil && b.grows && resp.GetCapacityBytes() <= diskSize {
			err = fmt.Errorf("volume %s: expansion did not grow it (capacity %d)", v.id, resp.GetCapacityBytes())
		}
		return err
	}}
}

func unpublishRPC() rpc {
	return rpc{"NodeUnpublishVolume", func(ctx context.Context, p *plugin, v volume) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		_, err := p.node.NodeUnpublishVolume(ctx, v.unpublish())
		return err
	}}
}

func unstageRPC() rpc {
	return rpc{"NodeUnstageVolume", func(ctx context.Context, p *plugin, v volume) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		_, err := p.node.NodeUnstageVolume(ctx, v.unstage())
		return err
	}}
}

// step is one counted RPC.
type step struct {
	label string
	r     rpc
	v     volume
}

// lifecycle is the order in which kubelet calls the RPCs on a volume.
func lifecycle(b backend) []rpc {
	rpcs := []rpc{stageRPC(), publishRPC(), statsRPC()}
	if b.expand {
		rpcs = append(rpcs, expandRPC(b))
	}
	return append(rpcs, unpublishRPC(), unstageRPC())
}

func capabilities(ctx context.Context, p *plugin) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := p.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	return err
}

// measureBackend runs one plugin process for a backend and measures the
// floor (beside the bare server's), the publish/unpublish cycle, the host calls per RPC, the per-RPC
// latencies one at a time and the throughput with c.Concurrency clients.
func measureBackend(ctx context.Context, c *config, b backend, dir string, bare *bareFloor, rep *report) (backendReport, error) {
	br := backendReport{Backend: b.name, ExpandGrows: b.expand && b.grows}
	kubelet := filepath.Join(dir, "kubelet")
	counted := volumeSet(b, kubelet, "cnt", 2, 1)
	seq := volumeSet(b, kubelet, "seq", c.Iterations, 1)
	conc := volumeSet(b, kubelet, "conc", c.Iterations, 1)
	cyc := volumeSet(b, kubelet, "cyc", 1, 1)
	all := append(append(append(append([]volume{}, counted...), seq...), conc...), cyc...)
	if err := prepare(b, dir, all); err != nil {
		return br, err
	}
	p, err := startPlugin(ctx, c.Bin, startOptions{name: b.name, dir: dir, latency: c.Latency, verbosity: c.Verbosity, pprof: c.Pprof != ""})
	if err != nil {
		return br, err
	}
	defer p.stop()
	rep.Ready = append(rep.Ready, readySample{Run: b.name, Ms: ms(p.ready)})
	fail := func(what string, err error) (backendReport, error) {
		return br, fmt.Errorf("%s: %w\n%s", what, err, p.logTail())
	}

	// The floor, beside the bare server's (floor.go).
	samples, bareSamples, err := floors(ctx, c.Floor, p, bare)
	if err != nil {
		return fail("floor", err)
	}
	br.Floor, br.BareFloor = summarise(samples), summarise(bareSamples)

	// The publish+unpublish cycle on one staged volume.
	v := cyc[0]
	if err := stageRPC().call(ctx, p, v); err != nil {
		return fail("stage for the cycle", err)
	}
	before, err := p.hostUsage(ctx)
	if err != nil {
		return fail("read /metrics", err)
	}
	samples, _, err = run(ctx, c.Cycles, 1, func(ctx context.Context, _ int) error {
		if err := publishRPC().call(ctx, p, v); err != nil {
			return err
		}
		return unpublishRPC().call(ctx, p, v)
	})
	if err != nil {
		return fail("publish/unpublish cycle", err)
	}
	after, err := p.hostUsage(ctx)
	if err != nil {
		return fail("read /metrics", err)
	}
	_, _, hostMs := after.since(before)
	br.Cycle = summarise(samples)
	br.CycleHostMs = hostMs / float64(c.Cycles)
	br.CycleRatioP50 = br.Cycle.P50Ms / br.Floor.P50Ms
	br.CycleRatioP99 = br.Cycle.P99Ms / br.Floor.P99Ms
	br.CycleNetRatioP50 = (br.Cycle.P50Ms - br.CycleHostMs) / br.Floor.P50Ms
	if err := unstageRPC().call(ctx, p, v); err != nil {
		return fail("unstage after the cycle", err)
	}

	// Host calls per RPC, from the plugin's counter.
	first, second := counted[0], counted[1]
	steps := []step{
		{"NodeStageVolume (first volume)", stageRPC(), first},
		{"NodeStageVolume", stageRPC(), second},
		{"NodeStageVolume (repeat)", stageRPC(), second},
		{"NodePublishVolume", publishRPC(), second},
		{"NodePublishVolume (repeat)", publishRPC(), second},
		{"NodeGetVolumeStats", statsRPC(), second},
	}
	if b.expand {
		steps = append(steps, step{"NodeExpandVolume", expandRPC(b), second})
	}
	steps = append(steps,
		step{"NodeUnpublishVolume", unpublishRPC(), second},
		step{"NodeUnstageVolume", unstageRPC(), second},
		step{"NodeUnstageVolume (last volume)", unstageRPC(), first},
	)
	for _, s := range steps {
		before, err := p.hostUsage(ctx)
		if err != nil {
			return fail("read /metrics", err)
		}
		if err := s.r.call(ctx, p, s.v); err != nil {
			return fail(s.label, err)
		}
		after, err := p.hostUsage(ctx)
		if err != nil {
			return fail("read /metrics", err)
		}
		calls, total, hostMs := after.since(before)
		br.HostCalls = append(br.HostCalls, hostCallRow{RPC: s.label, Total: total, ByOp: calls, HostMs: hostMs, WMICalls: wmiBacked(calls)})
	}

	// Per-RPC latencies one call at a time, then throughput under load.
	for _, r := range lifecycle(b) {
		before, err := p.hostUsage(ctx)
		if err != nil {
			return fail("read /metrics", err)
		}
		samples, wall, err := run(ctx, len(seq), 1, func(ctx context.Context, i int) error { return r.call(ctx, p, seq[i]) })
		if err != nil {
			return fail(r.name+" (sequential)", err)
		}
		after, err := p.hostUsage(ctx)
		if err != nil {
			return fail("read /metrics", err)
		}
		_, _, hostMs := after.since(before)
		op := opReport{RPC: r.name, Sequential: summarise(samples), SequentialPerSec: float64(len(seq)) / wall.Seconds(),
			HostMsMean: hostMs / float64(len(seq))}
		samples, wall, err = run(ctx, len(conc), c.Concurrency, func(ctx context.Context, i int) error { return r.call(ctx, p, conc[i]) })
		if err != nil {
			return fail(r.name+" (concurrent)", err)
		}
		op.Concurrent, op.ConcurrentPerSec = summarise(samples), float64(len(conc))/wall.Seconds()
		br.RPCs = append(br.RPCs, op)
	}
	if c.Pprof != "" {
		if err := profileBackend(ctx, c, b, p, v); err != nil {
			return fail("profile", err)
		}
	}
	return br, nil
}

// profileBackend writes CPU profiles of the floor loop and of the
// publish/unpublish loop into c.Pprof.
func profileBackend(ctx context.Context, c *config, b backend, p *plugin, v volume) error {
	if err := os.MkdirAll(c.Pprof, 0o750); err != nil {
		return err
	}
	const d = 5 * time.Second
	if err := p.profile(ctx, filepath.Join(c.Pprof, b.name+"-floor.pprof"), d, func(ctx context.Context) error {
		return capabilities(ctx, p)
	}); err != nil {
		return err
	}
	if err := stageRPC().call(ctx, p, v); err != nil {
		return err
	}
	return p.profile(ctx, filepath.Join(c.Pprof, b.name+"-cycle.pprof"), d, func(ctx context.Context) error {
		if err := publishRPC().call(ctx, p, v); err != nil {
			return err
		}
		return unpublishRPC().call(ctx, p, v)
	})
}

// transitionOps are the host calls that make and remove the resources
// volumes share: a set must make each of its shares' mappings and its
// target's session and portal once, and remove each once.
var transitionOps = []string{"smb.Map", "smb.Unmap", "iscsi.Connect", "iscsi.Disconnect", "iscsi.AddPortal", "iscsi.RemovePortal"}

// measureScaling runs a scaling group c.ScaleRuns times, each on a plugin
// process with c.ScaleLatency per host call on a fresh host, and reports
// the median wall times per set.
func measureScaling(ctx context.Context, c *config, g scaleGroup, dir string, rep *report) ([]scalingRow, error) {
	b := backends[g.Backend]
	rows := make([]scalingRow, len(g.Sets))
	for i, set := range g.Sets {
		rows[i] = scalingRow{Group: g.Name, Backend: g.Backend, Volumes: set.Volumes, Shares: set.Shares, HostLatency: c.ScaleText}
		if g.Backend == "iscsi" {
			rows[i].Targets = 1
		}
	}
	for r := range c.ScaleRuns {
		runs, err := scaleOnce(ctx, c, b, g, filepath.Join(dir, fmt.Sprintf("run-%d", r)), r == c.ScaleRuns-1, rep)
		if err != nil {
			return nil, err
		}
		for i, run := range runs {
			rows[i].StageRunsMs = append(rows[i].StageRunsMs, ms(run.stage))
			rows[i].UnstageRunsMs = append(rows[i].UnstageRunsMs, ms(run.unstage))
			rows[i].HostMsPerStage += run.stageHostMs / float64(c.ScaleRuns)
			rows[i].HostMsPerUnstage += run.unstageHostMs / float64(c.ScaleRuns)
			rows[i].Transitions = append(rows[i].Transitions, run.transitions)
		}
	}
	for i := range rows {
		rows[i].StageMs, rows[i].UnstageMs = median(rows[i].StageRunsMs), median(rows[i].UnstageRunsMs)
		rows[i].StageRatio = rows[i].StageMs / rows[0].StageMs
		rows[i].UnstageRatio = rows[i].UnstageMs / rows[0].UnstageMs
	}
	return rows, nil
}

// setRun is what one run measured of one set.
type setRun struct {
	stage, unstage             time.Duration
	stageHostMs, unstageHostMs float64        // mean time per volume inside host calls
	transitions                map[string]int // transitionOps made while the set was staged and unstaged
}

// scaleOnce is one run of a scaling group on a fresh host: each set's
// volumes are staged at once, then unstaged at once, before the next set.
// Every set has shares or a target of its own, so each starts with nothing
// mapped or logged in, and ends with nothing left.
func scaleOnce(ctx context.Context, c *config, b backend, g scaleGroup, dir string, last bool, rep *report) ([]setRun, error) {
	kubelet := filepath.Join(dir, "kubelet")
	sets := make([][]volume, len(g.Sets))
	var all []volume
	for i, set := range g.Sets {
		sets[i] = volumeSet(b, kubelet, fmt.Sprintf("n%d-s%d-", set.Volumes, set.Shares), set.Volumes, set.Shares)
		all = append(all, sets[i]...)
	}
	if err := prepare(b, dir, all); err != nil {
		return nil, err
	}
	trace := c.Pprof != "" && last
	if trace {
		if err := os.MkdirAll(c.Pprof, 0o750); err != nil {
			return nil, err
		}
	}
	name := "scale-" + g.Name
	p, err := startPlugin(ctx, c.Bin, startOptions{name: name, dir: dir, latency: c.ScaleLatency, verbosity: c.Verbosity, pprof: trace})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	rep.Ready = append(rep.Ready, readySample{Run: name, Ms: ms(p.ready)})
	if _, _, err := run(ctx, 20, 1, func(ctx context.Context, _ int) error { return capabilities(ctx, p) }); err != nil {
		return nil, err
	}
	out := make([]setRun, len(g.Sets))
	for i := range g.Sets {
		vols := sets[i]
		n := len(vols)
		var traced chan error
		if trace && i == len(g.Sets)-1 {
			// An execution trace of the largest set shows what the
			// stages wait for (go tool trace -pprof=sync), a CPU
			// profile what they spend the machine's cores on.
			traced = make(chan error, 2)
			base := filepath.Join(c.Pprof, fmt.Sprintf("%s-%d", name, n))
			go func() { traced <- p.fetch(ctx, "/debug/pprof/trace?seconds=3", base+".trace") }()
			go func() { traced <- p.fetch(ctx, "/debug/pprof/profile?seconds=3", base+"-cpu.pprof") }()
			time.Sleep(100 * time.Millisecond) // let both start first
		}
		start, err := p.hostUsage(ctx)
		if err != nil {
			return nil, err
		}
		out[i].stage, err = together(ctx, n, func(ctx context.Context, j int) error { return stageRPC().call(ctx, p, vols[j]) })
		if traced != nil {
			for range 2 {
				if terr := <-traced; terr != nil && err == nil {
					err = terr
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("stage %d volumes at once: %w\n%s", n, err, p.logTail())
		}
		staged, err := p.hostUsage(ctx)
		if err != nil {
			return nil, err
		}
		out[i].unstage, err = together(ctx, n, func(ctx context.Context, j int) error { return unstageRPC().call(ctx, p, vols[j]) })
		if err != nil {
			return nil, fmt.Errorf("unstage %d volumes at once: %w\n%s", n, err, p.logTail())
		}
		end, err := p.hostUsage(ctx)
		if err != nil {
			return nil, err
		}
		_, _, stageMs := staged.since(start)
		calls, _, unstageMs := end.since(staged)
		stageCalls, _, _ := staged.since(start)
		out[i].stageHostMs, out[i].unstageHostMs = stageMs/float64(n), unstageMs/float64(n)
		out[i].transitions = map[string]int{}
		for _, op := range transitionOps {
			if k := stageCalls[op] + calls[op]; k > 0 {
				out[i].transitions[op] = k
			}
		}
	}
	return out, nil
}

// measureMemory reads the plugin's resident set idle and after staging
// c.RSSVolumes disk volumes.
func measureMemory(ctx context.Context, c *config, dir string, rep *report) (*memoryReport, error) {
	b := backends["disk"]
	vols := volumeSet(b, filepath.Join(dir, "kubelet"), "rss", c.RSSVolumes, 0)
	s := b
	s.setup = setupDisks
	if err := prepare(s, dir, vols); err != nil {
		return nil, err
	}
	p, err := startPlugin(ctx, c.Bin, startOptions{name: "memory", dir: dir, verbosity: c.Verbosity})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	rep.Ready = append(rep.Ready, readySample{Run: fmt.Sprintf("memory (%d disks)", len(vols)), Ms: ms(p.ready)})
	if _, _, err := run(ctx, 20, 1, func(ctx context.Context, _ int) error { return capabilities(ctx, p) }); err != nil {
		return nil, err
	}
	m := &memoryReport{Volumes: len(vols)}
	if m.Idle, err = p.memory(); err != nil {
		return nil, err
	}
	_, wall, err := run(ctx, len(vols), c.Concurrency, func(ctx context.Context, i int) error { return stageRPC().call(ctx, p, vols[i]) })
	if err != nil {
		return nil, fmt.Errorf("stage %d volumes: %w\n%s", len(vols), err, p.logTail())
	}
	m.StageWallMs = ms(wall)
	if m.Staged, err = p.memory(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(dir, "sim", "state.json")); err == nil {
		m.SimStateBytes = fi.Size()
	}
	return m, nil
}

// durableWrite measures the p50 of n small durable writes in dir: write a
// temporary file, fsync it, rename it over the old one, fsync dir.
func durableWrite(dir string, n int) (time.Duration, error) {
	samples := make([]time.Duration, n)
	data := []byte(`{"volumeID":"probe","staged":true}`)
	for i := range samples {
		start := time.Now()
		tmp := filepath.Join(dir, "probe.tmp")
		f, err := os.Create(tmp)
		if err != nil {
			return 0, err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, "probe.json"))
		}
		if err == nil {
			err = durable.SyncDir(dir)
		}
		if err != nil {
			return 0, err
		}
		samples[i] = time.Since(start)
	}
	slices.Sort(samples)
	return percentile(samples, 50), os.Remove(filepath.Join(dir, "probe.json"))
}
