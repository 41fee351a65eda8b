package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

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

// Listen claims the socket at path: a socket file nobody answers on is
// removed, one a live process answers on is left alone and Listen fails
// with ErrEndpointInUse, so that two plugins never steal each other's
// socket. The socket's directory is created if missing.
func Listen(path string) (net.Listener, error) {
	if _, err := os.Lstat(path); err == nil {
		c, derr := net.DialTimeout("unix", path, time.Second)
		if derr == nil {
			_ = c.Close() // only the connect mattered
			return nil, fmt.Errorf("socket %s: %w", path, ErrEndpointInUse)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("inspect socket %s: %w", path, err)
	}
	dir, ok := winpath.Parent(path)
	if !ok {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create socket directory of %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}
