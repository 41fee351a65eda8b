package deploy

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// helmOnlyLabels are the labels Helm charts conventionally add and a
// kustomize build does not; everything else must agree.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}

// TestHelmMatchesKustomize renders the chart with the defaults and with
// deploy/helm/values/<overlay>.yaml, and requires the same DaemonSet as
// the kustomize base and overlays/<overlay>: images, commands, arguments
// (so paths and ports), environment, security context, probes,
// resources, scheduling, names and selectors. Only Helm's bookkeeping
// labels may differ.
func TestHelmMatchesKustomize(t *testing.T) {
	kz, hm := kustomizeRenderings(t), helmRenderings(t)
	for key := range kz {
		if _, ok := hm[key]; !ok {
			t.Errorf("overlays/%s has no deploy/helm/values/%s.yaml", key, key)
		}
	}
	for key := range hm {
		if _, ok := kz[key]; !ok {
			t.Errorf("deploy/helm/values/%s.yaml has no overlays/%s", key, key)
		}
	}
	for key, k := range kz {
		h, ok := hm[key]
		if !ok {
			continue
		}
		t.Run(nameOr(key, "base"), func(t *testing.T) { sameDaemonSet(t, k, h) })
	}
}

// sameDaemonSet requires the same DaemonSet from a kustomize rendering and
// a Helm one, but for Helm's bookkeeping labels.
func sameDaemonSet(t *testing.T, k, h rendering) {
	t.Helper()
	kds, hds := nodeDaemonSet(t, k), nodeDaemonSet(t, h)
	for _, l := range helmOnlyLabels {
		delete(hds.Labels, l)
	}
	kb, err := yaml.Marshal(kds)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := yaml.Marshal(hds)
	if err != nil {
		t.Fatal(err)
	}
	if string(kb) != string(hb) {
		t.Errorf("%s and %s differ:\n%s", k.name, h.name, lineDiff(string(kb), string(hb)))
	}
}

// TestInstancesCoexist requires that every overlay could run on the same
// node as every other: different names, selectors, driver names and host
// ports.
func TestInstancesCoexist(t *testing.T) {
	seen := map[string]string{} // value -> overlay
	claim := func(kind, value, overlay string) {
		t.Helper()
		if prev, dup := seen[kind+"\x00"+value]; dup {
			t.Errorf("overlays %s and %s share %s %s; both could not run on one node", prev, overlay, kind, value)
		}
		seen[kind+"\x00"+value] = overlay
	}
	for key, r := range kustomizeRenderings(t) {
		if key == "" {
			continue // the base is a template, not an instance
		}
		d := checkDaemonSet(t, r.name, nodeDaemonSet(t, r))
		claim("DaemonSet name", d.name, key)
		claim("selector", d.selector, key)
		claim("driver name", d.driver, key)
		for _, p := range d.ports {
			claim("host port", fmt.Sprint(p), key)
		}
	}
}

// lineDiff shows the lines only one side has, in order of the left side.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	count := func(ls []string) map[string]int {
		m := map[string]int{}
		for _, l := range ls {
			m[l]++
		}
		return m
	}
	ac, bc := count(al), count(bl)
	var out []string
	for _, l := range al {
		if bc[l] < ac[l] {
			out = append(out, "- kustomize: "+l)
		}
	}
	for _, l := range bl {
		if ac[l] < bc[l] {
			out = append(out, "+ helm:      "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestChartKubeVersion pins the chart's kubeVersion to the documented
// floor: Kubernetes 1.26, where HostProcess containers became stable.
func TestChartKubeVersion(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"v1.25.9": false, minKubeVersion: true, "v1.35.0": true} {
		if got := chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, v); got != want {
			t.Errorf("chart kubeVersion %q accepts %s: %t, want %t", chrt.Metadata.KubeVersion, v, got, want)
		}
	}
}
