package disk

import (
	"context"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// LockDisk holds the lock a stage, expand or unstage of disk number n
// takes, as another operation on that number would.
func (b *Backend) LockDisk(ctx context.Context, n uint32) (unlock func(), err error) {
	_, unlock, err = b.disks.LockUntilIdle(ctx, diskKey(diskNumbered(n)))
	return unlock, err
}

// DiskLockWaiters returns how many operations wait for disk number n's
// lock.
func (b *Backend) DiskLockWaiters(n uint32) int { return b.disks.Waiting(diskKey(diskNumbered(n))) }

func diskNumbered(n uint32) host.Disk { return host.Disk{Number: n} }
