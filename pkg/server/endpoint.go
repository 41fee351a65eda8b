package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/internal/filelock"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// ParseEndpoint returns the socket path of a unix:// endpoint. Both
// unix:///var/lib/kubelet/plugins/x/csi.sock and
// unix://C:\var\lib\kubelet\plugins\x\csi.sock are accepted (url.Parse
// mangles drive letters, so the scheme is split by hand).
func ParseEndpoint(endpoint string) (string, error) {
	const scheme = "unix://"
	if !strings.HasPrefix(strings.ToLower(endpoint), scheme) {
		return "", fmt.Errorf("endpoint %q: only unix:// endpoints are supported", endpoint)
	}
	p := endpoint[len(scheme):]
	if p == "" {
		return "", fmt.Errorf("endpoint %q has no socket path", endpoint)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("endpoint %q contains a NUL byte", endpoint)
	}
	return p, nil
}

// ErrEndpointInUse means a live process already serves the socket.
var ErrEndpointInUse = errors.New("endpoint is served by another process")

// Claim takes the socket at path for this process, without creating it
// yet. It takes the lock of path (the file path + ".lock", kept between
// runs): a plugin that holds it serves, or is about to serve, the socket,
// and Claim fails at once with ErrEndpointInUse. Under the lock, a socket
// file some other process answers on (a plugin of a version before the
// lock, another program) also fails with ErrEndpointInUse. So of several
// plugins started on one socket at once, exactly one gets the claim and
// every other one fails with ErrEndpointInUse, and none removes the socket
// of another. The socket's directory is created if missing.
//
// The claim holds the socket while the plugin prepares what must work
// before a sidecar may reach it (its HTTP endpoint, its host);
// Socket.Listen then creates the socket.
func Claim(ctx context.Context, path string) (*Socket, error) {
	return ClaimLocked(ctx, path, path+".lock")
}

// ClaimLocked is Claim with the lock file at lock instead of beside the
// socket, for a socket in a directory that another program scans, where
// no other file belongs: kubelet takes every file in its plugins_registry
// directory for a plugin's socket. The lock's directory is created too.
func ClaimLocked(ctx context.Context, path, lock string) (*Socket, error) {
	for _, p := range []string{path, lock} {
		dir, ok := winpath.Parent(p)
		if !ok {
			dir = "."
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create the directory of %s: %w", p, err)
		}
	}
	unlock, err := filelock.TryLock(lock)
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("socket %s: %w", path, ErrEndpointInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if answers(path) {
		unlock()
		return nil, fmt.Errorf("socket %s: %w", path, ErrEndpointInUse)
	}
	return &Socket{ctx: ctx, path: path, unlock: unlock}, nil
}

// answers reports whether a process accepts connections on the socket.
func answers(path string) bool {
	if _, err := os.Lstat(path); err != nil {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // only the connect mattered
	return true
}

// Socket is a claimed socket (Claim).
type Socket struct {
	ctx    context.Context
	path   string
	once   sync.Once
	unlock func()

	mu        sync.Mutex
	listening bool // a listener holds the claim; closing it releases it
}

// Listen creates the socket and listens on it: a socket file left there
// (nobody answered on it at Claim) is stale, is removed, and that is
// logged. Closing the listener removes the socket and releases the claim.
func (s *Socket) Listen() (net.Listener, error) {
	if _, err := os.Lstat(s.path); err == nil {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", s.path, err)
		}
		klog.FromContext(s.ctx).Info("Removed a stale socket that no process answers on, left by a plugin that did not stop cleanly", "socket", s.path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("inspect socket %s: %w", s.path, err)
	}
	l, err := net.Listen("unix", s.path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", s.path, err)
	}
	s.mu.Lock()
	s.listening = true
	s.mu.Unlock()
	return &claimedListener{Listener: l, s: s}, nil
}

// Release gives the claim up: a plugin that stops before it listens calls
// it. Once Listen succeeded it does nothing: closing the listener releases
// the claim.
func (s *Socket) Release() {
	s.mu.Lock()
	listening := s.listening
	s.mu.Unlock()
	if !listening {
		s.once.Do(s.unlock)
	}
}

// Listen claims the socket at path and listens on it (Claim, then
// Socket.Listen).
func Listen(ctx context.Context, path string) (net.Listener, error) {
	s, err := Claim(ctx, path)
	if err != nil {
		return nil, err
	}
	l, err := s.Listen()
	if err != nil {
		s.Release()
		return nil, err
	}
	return l, nil
}

// claimedListener releases the socket's claim once the listener is closed
// (which removes the socket).
type claimedListener struct {
	net.Listener
	s *Socket
}

func (l *claimedListener) Close() error {
	err := l.Listener.Close()
	l.s.once.Do(l.s.unlock)
	return err
}
