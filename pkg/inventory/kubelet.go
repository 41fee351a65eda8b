package inventory

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Where kubelet puts the paths of CSI volumes (kubernetes/kubernetes
// pkg/volume/csi: csi_attacher.go makeDeviceMountPath, since Kubernetes
// 1.25 <plugin dir>/<driver>/<sha256 of the volume handle>/globalmount,
// before that <plugin dir>/pv/<pv name>/globalmount; csi_mounter.go,
// the target path pods/<pod uid>/volumes/kubernetes.io~csi/<pv>/mount).
var (
	csiPluginDir = []string{"plugins", "kubernetes.io", "csi"}
	podCSIDir    = []string{"volumes", "kubernetes.io~csi"}
)

const (
	podsDir     = "pods"
	targetMount = "mount"
	// stagingDepth is how deep below this driver's directory staging
	// paths lie (<sha>/globalmount); other layouts (csi-sanity, the
	// README's csc walk-through) put them at most that deep too.
	stagingDepth = 2
)

// kubelet walks the parts of the kubelet directory that belong to this
// driver: the staging directory, for mount points and links no journal
// entry names, and the pods' CSI volume directories, for publications.
func (t *taker) kubelet(ctx context.Context) {
	dir := append(append([]string{}, csiPluginDir...), t.in.DriverName)
	t.walkStaging(ctx, dir, stagingDepth)

	pods, ok := t.readDir(ctx, []string{podsDir})
	if !ok {
		return
	}
	staging := winpath.CanonicalTarget(t.in.Root.Join(dir...)) + `\`
	for _, pod := range pods {
		vols, ok := t.readDir(ctx, append([]string{podsDir, pod}, podCSIDir...))
		if !ok {
			continue
		}
		for _, vol := range vols {
			p := t.in.Root.Join(append(append([]string{podsDir, pod}, podCSIDir...), vol, targetMount)...)
			info, err := t.h.Files.Stat(ctx, p)
			if err != nil {
				t.incomplete("target path "+p, err)
				continue
			}
			if info.Kind != host.PathSymlink {
				continue // not a publication of this plugin's (it links)
			}
			c := winpath.CanonicalTarget(info.Target)
			if i, ok := t.byPath[c]; ok {
				v := &t.rep.Volumes[i]
				v.Publications = append(v.Publications, Publication{TargetPath: p, PointsTo: info.Target})
				continue
			}
			if strings.HasPrefix(c, staging) {
				t.unexplained(KindLink, p, "publication linking to "+info.Target+", a staging path of this driver that no journal entry names: "+
					"published from a stage the journal lost (state directory wiped or replaced)")
			}
		}
	}
}

// walkStaging reports the mount points and links below the directory
// (components below the kubelet directory) that no journal entry names,
// descending into plain directories only, depth levels deep.
func (t *taker) walkStaging(ctx context.Context, dir []string, depth int) {
	names, ok := t.readDir(ctx, dir)
	if !ok {
		return
	}
	for _, n := range names {
		comps := append(append([]string{}, dir...), n)
		p := t.in.Root.Join(comps...)
		info, err := t.h.Files.Stat(ctx, p)
		if err != nil {
			t.incomplete("path "+p, err)
			continue
		}
		switch info.Kind {
		case host.PathMountPoint, host.PathSymlink:
			if _, ok := t.byPath[winpath.CanonicalTarget(p)]; ok {
				continue
			}
			t.unexplainedStage(ctx, p, info)
		case host.PathDir:
			if depth > 1 {
				t.walkStaging(ctx, comps, depth-1)
			}
		}
	}
}

// unexplainedStage reports a mount point or link in this driver's staging
// directory that no journal entry names.
func (t *taker) unexplainedStage(ctx context.Context, p string, info host.PathInfo) {
	const why = "; no journal entry names it: staged before the state directory was lost (wiped or replaced), " +
		"or the journal entry was removed by hand"
	if info.Kind == host.PathSymlink {
		t.unexplained(KindLink, p, "link to "+info.Target+" in this driver's staging directory"+why)
		return
	}
	what := "mount point of volume " + info.Target
	if num, err := t.diskNumber(ctx, info.Target); err == nil {
		what += " (disk " + itoa(num) + ")"
	}
	t.unexplained(KindMountPoint, p, what+" in this driver's staging directory"+why)
}

// readDir lists the directory (components below the kubelet directory);
// false when it does not exist or cannot be read.
func (t *taker) readDir(ctx context.Context, comps []string) ([]string, bool) {
	p := t.in.Root.Join(comps...)
	names, err := t.h.Files.ReadDir(ctx, p)
	switch {
	case err == nil:
		return names, true
	case errors.Is(err, host.ErrNotFound), errors.Is(err, host.ErrInvalid):
		// Missing, or not a plain directory (nothing of this driver's
		// is below a link).
		return nil, false
	}
	t.incomplete("directory "+p, err)
	return nil, false
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
