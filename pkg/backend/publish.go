package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Publisher is what the node service asks of the host about the paths of
// a request, whatever the backend: publishing (the target path becomes a
// directory symbolic link to the staging path, the volume mount point of a
// disk or the link to an SMB share, as every Windows CSI driver does,
// e.g. kubernetes-csi/csi-driver-smb@95c6968
// pkg/mounter/safe_mounter_host_process_windows.go, Mount), what is staged
// at a staging path, whether a
// path is a publication of a volume, and the usage of the file system
// holding a path. The node service makes no host call of its own.
type Publisher struct {
	files   host.Files
	volumes host.Volumes
}

// NewPublisher returns a Publisher over h.
func NewPublisher(h host.Host) *Publisher {
	return &Publisher{files: h.Files, volumes: h.Volumes}
}

// Staged reports what is staged at staging: the mount point's volume or the
// link's target, and whether anything is.
func (p *Publisher) Staged(ctx context.Context, staging string) (host.PathInfo, bool, error) {
	info, err := p.files.Stat(ctx, staging)
	if err != nil {
		return host.PathInfo{}, false, fmt.Errorf("staging path: %w", err)
	}
	return info, info.Kind == host.PathMountPoint || info.Kind == host.PathSymlink, nil
}

// StagedKind tells the backend of a stage the journal does not know from
// what is at the staging path: a link to a share is SMB, a volume mount
// point is a disk (an iSCSI disk is unmounted the same way; its session is
// then left for the operator, as nothing records which target it was).
// Nothing staged there is "". A link this plugin did not make, or anything
// else, fails with host.ErrConflict.
func (p *Publisher) StagedKind(ctx context.Context, staging string) (contract.Kind, error) {
	info, err := p.files.Stat(ctx, staging)
	if err != nil {
		return "", fmt.Errorf("staging path: %w", err)
	}
	switch info.Kind {
	case host.PathSymlink:
		if strings.HasPrefix(info.Target, `\\`) {
			return contract.KindSMB, nil
		}
		return "", fmt.Errorf("staging path %s is a link to %s, which this plugin did not make: %w", staging, info.Target, host.ErrConflict)
	case host.PathMountPoint:
		return contract.KindDisk, nil
	case host.PathMissing, host.PathDir:
		return "", nil
	}
	return "", fmt.Errorf("staging path %s is a %s: %w", staging, info.Kind, host.ErrConflict)
}

// IsPublication reports whether path is a link to staging, as Publish
// makes it.
func (p *Publisher) IsPublication(ctx context.Context, path, staging string) (bool, error) {
	info, err := p.files.Stat(ctx, path)
	if err != nil {
		return false, err
	}
	return info.Kind == host.PathSymlink && SameTarget(info.Target, staging), nil
}

// Stats returns the usage of the file system holding path.
func (p *Publisher) Stats(ctx context.Context, path string) (host.Space, error) {
	return Stats(ctx, p.volumes, path)
}

// Publish makes target a link to staging. A target that already links to
// staging succeeds (created reports false); an empty directory at target,
// as kubelet may pre-create, is replaced; anything else is refused.
func (p *Publisher) Publish(ctx context.Context, staging, target string) (created bool, err error) {
	log := klog.FromContext(ctx)
	info, err := p.files.Stat(ctx, target)
	if err != nil {
		return false, fmt.Errorf("target path: %w", err)
	}
	switch info.Kind {
	case host.PathSymlink:
		if SameTarget(info.Target, staging) {
			return false, nil
		}
		return false, fmt.Errorf("target path %s is already a link to %s: %w", target, info.Target, host.ErrAlreadyExists)
	case host.PathDir:
		// In Windows the link cannot replace a directory: remove the empty
		// one kubelet created (kubernetes#88759). Remove refuses a
		// directory with entries, so no data is ever deleted.
		if err := p.files.Remove(ctx, target); err != nil {
			return false, fmt.Errorf("before linking the target path: %w", err)
		}
	case host.PathMissing:
	default:
		return false, fmt.Errorf("target path %s is a %s: %w", target, info.Kind, host.ErrConflict)
	}
	log.V(4).Info("Linking target path to staging path", "targetPath", target, "stagingTargetPath", staging)
	err = p.files.Symlink(ctx, target, staging)
	if errors.Is(err, host.ErrNotFound) {
		// kubelet creates the target's parent; csi-sanity and other COs
		// may not. Create it only then, which saves a host call on the
		// common path.
		if parent, ok := winpath.Parent(target); ok {
			if err := p.files.MakeDir(ctx, parent); err != nil {
				return false, fmt.Errorf("the parent of the target path: %w", err)
			}
			err = p.files.Symlink(ctx, target, staging)
		}
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// Unpublish removes the link at target. A missing target succeeds; an
// empty directory (a publish that never completed) is removed; anything
// holding data is refused. When staging is not empty, a link to any other
// path is refused too: it belongs to another volume.
func (p *Publisher) Unpublish(ctx context.Context, target, staging string) error {
	info, err := p.files.Stat(ctx, target)
	if err != nil {
		return fmt.Errorf("target path: %w", err)
	}
	switch info.Kind {
	case host.PathMissing:
		return nil
	case host.PathSymlink, host.PathDir:
		if info.Kind == host.PathSymlink && staging != "" && !SameTarget(info.Target, staging) {
			return fmt.Errorf("target path %s links to %s, not to this volume's staging path %s: %w",
				target, info.Target, staging, host.ErrConflict)
		}
		if err := p.files.Remove(ctx, target); err != nil && !errors.Is(err, host.ErrNotFound) {
			return fmt.Errorf("target path: %w", err)
		}
		return nil
	}
	return fmt.Errorf("target path %s is a %s, not a link made by this plugin: %w", target, info.Kind, host.ErrConflict)
}

// SameTarget reports whether a link target names the given path.
func SameTarget(linkTarget, path string) bool {
	return winpath.CanonicalTarget(linkTarget) == winpath.CanonicalTarget(path)
}
