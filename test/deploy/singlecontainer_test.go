package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// Single-container mode: the plugin registers with kubelet itself
// (--kubelet-registration) and kubelet probes its own /healthz.
const (
	singleContainerOverlay   = "single-container"
	singleContainerComponent = kustomizeDir + "/components/single-container"
	singleContainerValue     = "singleContainer"
)

// checkSingleContainer asserts the invariants of a pod whose only
// container is the plugin: it registers with kubelet itself, tells
// kubelet its own socket (the path the registrar's
// --kubelet-registration-path gets in the default mode), declares one
// port, and kubelet's liveness probe asks its /healthz there with httpGet.
func checkSingleContainer(t *testing.T, what string, ds *appsv1.DaemonSet) deployment {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format, append([]any{what}, args...)...)
	}
	plugin := ds.Spec.Template.Spec.Containers[0]
	if plugin.Name != pluginContainer {
		t.Fatalf("%s: the one container is %q, want %s", what, plugin.Name, pluginContainer)
	}
	if sc := plugin.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && !*sc.WindowsOptions.HostProcess {
		errorf("hostProcess false; a HostProcess pod may hold only HostProcess containers")
	}
	if len(plugin.VolumeMounts) != 0 {
		errorf("volumeMounts; none are needed")
	}
	if plugin.Resources.Requests.Cpu().IsZero() || plugin.Resources.Requests.Memory().IsZero() {
		errorf("cpu and memory requests are required")
	}
	if !equal(plugin.Command, []string{pluginCommand}) {
		errorf("plugin command %q, want [%s]", plugin.Command, pluginCommand)
	}
	opts, _ := parsePluginArgs(t, what, plugin)
	socket := pluginsDir + opts.DriverName + `\csi.sock`
	if opts.Endpoint != "unix://"+socket {
		errorf("--endpoint=%s, want unix://%s (the socket in the plugin's directory)", opts.Endpoint, socket)
	}
	if !opts.KubeletRegistration {
		errorf("one container without --kubelet-registration: nothing registers the driver with kubelet")
	}
	if p := opts.KubeletRegistrationPath; p != "" && p != socket {
		errorf("--kubelet-registration-path=%s, want the plugin's socket %s (or the default, which is it)", p, socket)
	}
	if len(plugin.Ports) != 1 {
		errorf("ports %v, want metrics only", plugin.Ports)
	}
	checkPort(t, what, "plugin --http-endpoint", opts.HTTPEndpoint, plugin, "metrics")
	checkProbe(t, what, plugin, "metrics")
	var ports []int32
	for _, p := range plugin.Ports {
		ports = append(ports, p.ContainerPort)
	}
	return deployment{name: ds.Name, driver: opts.DriverName, selector: fmt.Sprint(ds.Spec.Selector.MatchLabels), ports: ports}
}

// overlayWithSingleContainer renders overlays/<name> with
// components/single-container added after components/instance, as
// docs/install.md tells a user to do: a copy of the overlay in a
// temporary directory whose paths lead back to the repository.
func overlayWithSingleContainer(t *testing.T, name string) rendering {
	t.Helper()
	src := filepath.Join(overlaysDir, name)
	dir := t.TempDir()
	abs, err := filepath.Abs(kustomizeDir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if e.Name() == "kustomization.yaml" {
			const instance = "- ../../components/instance\n"
			if !strings.Contains(text, instance) {
				t.Fatalf("%s/kustomization.yaml does not list %q", src, instance)
			}
			text = strings.Replace(text, instance, instance+"- ../../components/single-container\n", 1)
			text = strings.ReplaceAll(text, "../../", filepath.ToSlash(rel)+"/")
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	what := "kustomize overlays/" + name + " + components/single-container"
	return rendering{name: what, objs: decodeAll(t, what, renderKustomize(t, dir))}
}

// TestSingleContainer: the single-container overlay and the Helm value
// give one container with the probe on the plugin's /healthz
// (checkSingleContainer), every other rendering keeps the sidecars, and
// every overlay with components/single-container added renders the same
// DaemonSet as its Helm values with singleContainer: true.
func TestSingleContainer(t *testing.T) {
	for _, renderings := range []map[string]rendering{kustomizeRenderings(t), helmRenderings(t)} {
		if _, ok := renderings[singleContainerOverlay]; !ok {
			t.Errorf("no %s rendering among %v", singleContainerOverlay, keys(renderings))
		}
		for key, r := range renderings {
			want := 3
			if key == singleContainerOverlay {
				want = 1
			}
			ds := nodeDaemonSet(t, r)
			if n := len(ds.Spec.Template.Spec.Containers); n != want {
				t.Errorf("%s: %d containers, want %d", r.name, n, want)
			}
			checkDaemonSet(t, r.name, ds)
		}
	}
	if v, ok := readValues(t, chartDir+"/values.yaml")[singleContainerValue]; !ok || v != false {
		t.Errorf("chart default %s = %v, want false (the sidecars stay the default)", singleContainerValue, v)
	}

	for _, o := range overlayNames(t) {
		if o == singleContainerOverlay {
			continue
		}
		t.Run(o, func(t *testing.T) {
			k := overlayWithSingleContainer(t, o)
			vals := readValues(t, filepath.Join(valuesDir, o+".yaml"))
			vals[singleContainerValue] = true
			what := "helm values/" + o + ".yaml with " + singleContainerValue + "=true"
			h := rendering{name: what, objs: decodeAll(t, what, renderHelmValues(t, helmRelease(o), vals))}
			for _, r := range []rendering{k, h} {
				ds := nodeDaemonSet(t, r)
				if n := len(ds.Spec.Template.Spec.Containers); n != 1 {
					t.Fatalf("%s: %d containers, want 1", r.name, n)
				}
				checkDaemonSet(t, r.name, ds)
			}
			sameDaemonSet(t, k, h)
		})
	}
}

func keys(m map[string]rendering) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
