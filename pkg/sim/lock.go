package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wincsi/csi-windows-node/internal/filelock"
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
	path := filepath.Join(dir, "lock")
	deadline := time.Now().Add(lockWait)
	for {
		unlock, err := filelock.TryLock(path)
		switch {
		case err == nil:
			return unlock, nil
		case !errors.Is(err, filelock.ErrLocked):
			return nil, fmt.Errorf("lock sim dir %s: %w", dir, err)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("sim dir %s: %w", dir, ErrDirInUse)
		}
		if lockBusy != nil {
			lockBusy()
		}
		time.Sleep(10 * time.Millisecond)
	}
}
