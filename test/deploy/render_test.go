package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/runtime"
	serjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Paths from this package's directory.
const (
	repoRoot     = "../.."
	kustomizeDir = repoRoot + "/deploy/kubernetes"
	baseDir      = kustomizeDir + "/base"
	overlaysDir  = kustomizeDir + "/overlays"
	chartDir     = repoRoot + "/deploy/helm/csi-windows-node"
	valuesDir    = repoRoot + "/deploy/helm/values"
	examplesDir  = repoRoot + "/deploy/examples"
	dockerfile   = repoRoot + "/Dockerfile.windows"
	makefile     = repoRoot + "/Makefile"
	namespace    = "kube-system"
	chartName    = "csi-windows-node"
	// HostProcess containers are GA since Kubernetes 1.26 (docs/install.md).
	minKubeVersion = "v1.26.0"
)

// renderKustomize builds a kustomization directory as `kubectl apply -k`
// would, with kustomize's default options (load restrictions on).
func renderKustomize(t *testing.T, dir string) []byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out
}

// renderHelm renders the chart as `helm template <release> <chart> -n
// kube-system [-f valuesFile]` would, with the engine in strict mode so
// that a template reading a value the chart does not define fails.
func renderHelm(t *testing.T, release, valuesFile string) []byte {
	t.Helper()
	return renderHelmValues(t, release, readValues(t, valuesFile))
}

// readValues reads a values file; "" is no values.
func readValues(t *testing.T, valuesFile string) chartutil.Values {
	t.Helper()
	if valuesFile == "" {
		return chartutil.Values{}
	}
	vals, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		t.Fatalf("read %s: %v", valuesFile, err)
	}
	return vals
}

// renderHelmValues is renderHelm with the values given.
func renderHelmValues(t *testing.T, release string, vals chartutil.Values) []byte {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	// Render for the oldest Kubernetes the chart supports, and refuse
	// what `helm install` would refuse (the chart's kubeVersion).
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: minKubeVersion, Major: "1", Minor: "26"}
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, minKubeVersion) {
		t.Fatalf("chart kubeVersion %q excludes %s", chrt.Metadata.KubeVersion, minKubeVersion)
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		t.Fatalf("helm values for %s: %v", release, err)
	}
	files, err := engine.Engine{Strict: true}.Render(chrt, rv)
	if err != nil {
		t.Fatalf("helm template %s: %v", release, err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out bytes.Buffer
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, files[name])
	}
	return out.Bytes()
}

// strictDecoder decodes YAML into the registered Kubernetes API types and
// fails on unknown and duplicate fields.
var strictDecoder = serjson.NewSerializerWithOptions(serjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	serjson.SerializerOptions{Yaml: true, Strict: true})

// decodeAll splits a YAML stream and decodes every document strictly into
// its Kubernetes type.
func decodeAll(t *testing.T, what string, stream []byte) []runtime.Object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: split document %d: %v", what, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := strictDecoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: document %d does not decode strictly: %v\n%s", what, i, err, doc)
		}
		if gvk.Kind == "" {
			t.Fatalf("%s: document %d has no kind", what, i)
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", what)
	}
	return objs
}

// stripComments drops comment-only lines, so a document holding nothing
// but comments counts as empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// overlayNames lists deploy/kubernetes/overlays/*.
func overlayNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(overlaysDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no overlays")
	}
	return names
}

// rendering is one way of deploying the plugin: a kustomization or a Helm
// release.
type rendering struct {
	name string // "kustomize base", "helm values/smb.yaml", ...
	objs []runtime.Object
}

// kustomizeRenderings renders the base and every overlay.
func kustomizeRenderings(t *testing.T) map[string]rendering {
	t.Helper()
	out := map[string]rendering{"": {name: "kustomize base", objs: decodeAll(t, "base", renderKustomize(t, baseDir))}}
	for _, o := range overlayNames(t) {
		what := "kustomize overlays/" + o
		out[o] = rendering{name: what, objs: decodeAll(t, what, renderKustomize(t, filepath.Join(overlaysDir, o)))}
	}
	return out
}

// helmRelease is the release name that corresponds to an overlay ("" is the
// base): the DaemonSet's name in both.
func helmRelease(overlay string) string {
	if overlay == "" {
		return chartName
	}
	return chartName + "-" + overlay
}

// helmRenderings renders the chart with its defaults and with every
// deploy/helm/values file, keyed like kustomizeRenderings.
func helmRenderings(t *testing.T) map[string]rendering {
	t.Helper()
	out := map[string]rendering{"": {name: "helm defaults", objs: decodeAll(t, "helm defaults", renderHelm(t, helmRelease(""), ""))}}
	entries, err := os.ReadDir(valuesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok || e.IsDir() {
			t.Errorf("%s/%s: want only <overlay>.yaml files", valuesDir, e.Name())
			continue
		}
		what := "helm values/" + e.Name()
		out[name] = rendering{name: what, objs: decodeAll(t, what, renderHelm(t, helmRelease(name), filepath.Join(valuesDir, e.Name())))}
	}
	return out
}
