package shared

import (
	"context"
	"sync"

	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// checkParallel bounds the host calls FirstUser makes at once: enough that
// counting the users of a resource with many volumes costs a few host
// round trips rather than one per volume, few enough not to flood the host
// (a WMI provider, the Win32 worker pool).
const checkParallel = 8

// FirstUser asks isUser about the entries, up to eight at a time, and
// returns the volume ID of one that uses the resource, or "" when none
// does. Once a user is found, the checks still running are cancelled and
// no new one starts. An error of isUser (or ctx's) is returned only when
// no user was found.
func FirstUser(ctx context.Context, entries []journal.Entry, isUser func(context.Context, journal.Entry) (bool, error)) (string, error) {
	if len(entries) == 1 {
		ok, err := isUser(ctx, entries[0])
		if ok {
			return entries[0].VolumeID, nil
		}
		return "", err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		found    string
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, checkParallel)
	for _, e := range entries {
		select {
		case sem <- struct{}{}:
		case <-cctx.Done():
		}
		if cctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			ok, err := isUser(cctx, e)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok && found == "":
				found = e.VolumeID
				cancel()
			case err != nil && firstErr == nil:
				firstErr = err
			}
		})
	}
	wg.Wait()
	if found != "" {
		return found, nil
	}
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return "", firstErr
}
