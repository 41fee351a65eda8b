package server

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// staleSocket leaves a socket file at path that nobody answers on, as a
// plugin killed without cleaning up does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// serving reports whether a process answers on the socket at path.
func serving(t *testing.T, path string) bool {
	t.Helper()
	live, err := answers(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// TestAnswersDialsAgain: a socket file is judged stale only after every
// attempt failed (on Windows, the first dial of a live socket may fail),
// and a dial that succeeds ends the attempts; a missing file is not
// dialled, and a context that ends stops the attempts. Counted in dials:
// the pause between them plays no part.
func TestAnswersDialsAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drv-reg.sock")
	ctx := context.Background()
	refused := errors.New("connection refused")
	// dialer's dial fails the first fails times, then succeeds; it counts
	// the dials.
	dialer := func(fails int) (func(context.Context, string) error, *int) {
		n := 0
		return func(_ context.Context, p string) error {
			if p != path {
				t.Errorf("dialled %s, want %s", p, path)
			}
			n++
			if n <= fails {
				return refused
			}
			return nil
		}, &n
	}
	d, n := dialer(0)
	if live, err := answersWithin(ctx, path, 3, 0, d); live || err != nil || *n != 0 {
		t.Errorf("a missing socket file: live %t, %v after %d dials; want not live, undialled", live, err, *n)
	}
	staleSocket(t, path)
	for _, tt := range []struct {
		attempts, fails int
		live            bool
		dials           int
	}{
		{attempts: 3, fails: 0, live: true, dials: 1},
		{attempts: 3, fails: 1, live: true, dials: 2},
		{attempts: 3, fails: 2, live: true, dials: 3},
		{attempts: 3, fails: 3, live: false, dials: 3},
		{attempts: 1, fails: 1, live: false, dials: 1},
	} {
		d, n := dialer(tt.fails)
		live, err := answersWithin(ctx, path, tt.attempts, 0, d)
		if err != nil || live != tt.live || *n != tt.dials {
			t.Errorf("%d attempts, the first %d dials failing: live %t after %d dials (%v), want %t after %d",
				tt.attempts, tt.fails, live, *n, err, tt.live, tt.dials)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	d, n = dialer(3)
	if live, err := answersWithin(cancelled, path, 3, time.Hour, d); live || !errors.Is(err, context.Canceled) || *n != 1 {
		t.Errorf("a context ended before the pause: live %t, %v after %d dials; want context.Canceled after 1", live, err, *n)
	}
	if runtime.GOOS == "windows" && dialAttempts < 2 {
		t.Errorf("Windows dials a socket %d times before judging it stale", dialAttempts)
	}
}

// TestListenRace: plugins started on one socket at the same moment, over
// a fresh path or a stale socket: exactly one serves, every other one gets
// ErrEndpointInUse (never a raw "address already in use"), and nobody
// removes the winner's socket. Each round is a real race between
// goroutines released together; nothing waits for a time.
func TestListenRace(t *testing.T) {
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(discard{}))))
	for round := 0; round < 200; round++ {
		path := filepath.Join(t.TempDir(), "csi.sock")
		if round%2 == 1 {
			staleSocket(t, path)
		}
		const n = 6
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []net.Listener
		var errs []error
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := Listen(ctx, path)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				winners = append(winners, l)
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d plugins listen, want 1 (errors: %v)", round, len(winners), errs)
		}
		for _, err := range errs {
			if !errors.Is(err, ErrEndpointInUse) {
				t.Fatalf("round %d: a loser got %v, want ErrEndpointInUse", round, err)
			}
		}
		if !serving(t, path) {
			t.Fatalf("round %d: the winner's socket does not answer: a loser removed it", round)
		}
		if err := winners[0].Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListen(t *testing.T) {
	var log strings.Builder
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&log))))
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins", "drv", "csi.sock")

	// The directory is made; closing removes the socket and frees it.
	l, err := Listen(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(ctx, path); !errors.Is(err, ErrEndpointInUse) {
		t.Fatalf("second Listen = %v, want ErrEndpointInUse", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket after Close: %v", err)
	}
	if strings.Contains(log.String(), "stale") {
		t.Fatalf("a clean start logged a stale socket:\n%s", log.String())
	}

	// A stale socket is replaced, and that is logged.
	staleSocket(t, path)
	l, err = Listen(ctx, path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	if !strings.Contains(log.String(), `"Removed a stale socket`) || !strings.Contains(log.String(), path) {
		t.Fatalf("replacing a stale socket is not logged:\n%s", log.String())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A process that serves the socket without the lock (an older plugin)
	// keeps it.
	foreign, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	go func() {
		for {
			c, err := foreign.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	if _, err := Listen(ctx, path); !errors.Is(err, ErrEndpointInUse) {
		t.Fatalf("Listen on a socket another process serves = %v, want ErrEndpointInUse", err)
	}
	if !serving(t, path) {
		t.Fatal("the other process's socket was removed")
	}
}

// serveUnlocked serves a socket at path as a process without the
// plugin's lock does (node-driver-registrar): whatever is at the path is
// removed first, as the registrar removes it at start. It answers until
// the test ends.
func serveUnlocked(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
}

// TestOwned: a socket Listen created is owned until it goes or another
// process puts its own at the path; closing the listener then leaves the
// other process's socket (answering) or file in place, and still releases
// the claim.
func TestOwned(t *testing.T) {
	var log strings.Builder
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&log))))
	for _, tt := range []struct {
		name    string
		replace func(t *testing.T, path string)
		want    error
		answers bool // the file left at the path answers
	}{
		{"served by another process", serveUnlocked, ErrSocketReplaced, true},
		{"a file left by another process", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			staleSocket(t, path)
		}, ErrSocketReplaced, false},
		{"gone", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, fs.ErrNotExist, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log.Reset()
			path := filepath.Join(t.TempDir(), "drv-reg.sock")
			c, err := Claim(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Owned(); err == nil {
				t.Error("Owned before Listen = nil")
			}
			l, err := c.Listen()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Owned(); err != nil {
				t.Fatalf("Owned once listening = %v", err)
			}
			tt.replace(t, path)
			if err := c.Owned(); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Owned = %v, want %v naming %s", err, tt.want, path)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = os.Lstat(path)
			if errors.Is(tt.want, fs.ErrNotExist) {
				if !os.IsNotExist(err) {
					t.Errorf("after Close: %v", err)
				}
			} else if err != nil {
				t.Fatalf("Close removed the other process's socket: %v", err)
			}
			if serving(t, path) != tt.answers {
				t.Errorf("the other process's socket answers: %t, want %t", !tt.answers, tt.answers)
			}
			if errors.Is(tt.want, ErrSocketReplaced) && !strings.Contains(log.String(), `"Left the socket in place`) {
				t.Errorf("leaving the socket is not logged:\n%s", log.String())
			}
			// The claim is released whatever Close found.
			c, err = ClaimLocked(ctx, path+"2", path+".lock")
			if err != nil {
				t.Fatalf("the lock after Close: %v", err)
			}
			c.Release()
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestClaim: a claim holds the socket before it exists; Release gives it
// up when the start-up fails; once listening, only closing the listener
// does.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "csi.sock")
	c, err := Claim(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the claim created the socket: %v", err)
	}
	if _, err := Claim(ctx, path); !errors.Is(err, ErrEndpointInUse) {
		t.Fatalf("second Claim = %v, want ErrEndpointInUse", err)
	}
	c.Release()
	c, err = Claim(ctx, path)
	if err != nil {
		t.Fatalf("Claim after Release: %v", err)
	}
	l, err := c.Listen()
	if err != nil {
		t.Fatal(err)
	}
	c.Release() // a no-op: the listener holds the claim
	if _, err := Claim(ctx, path); !errors.Is(err, ErrEndpointInUse) {
		t.Fatalf("Claim while listening = %v, want ErrEndpointInUse", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Claim(ctx, path)
	if err != nil {
		t.Fatalf("Claim after the listener closed: %v", err)
	}
	c.Release()
}

// TestBindHTTP: a taken port is ErrHTTPPortInUse, naming the address.
func TestBindHTTP(t *testing.T) {
	l, err := BindHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = BindHTTP(l.Addr().String())
	if !errors.Is(err, ErrHTTPPortInUse) || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("BindHTTP on a taken port = %v, want ErrHTTPPortInUse naming it", err)
	}
}

// TestMaxSocketPath: MaxSocketPath is what Go's syscall package takes
// for the OS the test runs on (Linux here, Windows in CI), and a socket at
// exactly that length listens while one a byte longer fails as
// CheckSocketPath says; ParseEndpoint refuses the longer one first.
func TestMaxSocketPath(t *testing.T) {
	if want := len(syscall.RawSockaddrUnix{}.Path) - 1; MaxSocketPath != want {
		t.Fatalf("MaxSocketPath = %d, Go's syscall takes %d", MaxSocketPath, want)
	}
	dir := t.TempDir()
	at := func(n int) string {
		t.Helper()
		p := filepath.Join(dir, "s")
		if len(p) > n {
			t.Fatalf("the temporary directory %s is too long for a %d-byte socket path", dir, n)
		}
		return p + strings.Repeat("x", n-len(p))
	}
	longest := at(MaxSocketPath)
	if err := CheckSocketPath(longest); err != nil {
		t.Errorf("CheckSocketPath(%d bytes) = %v", len(longest), err)
	}
	l, err := net.Listen("unix", longest)
	if err != nil {
		t.Fatalf("listen on a %d-byte path: %v", len(longest), err)
	}
	_ = l.Close()

	tooLong := at(MaxSocketPath + 1)
	if l, err := net.Listen("unix", tooLong); err == nil {
		_ = l.Close()
		t.Errorf("listen on a %d-byte path succeeded", len(tooLong))
	}
	if err := CheckSocketPath(tooLong); err == nil || !strings.Contains(err.Error(), "at most 107") {
		t.Errorf("CheckSocketPath(%d bytes) = %v, want the limit named", len(tooLong), err)
	}
	if p, err := ParseEndpoint("unix://" + tooLong); err == nil || !strings.Contains(err.Error(), "at most 107") {
		t.Errorf("ParseEndpoint(%d bytes) = %q, %v; want the limit named", len(tooLong), p, err)
	}
	if p, err := ParseEndpoint("unix://" + longest); err != nil || p != longest {
		t.Errorf("ParseEndpoint(%d bytes) = %q, %v", len(longest), p, err)
	}
}
