//go:build !windows

package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrDirInUse means another process (or another Sim) has the directory open.
var ErrDirInUse = errors.New("sim directory is in use by another process")

// lockWait is how long lockDir waits for a lock that is held. A flock
// belongs to the open file description, which a child forked by the
// holder shares until it execs and drops its close-on-exec copy: a holder
// that closes the lock while another of its goroutines is starting a
// process keeps it held for that instant. A short wait rides that out; a
// process that really holds the directory holds it far longer.
const lockWait = time.Second

// lockBusy, when set (by tests), runs each time lockDir finds the lock
// held, before it waits to try again.
var lockBusy func()

// lockDir takes an exclusive lock on <dir>/lock so that two processes never
// simulate the same host at once (each would overwrite the other's state).
// The lock dies with the process, so a crash never leaves it behind.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sim dir %s: %w", dir, err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		if lockBusy != nil {
			lockBusy()
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		_ = f.Close() // the lock error is the one to report
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sim dir %s: %w", dir, ErrDirInUse)
		}
		return nil, fmt.Errorf("lock sim dir %s: %w", dir, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}
