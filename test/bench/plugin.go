package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// buildPlugin compiles cmd/csi-windows-node into dir, without -race and
// with the flags of make build (trimpath), and returns the binary's path.
func buildPlugin(ctx context.Context, dir string) (string, error) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "csi-windows-node")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/csi-windows-node")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// plugin is one running plugin process and the client connected to it.
type plugin struct {
	name     string
	cmd      *exec.Cmd
	dir      string
	kubelet  string
	socket   string
	httpAddr string
	log      *os.File
	done     chan struct{}
	waitErr  error

	conn  *grpc.ClientConn
	node  csi.NodeClient
	ident csi.IdentityClient

	// ready is the time from starting the process to the first Probe
	// that answered ready.
	ready time.Duration
}

type startOptions struct {
	name      string
	dir       string // holds sim/, kubelet/, csi.sock and plugin.log
	latency   time.Duration
	verbosity int
	pprof     bool // --enable-pprof
}

// startPlugin starts the binary on the sim in o.dir, connects a gRPC client
// and waits until Probe answers ready, measuring how long that took.
func startPlugin(ctx context.Context, bin string, o startOptions) (*plugin, error) {
	addr, err := testbin.FreeAddr()
	if err != nil {
		return nil, err
	}
	p := &plugin{
		name:     o.name,
		dir:      o.dir,
		kubelet:  filepath.Join(o.dir, "kubelet"),
		socket:   filepath.Join(o.dir, "csi.sock"),
		httpAddr: addr,
		done:     make(chan struct{}),
	}
	if err := os.MkdirAll(p.kubelet, 0o750); err != nil {
		return nil, err
	}
	p.log, err = os.Create(filepath.Join(o.dir, "plugin.log"))
	if err != nil {
		return nil, err
	}
	args := []string{"--http-endpoint=" + addr, "--v=" + strconv.Itoa(o.verbosity)}
	if o.pprof {
		args = append(args, "--enable-pprof")
	}
	if o.latency > 0 {
		args = append(args, "--sim-latency="+o.latency.String())
	}
	// The process must outlive ctx's cancellation until stop: it gets its
	// own context and is stopped explicitly.
	p.cmd = testbin.Command(context.Background(), bin, testbin.Options{Dir: o.dir, Args: args})
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log

	start := time.Now()
	if err := p.cmd.Start(); err != nil {
		_ = p.log.Close() // the start error is the one to report
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx, 30*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w\n%s", o.name, err, p.logTail())
	}
	p.ready = time.Since(start)
	return p, nil
}

// waitReady polls the socket every 200 µs until it accepts a connection
// (gRPC's own reconnect back-off starts at one second, too coarse to time
// start-up), then calls Probe until it answers ready.
func (p *plugin) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := p.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("socket %s not ready after %s", p.socket, timeout)
		}
		c, err := net.DialTimeout("unix", p.socket, time.Second)
		if err == nil {
			_ = c.Close() // only the connect mattered
			break
		}
		time.Sleep(200 * time.Microsecond)
	}
	conn, err := grpc.NewClient("unix://"+p.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	p.conn, p.node, p.ident = conn, csi.NewNodeClient(conn), csi.NewIdentityClient(conn)
	for {
		if err := p.exited(); err != nil {
			return err
		}
		pctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err := p.ident.Probe(pctx, &csi.ProbeRequest{}, grpc.WaitForReady(true))
		cancel()
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		if resp.GetReady().GetValue() {
			return nil
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func (p *plugin) exited() error {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return errors.New("plugin exited with status 0")
		}
		return fmt.Errorf("plugin exited: %w", p.waitErr)
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to ten seconds, then kills.
func (p *plugin) stop() {
	if p.conn != nil {
		_ = p.conn.Close() // the process goes away next
	}
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM) // it may have exited in between
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill() // it ignored SIGTERM
			<-p.done
		}
	}
	_ = p.log.Close() // read-only from here on
}

func (p *plugin) logTail() string {
	b, err := os.ReadFile(p.log.Name())
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "plugin log (tail):\n" + string(b)
}

// memory is the resident set of the plugin process, in KiB.
type memory struct {
	HWMKiB int64 `json:"vmHWMKiB"` // peak resident set
	RSSKiB int64 `json:"vmRSSKiB"` // resident set now
}

// memory reads VmHWM and VmRSS from /proc/<pid>/status.
func (p *plugin) memory() (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmHWM":
			dst = &m.HWMKiB
		case "VmRSS":
			dst = &m.RSSKiB
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc status %s: %q: %w", k, v, err)
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return memory{}, err
	}
	if m.HWMKiB == 0 || m.RSSKiB == 0 {
		return memory{}, errors.New("VmHWM or VmRSS missing from /proc status")
	}
	return m, nil
}

// hostUsage is what the plugin's host-call metrics say at one moment.
type hostUsage testbin.HostUsage

// hostUsage reads the host-call metrics from /metrics.
func (p *plugin) hostUsage(ctx context.Context) (hostUsage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.httpAddr+"/metrics", nil)
	if err != nil {
		return hostUsage{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return hostUsage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return hostUsage{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	u, err := testbin.ParseHostUsage(resp.Body)
	return hostUsage(u), err
}

// since returns the calls made and the milliseconds spent in host calls
// between before and u, leaving out ops without calls.
func (u hostUsage) since(before hostUsage) (calls map[string]int, total int, ms float64) {
	calls = map[string]int{}
	for k, v := range u.Calls {
		if d := v - before.Calls[k]; d != 0 {
			calls[k] = d
			total += d
		}
	}
	for k, v := range u.Seconds {
		ms += (v - before.Seconds[k]) * 1000
	}
	return calls, total, ms
}

// profile fetches a CPU profile of d from the plugin into file while load
// runs in a loop.
func (p *plugin) profile(ctx context.Context, file string, d time.Duration, load func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := load(ctx); err != nil && ctx.Err() == nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := p.fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), file); err != nil {
		return err
	}
	cancel()
	return <-errc
}

// fetch GETs path from the plugin's HTTP endpoint into file.
func (p *plugin) fetch(ctx context.Context, path, file string) error {
	url := "http://" + p.httpAddr + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close() // the copy error is the one to report
		return err
	}
	return f.Close()
}
