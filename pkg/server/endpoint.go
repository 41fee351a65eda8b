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

// Listen claims the socket at path. It first takes the lock of path (the
// file path + ".lock", kept between runs): a plugin that holds it serves, or
// is about to serve, the socket, and Listen fails at once with
// ErrEndpointInUse. Under the lock, a socket file some other process
// answers on (a plugin of a version before the lock, another program) also
// fails with ErrEndpointInUse; one nobody answers on is stale: it is
// removed, and that is logged. So of several plugins started on one socket
// at once, exactly one serves and every other one fails with
// ErrEndpointInUse, and none removes the socket of another. The socket's
// directory is created if missing. Closing the listener removes the socket
// and releases the lock.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	dir, ok := winpath.Parent(path)
	if !ok {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create socket directory of %s: %w", path, err)
	}
	unlock, err := filelock.TryLock(path + ".lock")
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("socket %s: %w", path, ErrEndpointInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	l, err := listenLocked(ctx, path)
	if err != nil {
		unlock()
		return nil, err
	}
	return &lockedListener{Listener: l, unlock: unlock}, nil
}

// listenLocked listens on path once its lock is held.
func listenLocked(ctx context.Context, path string) (net.Listener, error) {
	if _, err := os.Lstat(path); err == nil {
		c, derr := net.DialTimeout("unix", path, time.Second)
		if derr == nil {
			_ = c.Close() // only the connect mattered
			return nil, fmt.Errorf("socket %s: %w", path, ErrEndpointInUse)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
		klog.FromContext(ctx).Info("Removed a stale socket that no process answers on, left by a plugin that did not stop cleanly", "socket", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("inspect socket %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}

// lockedListener releases the socket's lock once the listener is closed
// (which removes the socket).
type lockedListener struct {
	net.Listener
	once   sync.Once
	unlock func()
}

func (l *lockedListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(l.unlock)
	return err
}
