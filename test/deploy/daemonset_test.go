package deploy

import (
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/contract"
)

// The fixed parts of the deployment every rendering must share.
const (
	pluginContainer    = "csi-windows-node"
	registrarContainer = "node-driver-registrar"
	probeContainer     = "livenessprobe"

	pluginCommand     = `%CONTAINER_SANDBOX_MOUNT_POINT%\csi-windows-node.exe`
	sandboxMountPoint = `%CONTAINER_SANDBOX_MOUNT_POINT%\`
	registrarCommand  = "csi-node-driver-registrar.exe"
	probeCommand      = "livenessprobe.exe"
	registrarImage    = "registry.k8s.io/sig-storage/csi-node-driver-registrar:"
	probeImage        = "registry.k8s.io/sig-storage/livenessprobe:"

	pluginsDir       = `C:\var\lib\kubelet\plugins\`
	registrationPath = `C:\var\lib\kubelet\plugins_registry\`
	systemUser       = `NT AUTHORITY\SYSTEM`
)

// sampleFieldValues stands in for the downward API when the test expands
// $(VAR) references the way kubelet does.
var sampleFieldValues = map[string]string{
	"spec.nodeName": "win-node-1",
}

// nodeDaemonSet returns the one DaemonSet of a rendering and fails on any
// object that a node deployment should not contain.
func nodeDaemonSet(t *testing.T, r rendering) *appsv1.DaemonSet {
	t.Helper()
	var found *appsv1.DaemonSet
	for _, o := range r.objs {
		switch v := o.(type) {
		case *appsv1.DaemonSet:
			if found != nil {
				t.Fatalf("%s: two DaemonSets", r.name)
			}
			found = v
		default:
			// In particular no RBAC, ServiceAccount or Namespace: the
			// plugin reads no API object.
			t.Errorf("%s: unexpected %T; the node deployment is one DaemonSet", r.name, o)
		}
	}
	if found == nil {
		t.Fatalf("%s: no DaemonSet", r.name)
	}
	return found
}

// deployment is what checkDaemonSet learned about one rendering.
type deployment struct {
	name, driver, selector string
	ports                  []int32
}

// checkDaemonSet asserts every invariant of the node DaemonSet.
func checkDaemonSet(t *testing.T, what string, ds *appsv1.DaemonSet) deployment {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format, append([]any{what}, args...)...)
	}
	pod := ds.Spec.Template.Spec

	// HostProcess invariants ("Create a Windows HostProcess Pod" on
	// kubernetes.io: hostProcess, hostNetwork, a Windows user name).
	wo := podWindowsOptions(pod)
	if wo == nil || wo.HostProcess == nil || !*wo.HostProcess {
		errorf("pod securityContext.windowsOptions.hostProcess must be true")
	}
	if wo == nil || wo.RunAsUserName == nil || *wo.RunAsUserName != systemUser {
		errorf("pod runAsUserName must be %q", systemUser)
	}
	if !pod.HostNetwork {
		errorf("hostNetwork must be true (HostProcess pods use the host network)")
	}
	if got := pod.NodeSelector["kubernetes.io/os"]; got != "windows" {
		errorf("nodeSelector kubernetes.io/os = %q, want windows", got)
	}
	if pod.PriorityClassName != "system-node-critical" {
		errorf("priorityClassName = %q, want system-node-critical", pod.PriorityClassName)
	}
	if len(pod.Tolerations) == 0 {
		errorf("no tolerations")
	}
	if len(pod.Volumes) != 0 {
		errorf("volumes %v: a HostProcess pod sees the host file system; no hostPath is needed", volumeNames(pod.Volumes))
	}
	if len(pod.InitContainers) != 0 {
		errorf("init containers: the plugin creates its own directory (see base/daemonset.yaml)")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		errorf("automountServiceAccountToken must be false: the plugin reads no API object")
	}
	if pod.ServiceAccountName != "" {
		errorf("serviceAccountName %q: no RBAC is needed", pod.ServiceAccountName)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		errorf("updateStrategy %q, want RollingUpdate", ds.Spec.UpdateStrategy.Type)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			errorf("selector %s=%s does not match the pod template", k, v)
		}
	}

	// Containers: the plugin first (overlays patch containers/0), alone in
	// single-container mode.
	if len(pod.Containers) == 1 {
		return checkSingleContainer(t, what, ds)
	}
	want := []string{pluginContainer, registrarContainer, probeContainer}
	if len(pod.Containers) != len(want) {
		t.Fatalf("%s: containers %v, want %v", what, containerNames(pod.Containers), want)
	}
	for i, c := range pod.Containers {
		if c.Name != want[i] {
			t.Fatalf("%s: containers %v, want %v in this order", what, containerNames(pod.Containers), want)
		}
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && !*sc.WindowsOptions.HostProcess {
			errorf("container %s: hostProcess false; a HostProcess pod may hold only HostProcess containers", c.Name)
		}
		if len(c.VolumeMounts) != 0 {
			errorf("container %s: volumeMounts; none are needed", c.Name)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			errorf("container %s: cpu and memory requests are required", c.Name)
		}
	}
	plugin, registrar, probe := pod.Containers[0], pod.Containers[1], pod.Containers[2]

	// The plugin: its command comes from the image's sandbox, and every
	// argument parses with the plugin's own flag set.
	if !equal(plugin.Command, []string{pluginCommand}) {
		errorf("plugin command %q, want [%s]", plugin.Command, pluginCommand)
	}
	opts, _ := parsePluginArgs(t, what, plugin)
	driver := opts.DriverName
	socket := pluginsDir + driver + `\csi.sock`
	endpoint := "unix://" + socket
	if opts.Endpoint != endpoint {
		errorf("--endpoint=%s, want %s (the socket in the plugin's directory)", opts.Endpoint, endpoint)
	}
	if opts.KubeletRegistration {
		errorf("--kubelet-registration next to node-driver-registrar: both would serve the registration socket")
	}

	// The sidecars: same socket, kubelet told the same path.
	if !equal(registrar.Command, []string{registrarCommand}) {
		errorf("registrar command %q, want [%s]", registrar.Command, registrarCommand)
	}
	if !strings.HasPrefix(registrar.Image, registrarImage) {
		errorf("registrar image %q, want %s<tag>", registrar.Image, registrarImage)
	}
	reg := parseSidecarArgs(t, what, registrar, registrarFlags)
	if reg["csi-address"] != endpoint {
		errorf("registrar --csi-address=%s, want the plugin's --endpoint %s", reg["csi-address"], endpoint)
	}
	if reg["kubelet-registration-path"] != socket {
		errorf("registrar --kubelet-registration-path=%s, want the plugin's socket %s", reg["kubelet-registration-path"], socket)
	}
	if reg["plugin-registration-path"] != registrationPath {
		errorf("registrar --plugin-registration-path=%s, want %s", reg["plugin-registration-path"], registrationPath)
	}
	if !equal(probe.Command, []string{probeCommand}) {
		errorf("livenessprobe command %q, want [%s]", probe.Command, probeCommand)
	}
	if !strings.HasPrefix(probe.Image, probeImage) {
		errorf("livenessprobe image %q, want %s<tag>", probe.Image, probeImage)
	}
	lp := parseSidecarArgs(t, what, probe, probeFlags)
	if lp["csi-address"] != endpoint {
		errorf("livenessprobe --csi-address=%s, want the plugin's --endpoint %s", lp["csi-address"], endpoint)
	}

	// Ports: each HTTP endpoint is declared under its name, probes use
	// the names, and no port is used twice.
	checkPort(t, what, "plugin --http-endpoint", opts.HTTPEndpoint, plugin, "metrics")
	checkPort(t, what, "livenessprobe --http-endpoint", lp["http-endpoint"], plugin, "healthz")
	checkPort(t, what, "registrar --http-endpoint", reg["http-endpoint"], registrar, "registrar")
	checkProbe(t, what, plugin, "healthz")
	checkProbe(t, what, registrar, "registrar")
	var ports []int32
	names := map[string]bool{}
	for _, c := range pod.Containers {
		for _, p := range c.Ports {
			if names[p.Name] {
				errorf("port name %q declared twice", p.Name)
			}
			names[p.Name] = true
			ports = append(ports, p.ContainerPort)
		}
	}
	if d := duplicates(ports); len(d) > 0 {
		errorf("ports %v used twice", d)
	}
	return deployment{
		name:     ds.Name,
		driver:   driver,
		selector: fmt.Sprint(ds.Spec.Selector.MatchLabels),
		ports:    ports,
	}
}

// parsePluginArgs expands and parses the plugin's arguments exactly as
// cmd/csi-windows-node does (config.RegisterLogging plus config.Register
// on Windows),
// then applies Finish and the contract options' validation. It returns
// the options and the parameter contract options they make.
func parsePluginArgs(t *testing.T, what string, c corev1.Container) (*config.Options, contract.Options) {
	t.Helper()
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterLogging(fs)
	opts := config.Register(fs, "windows")
	args := expandArgs(t, what, c)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s: csi-windows-node %q: %v", what, args, err)
	}
	if fs.NArg() != 0 {
		t.Fatalf("%s: csi-windows-node takes no positional arguments, got %q", what, fs.Args())
	}
	if err := opts.Finish(fs, "windows", ""); err != nil {
		t.Fatalf("%s: csi-windows-node %q: %v", what, args, err)
	}
	// The same validation cmd/csi-windows-node applies at start-up
	// (contractOptions in main.go).
	co := contract.Options{
		DefaultKind:    contract.Kind(opts.DefaultBackend),
		Aliases:        opts.ContextAliases,
		Presets:        opts.DiskPresets,
		VolumeIDDisk:   opts.VolumeIDDisk,
		RequirePrivacy: opts.SMBRequirePriv,
		DefaultDomain:  opts.SMBDefaultDomain,
	}
	if err := co.Validate(); err != nil {
		t.Fatalf("%s: csi-windows-node %q: %v", what, args, err)
	}
	if opts.Host != config.HostWindows {
		t.Errorf("%s: --host=%s, want windows", what, opts.Host)
	}
	return opts, co
}

// Flags of the sidecars, from their cmd/*/main.go (node-driver-registrar
// v2.17, livenessprobe v2.19) plus the klog flags both register. A flag
// outside these sets is a typo or a flag of the wrong program.
var (
	klogFlags      = []string{"v", "vmodule", "logging-format"}
	registrarFlags = append([]string{"csi-address", "kubelet-registration-path", "plugin-registration-path",
		"http-endpoint", "timeout", "mode", "enable-pprof"}, klogFlags...)
	probeFlags = append([]string{"csi-address", "http-endpoint", "probe-timeout", "metrics-path"}, klogFlags...)
)

// parseSidecarArgs parses a sidecar's arguments against the flags it has
// and returns their values.
func parseSidecarArgs(t *testing.T, what string, c corev1.Container, known []string) map[string]string {
	t.Helper()
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := map[string]*string{}
	for _, name := range known {
		vals[name] = fs.String(name, "", "")
	}
	args := expandArgs(t, what, c)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s: %s %q: %v", what, c.Name, args, err)
	}
	if fs.NArg() != 0 {
		t.Fatalf("%s: %s: positional arguments %q", what, c.Name, fs.Args())
	}
	out := map[string]string{}
	for k, v := range vals {
		out[k] = *v
	}
	return out
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs replaces $(VAR) with the container's environment, as kubelet
// does, using sampleFieldValues for the downward API. An unresolved
// reference fails: kubelet would pass it on literally.
func expandArgs(t *testing.T, what string, c corev1.Container) []string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := sampleFieldValues[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				t.Fatalf("%s: container %s env %s: no sample value for field %s", what, c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		default:
			t.Fatalf("%s: container %s env %s: only values and fieldRefs are expected", what, c.Name, e.Name)
		}
	}
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				t.Errorf("%s: container %s argument %q: $(%s) is not in the container's env", what, c.Name, a, name)
				return ref
			}
			return v
		})
	}
	return out
}

// checkPort asserts that an --http-endpoint listens on the port the
// container declares under name, on every interface (kubelet probes the
// pod IP, which is the node's IP).
func checkPort(t *testing.T, what, flagName, endpoint string, c corev1.Container, name string) {
	t.Helper()
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		t.Errorf("%s: %s=%q: %v", what, flagName, endpoint, err)
		return
	}
	if host != "" {
		t.Errorf("%s: %s=%q: want :<port> (every interface)", what, flagName, endpoint)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Errorf("%s: %s=%q: %v", what, flagName, endpoint, err)
		return
	}
	for _, p := range c.Ports {
		if p.Name == name {
			if int(p.ContainerPort) != n {
				t.Errorf("%s: %s port %d, but container %s declares %s as %d", what, flagName, n, c.Name, name, p.ContainerPort)
			}
			return
		}
	}
	t.Errorf("%s: container %s declares no port %q for %s", what, c.Name, name, flagName)
}

// checkProbe asserts an HTTP liveness probe of /healthz on a named port.
func checkProbe(t *testing.T, what string, c corev1.Container, port string) {
	t.Helper()
	p := c.LivenessProbe
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: container %s needs an HTTP livenessProbe", what, c.Name)
		return
	}
	if p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != port {
		t.Errorf("%s: container %s livenessProbe %s on %s, want /healthz on port %s", what, c.Name, p.HTTPGet.Path, p.HTTPGet.Port.String(), port)
	}
}

func podWindowsOptions(p corev1.PodSpec) *corev1.WindowsSecurityContextOptions {
	if p.SecurityContext == nil {
		return nil
	}
	return p.SecurityContext.WindowsOptions
}

func containerNames(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func volumeNames(vs []corev1.Volume) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

func equal(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func duplicates[T comparable](xs []T) []T {
	seen := map[T]int{}
	var out []T
	for _, x := range xs {
		if seen[x]++; seen[x] == 2 {
			out = append(out, x)
		}
	}
	return out
}

// TestKustomizeRenders builds the base and every overlay, decodes every
// object strictly and checks the DaemonSet.
func TestKustomizeRenders(t *testing.T) {
	for key, r := range kustomizeRenderings(t) {
		t.Run(nameOr(key, "base"), func(t *testing.T) {
			checkDaemonSet(t, r.name, nodeDaemonSet(t, r))
		})
	}
}

// TestHelmRenders renders the chart with its defaults and every values
// file and checks the DaemonSet the same way.
func TestHelmRenders(t *testing.T) {
	for key, r := range helmRenderings(t) {
		t.Run(nameOr(key, "defaults"), func(t *testing.T) {
			checkDaemonSet(t, r.name, nodeDaemonSet(t, r))
		})
	}
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
