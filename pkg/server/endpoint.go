package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/internal/filelock"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// MaxSocketPath is the longest path, in bytes, a unix socket can be
// created at or dialled by, on Windows as on Linux: the address's sun_path
// holds 108 bytes (Linux: sockaddr_un; Windows: UNIX_PATH_MAX in afunix.h)
// and Go needs one of them for the closing NUL (syscall, SockaddrUnix's
// sockaddr in syscall_linux.go and syscall_windows.go, as of Go 1.26).
// A longer path fails only when the socket is created or dialled, with
// "bind: invalid argument"; CheckSocketPath says so before.
const MaxSocketPath = 107

// CheckSocketPath fails when path is too long for a unix socket
// (MaxSocketPath).
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("socket path %s is %d bytes long; a unix socket's path can have at most %d", path, len(path), MaxSocketPath)
	}
	return nil
}

// ParseEndpoint returns the socket path of a unix:// endpoint. Both
// unix:///var/lib/kubelet/plugins/x/csi.sock and
// unix://C:\var\lib\kubelet\plugins\x\csi.sock are accepted (url.Parse
// mangles drive letters, so the scheme is split by hand). A path too long
// for a unix socket (CheckSocketPath) is refused.
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
	if err := CheckSocketPath(p); err != nil {
		return "", fmt.Errorf("endpoint %q: %w", endpoint, err)
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
	switch live, err := answers(ctx, path); {
	case err != nil:
		unlock()
		return nil, fmt.Errorf("socket %s: whether a process serves it: %w", path, err)
	case live:
		unlock()
		return nil, fmt.Errorf("socket %s: %w", path, ErrEndpointInUse)
	}
	return &Socket{ctx: ctx, path: path, unlock: unlock}, nil
}

// answers reports whether a process accepts connections on the socket: a
// socket file is judged stale only after dialAttempts failed dials,
// dialPause apart (answers_windows.go, answers_other.go). It fails only
// when ctx ends first.
func answers(ctx context.Context, path string) (bool, error) {
	return answersWithin(ctx, path, dialAttempts, dialPause, dial)
}

// answersWithin is answers with its attempts, pause and dial given.
func answersWithin(ctx context.Context, path string, attempts int, pause time.Duration, dial func(ctx context.Context, path string) error) (bool, error) {
	if !present(path) {
		return false, nil
	}
	for i := range attempts {
		if i > 0 {
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return false, ctx.Err()
			case <-t.C:
			}
		}
		if dial(ctx, path) == nil {
			return true, nil
		}
	}
	return false, ctx.Err()
}

// present reports whether a file is at path; where none is, there is
// nothing to dial.
func present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// dial connects to the socket at path and hangs up: only the connect
// matters.
func dial(ctx context.Context, path string) error {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	return c.Close()
}

// Socket is a claimed socket (Claim).
type Socket struct {
	ctx    context.Context
	path   string
	once   sync.Once
	unlock func()

	mu        sync.Mutex
	listening bool        // a listener holds the claim; closing it releases it
	created   os.FileInfo // the socket file Listen created, to tell it from another's
}

// ErrSocketReplaced means the file at a socket's path is no longer the
// socket this process created there: another process removed it and put
// its own in its place (a node-driver-registrar does so at start, whatever
// the file is).
var ErrSocketReplaced = errors.New("replaced by another process")

// Listen creates the socket and listens on it: a socket file left there
// (nobody answered on it at Claim) is stale, is removed, and that is
// logged. It records which file it created (Owned). Closing the listener
// releases the claim and removes the socket, but only while it is still
// the one Listen created: a socket another process put in its place stays.
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
	created, err := identify(s.path)
	if err != nil {
		_ = l.Close() // removes the socket just created; the error is the one to report
		return nil, fmt.Errorf("inspect the socket just created at %s: %w", s.path, err)
	}
	// Go's unix listener removes whatever file is at its path when it is
	// closed (net/unixsock_posix.go, UnixListener.close); Close removes the
	// socket itself, only while it is this one.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	s.mu.Lock()
	s.listening, s.created = true, created
	s.mu.Unlock()
	return &claimedListener{Listener: l, s: s}, nil
}

// identify returns what identifies the file at path, for os.SameFile. On
// Windows, os.Lstat may leave the file's ID to be read from the path when
// os.SameFile first needs it (os/types_windows.go, fileStat.loadFileId),
// which would then read whatever file is there by then; comparing the
// result with itself reads it now.
func identify(path string) (os.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	os.SameFile(fi, fi)
	return fi, nil
}

// Owned returns nil while the file at the socket's path is the socket
// Listen created, an error wrapping fs.ErrNotExist once no file is there,
// and one wrapping ErrSocketReplaced once another file is.
func (s *Socket) Owned() error {
	s.mu.Lock()
	created := s.created
	s.mu.Unlock()
	if created == nil {
		return fmt.Errorf("socket %s: not listened on", s.path)
	}
	now, err := os.Lstat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("socket %s is gone: %w", s.path, err)
	case err != nil:
		return fmt.Errorf("inspect socket %s: %w", s.path, err)
	case !os.SameFile(created, now):
		return fmt.Errorf("socket %s: %w", s.path, ErrSocketReplaced)
	}
	return nil
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

// claimedListener removes the socket it listens on once it is closed,
// while that is still the socket Listen created, then releases the claim.
type claimedListener struct {
	net.Listener
	s *Socket
}

func (l *claimedListener) Close() error {
	err := l.Listener.Close()
	l.s.once.Do(func() {
		defer l.s.unlock()
		owned := l.s.Owned()
		switch {
		case owned == nil:
			if rerr := os.Remove(l.s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
				err = fmt.Errorf("remove socket %s: %w", l.s.path, rerr)
			}
		case errors.Is(owned, ErrSocketReplaced):
			klog.FromContext(l.s.ctx).Info("Left the socket in place: another process replaced this plugin's socket and may serve it", "socket", l.s.path)
		}
	})
	return err
}
