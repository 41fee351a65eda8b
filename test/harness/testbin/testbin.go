// Package testbin gives the tests that run the plugin binary as a
// separate process (test/binary: start-up, sidecars, sanity, crash matrix,
// diagnose, ...; benchmarks) the binary, and starts it on the simulated
// host.
//
// make test builds the plugin once for the whole run, with and without
// -race, and passes both in (EnvBinary, EnvBinaryNoRace). Without them, as
// with go test run directly, each test process builds what it needs once.
package testbin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// build is one compilation of the plugin, shared by the tests of a process.
type build struct {
	once sync.Once
	dir  string // removed by Main
	path string
	err  error
}

// builds holds the plugin built with and without -race.
var builds [2]build

// mainRuns is set once Main runs the package's tests.
var mainRuns atomic.Bool

// The environment variables through which make test passes the plugin it
// built once for every test package of the run: an absolute path each.
const (
	EnvBinary       = "CSI_WINDOWS_NODE_TEST_BINARY"        // built with -race
	EnvBinaryNoRace = "CSI_WINDOWS_NODE_TEST_BINARY_NORACE" // built without
)

// Main runs the tests of a package that builds the plugin (Build,
// BuildNoRace), then removes the builds and returns the exit code. Such a
// package's TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
func Main(m *testing.M) int {
	mainRuns.Store(true)
	code := m.Run()
	for i := range builds {
		if dir := builds[i].dir; dir != "" {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintf(os.Stderr, "testbin: remove the plugin build: %v\n", err)
				code = max(code, 1)
			}
		}
	}
	return code
}

// ModuleRoot returns the directory holding go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the module")
	}
	return filepath.Dir(mod), nil
}

// Build returns the path of the plugin binary, built with -race when the
// test binary has it: the one passed in EnvBinary (EnvBinaryNoRace without
// -race), or else cmd/csi-windows-node compiled once per test process. The
// package's TestMain must run Main, which removes such a build.
func Build(t testing.TB) string {
	t.Helper()
	return buildWith(t, raceEnabled)
}

// BuildNoRace is Build without -race, for suites that start the binary
// hundreds of times to test crash behaviour rather than data races (the
// race detector multiplies a start's cost several times over).
func BuildNoRace(t testing.TB) string {
	t.Helper()
	return buildWith(t, false)
}

func buildWith(t testing.TB, race bool) string {
	t.Helper()
	if !mainRuns.Load() {
		t.Fatal("testbin: Build needs the package's TestMain to run testbin.Main, which removes the build")
	}
	i, env := 0, EnvBinaryNoRace
	if race {
		i, env = 1, EnvBinary
	}
	if path := os.Getenv(env); path != "" {
		return prebuilt(t, env, path)
	}
	b := &builds[i]
	b.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			b.err = err
			return
		}
		b.dir, b.err = os.MkdirTemp("", "csi-windows-node-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "csi-windows-node")
		args := []string{"build", "-o", b.path}
		if race {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/csi-windows-node")
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// prebuilt checks the binary passed in env: an absolute path (go test runs
// each package in its own directory) to an executable file.
func prebuilt(t testing.TB, env, path string) string {
	t.Helper()
	if !filepath.IsAbs(path) {
		t.Fatalf("testbin: %s=%s is not an absolute path", env, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("testbin: the plugin binary passed in %s: %v", env, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("testbin: %s=%s is not an executable file", env, path)
	}
	return path
}

// Plugin is a running plugin process.
type Plugin struct {
	Cmd      *exec.Cmd
	Socket   string
	Kubelet  string
	SimDir   string
	HTTPAddr string // host:port of --http-endpoint when Options.HTTP is set
	Log      *Log
	done     chan struct{}
	waitErr  error
}

// Log is a plugin's output (stdout and stderr), in a file the process
// writes itself. A line the plugin logged before it answered an RPC is
// there when the test has the answer: a pipe read by a goroutine of the
// test process (a writer that is not an *os.File) would lag behind, and a
// test reading it at once could miss the line.
type Log struct{ path string }

// String returns what the plugin has written so far.
func (l *Log) String() string {
	b, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Sprintf("(plugin log %s: %v)", l.path, err)
	}
	return string(b)
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Options configure Start.
type Options struct {
	Dir        string   // base directory; kubelet/, sim/ and csi.sock go below it
	DriverName string   // default sim.csi.wincsi.io
	Args       []string // extra flags
	Env        []string
	// HTTP makes Start serve --http-endpoint on a loopback port the
	// plugin picks (Plugin.HTTPAddr, Plugin.Get). Command ignores it.
	HTTP bool
	// OmitNodeID leaves out --node-id=test-node, so that the plugin finds
	// its node ID itself (the host name, or --cloud).
	OmitNodeID bool
}

// Start runs the binary on the simulated host and waits until it answers
// Probe ready. The process is killed at test cleanup if still running.
func Start(t testing.TB, bin string, o Options) *Plugin {
	t.Helper()
	p := &Plugin{
		Socket:  filepath.Join(o.Dir, "csi.sock"),
		Kubelet: filepath.Join(o.Dir, "kubelet"),
		SimDir:  filepath.Join(o.Dir, "sim"),
		Log:     &Log{path: filepath.Join(t.TempDir(), "plugin.log")},
		done:    make(chan struct{}),
	}
	if err := os.MkdirAll(p.Kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.HTTP {
		// Port 0: the plugin binds a free port and logs it when ready, so
		// no other test can take the port in between.
		o.Args = append([]string{"--http-endpoint=127.0.0.1:0"}, o.Args...)
	}
	out, err := os.OpenFile(p.Log.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.Cmd = Command(context.Background(), bin, o)
	p.Cmd.Stdout, p.Cmd.Stderr = out, out
	err = p.Cmd.Start()
	_ = out.Close() // the process has its own descriptor; only reads follow
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		p.waitErr = p.Cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.Kill() })
	if err := p.WaitReady(30 * time.Second); err != nil {
		t.Fatalf("%v\nplugin log:\n%s", err, p.Log.String())
	}
	if o.HTTP {
		addr, err := p.waitHTTPAddr(30 * time.Second)
		if err != nil {
			t.Fatalf("%v\nplugin log:\n%s", err, p.Log.String())
		}
		p.HTTPAddr = addr
	}
	return p
}

// readyHTTP finds the bound HTTP endpoint in the plugin's "Ready" line,
// in the text (httpEndpoint="…") or the json ("httpEndpoint":"…") log
// format.
var readyHTTP = regexp.MustCompile(`"Ready".*[ "]httpEndpoint"?[=:]"([^"]+)"`)

// waitHTTPAddr waits for the "Ready" line, which follows the socket's
// first answer, and returns the HTTP endpoint it names. timeout is a
// liveness bound only.
func (p *Plugin) waitHTTPAddr(timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m := readyHTTP.FindStringSubmatch(p.Log.String()); m != nil {
			return m[1], nil
		}
		select {
		case <-p.done:
			return "", fmt.Errorf("plugin exited: %w", p.waitErr)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("plugin logged no \"Ready\" line with its HTTP endpoint after %s", timeout)
}

// Command returns the command Start runs, for tests that run it to exit.
func Command(ctx context.Context, bin string, o Options) *exec.Cmd {
	if o.DriverName == "" {
		o.DriverName = "sim.csi.wincsi.io"
	}
	args := []string{
		"--host=sim", "--sim-dir=" + filepath.Join(o.Dir, "sim"), "--kubelet-dir=" + filepath.Join(o.Dir, "kubelet"),
		"--driver-name=" + o.DriverName, "--endpoint=unix://" + filepath.Join(o.Dir, "csi.sock"),
	}
	if !o.OmitNodeID {
		args = append(args, "--node-id=test-node")
	}
	args = append(args, o.Args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	return cmd
}

// WaitReady waits until the plugin answers Probe with ready, as a
// sidecar's probe asks it, or the process exits. The socket accepts
// connections a moment before that (its listener exists before Serve
// marks the plugin ready), so a test that went on at the first connect
// could find the plugin not ready yet. timeout is a liveness bound only.
func (p *Plugin) WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	var last error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("plugin exited: %w", p.waitErr)
		default:
		}
		if c, err := net.DialTimeout("unix", p.Socket, 100*time.Millisecond); err != nil {
			last = err // no socket yet: nothing to ask
		} else {
			_ = c.Close() // only the connect mattered
			ready, err := rpc.Probe(ctx, conn)
			switch {
			case err != nil:
				last = fmt.Errorf("probe: %w", err)
			case !ready:
				last = errors.New("probe: not ready")
			default:
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("plugin on %s not ready after %s: %w", p.Socket, timeout, last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ShortDir returns a temporary directory with a short path, removed at
// test cleanup: the plugin's unix sockets live below it, and a socket's
// path is limited to 108 bytes, which t.TempDir's paths (holding the
// test's name) can exceed.
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// FreeAddr returns a loopback address with a TCP port nobody listened on
// a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

// Get fetches path (such as "/metrics") from the plugin's HTTP endpoint
// (Options.HTTP) and returns the body. Anything but 200 OK fails the test.
func (p *Plugin) Get(t testing.TB, path string) string {
	t.Helper()
	code, body := p.Fetch(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s%s: %d %s: %s", p.HTTPAddr, path, code, http.StatusText(code), body)
	}
	return body
}

// Fetch fetches path from the plugin's HTTP endpoint (Options.HTTP) and
// returns the status code and the body, whatever the status.
func (p *Plugin) Fetch(t testing.TB, path string) (int, string) {
	t.Helper()
	if p.HTTPAddr == "" {
		t.Fatal("testbin: Get and Fetch need a plugin started with Options.HTTP")
	}
	resp, err := http.Get("http://" + p.HTTPAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// Dial returns a gRPC client of target (such as "unix:///path/csi.sock"),
// closed at test cleanup.
func Dial(t testing.TB, target string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // a client of a plugin that has exited may fail to close
	return conn
}

// Dial returns a gRPC client of the plugin's CSI endpoint, closed at test
// cleanup.
func (p *Plugin) Dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	return Dial(t, p.Endpoint())
}

// Endpoint is the plugin's CSI endpoint.
func (p *Plugin) Endpoint() string { return "unix://" + p.Socket }

// Done is closed when the process exits.
func (p *Plugin) Done() <-chan struct{} { return p.done }

// ExitErr is the process's exit error once Done is closed.
func (p *Plugin) ExitErr() error { return p.waitErr }

// Stop sends SIGTERM and waits for the exit (up to timeout), killing the
// process after that.
func (p *Plugin) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.waitErr
	default:
	}
	if err := p.Cmd.Process.Signal(terminate); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("plugin did not stop within %s", timeout)
	}
}

// Kill kills the process if it runs and waits for it.
func (p *Plugin) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Kill() // it may have exited in between
	<-p.done
}

// Context returns a context that ends with the test or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
