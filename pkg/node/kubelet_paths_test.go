package node

import (
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// TestKubeletWindowsSpellingsAreOnePath: kubelet builds every staging path
// it sends (stage, publish, expand, health) with one function from its
// --root-dir (kubernetes/kubernetes v1.37.2 pkg/volume/csi/csi_attacher.go
// makeDeviceMountPath, filepath.Join), so one kubelet spells a path the
// same in every call. The root's spelling is the node's: the default
// "/var/lib/kubelet" is only cleaned (cmd/kubelet/app/options/options.go),
// giving \var\lib\kubelet on Windows, with no drive; a node may instead
// set it with a drive letter, in either case.
// A kubelet restarted with --root-dir spelt otherwise sends the staged path
// in another spelling: the plugin resolves paths against its kubelet
// directory and compares them with samePath, which must see one path.
func TestKubeletWindowsSpellingsAreOnePath(t *testing.T) {
	const sha = "1b4d2b6f1b6c2d0e4c9f7b3a0c8e5d6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
	rels := []string{
		`\plugins\kubernetes.io\csi\drv.example.com\` + sha + `\globalmount`,
		`\pods\0f4c1f7e-8a39-4b8e-9f59-3b6f3b0c2a11\volumes\kubernetes.io~csi\pv-1\mount`,
	}
	kubeletRoots := []string{`\var\lib\kubelet`, `C:\var\lib\kubelet`, `c:\var\lib\kubelet`, `C:/var/lib/kubelet`}
	for _, dir := range []string{`C:\var\lib\kubelet`, `c:\var\lib\kubelet`} { // the plugin's --kubelet-dir
		root, err := winpath.NewRoot(dir, winpath.Windows)
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range rels {
			for _, staged := range kubeletRoots {
				a, err := root.Resolve(staged + rel)
				if err != nil {
					t.Fatalf("kubelet-dir %s: %s: %v", dir, staged+rel, err)
				}
				for _, later := range kubeletRoots {
					b, err := root.Resolve(later + rel)
					if err != nil {
						t.Fatalf("kubelet-dir %s: %s: %v", dir, later+rel, err)
					}
					if !samePath(a, b) {
						t.Errorf("kubelet-dir %s: %s and %s resolve to %s and %s, not one path", dir, staged+rel, later+rel, a, b)
					}
				}
			}
		}
	}
}
