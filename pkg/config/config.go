package config

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wincsi/csi-windows-node/internal/bytesize"
)

// Host kinds.
const (
	HostWindows = "windows"
	HostSim     = "sim"
)

// Clouds of --cloud: whose instance metadata service gives the node ID
// and topology (pkg/cloud). CloudNone reads none.
const (
	CloudNone  = "none"
	CloudAWS   = "aws"
	CloudGCE   = "gce"
	CloudAzure = "azure"
)

// Modes of --orphan-sweep (pkg/sweep).
const (
	OrphanSweepOff    = "off"
	OrphanSweepReport = "report"
	OrphanSweepClean  = "clean"
)

// Options are the parsed flags.
type Options struct {
	Endpoint          string
	DriverName        string
	NodeID            string
	MaxVolumesPerNode int64
	Topology          map[string]string
	KubeletDir        string
	StateDir          string
	Host              string
	SimDir            string
	SimConfig         string
	SimAutoAttach     bool
	SimDiskSize       Size
	SimLatency        time.Duration
	HTTPEndpoint      string
	EnablePprof       bool
	Version           bool
	ShutdownGrace     time.Duration

	// Kubelet registration by the plugin itself (pkg/registration).
	KubeletRegistration     bool
	KubeletRegistrationPath string

	// Parameter contract.
	DefaultBackend   string
	ContextAliases   map[string]string // vendor key -> contract key
	DiskPresets      []string
	VolumeIDDisk     string
	SMBRequirePriv   bool
	SMBDefaultDomain string
	SMBKeepMappings  bool
	VolumeRootAccess string

	// Backend behaviour.
	OfflineDiskOnUnstage bool
	KeepISCSIPortals     bool

	// Orphan sweep (pkg/sweep).
	OrphanSweep         string
	OrphanSweepInterval time.Duration

	// RecordHostCalls is the file every Windows host call is recorded to
	// (pkg/winhost/recording); empty records none.
	RecordHostCalls string

	// Node identity from the cloud's instance metadata service.
	Cloud                 string
	CloudMetadataEndpoint string
	CloudMetadataTimeout  time.Duration

	// set records which flags were given explicitly.
	set map[string]bool
	// lookupEnv reads the environment (os.LookupEnv; tests replace it);
	// endpointFromEnv records that Endpoint came from CSI_ENDPOINT.
	lookupEnv       func(string) (string, bool)
	endpointFromEnv bool
}

// EndpointEnv is the environment variable a CSI plugin supervisor names the
// plugin's listen address in (CSI spec v1.13.0, "Connectivity" and
// "CSI_ENDPOINT": the plugin reads it and listens there).
const EndpointEnv = "CSI_ENDPOINT"

// mapFlag collects repeated key=value flags.
type mapFlag struct {
	m    *map[string]string
	name string
}

func (f mapFlag) String() string {
	if f.m == nil || *f.m == nil {
		return ""
	}
	keys := make([]string, 0, len(*f.m))
	for k := range *f.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + (*f.m)[k]
	}
	return strings.Join(parts, ",")
}

func (f mapFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	if *f.m == nil {
		*f.m = make(map[string]string)
	}
	if old, dup := (*f.m)[k]; dup && old != v {
		return fmt.Errorf("key %q given twice with different values", k)
	}
	(*f.m)[k] = v
	return nil
}

type listFlag struct{ l *[]string }

func (f listFlag) String() string {
	if f.l == nil {
		return ""
	}
	return strings.Join(*f.l, ",")
}

func (f listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*f.l = append(*f.l, p)
		}
	}
	return nil
}

// Register adds the plugin's flags to fs and returns the options they fill.
// goos is the operating system the binary runs on ("windows" or other).
func Register(fs *flag.FlagSet, goos string) *Options {
	o := &Options{lookupEnv: os.LookupEnv}
	fs.StringVar(&o.Endpoint, "endpoint", "", "CSI endpoint, unix://<path>. Default: $CSI_ENDPOINT when set, else unix://<kubelet-dir>/plugins/<driver-name>/csi.sock")
	fs.StringVar(&o.DriverName, "driver-name", "", "CSI driver name to register under; must equal the vendor controller's driver name (required)")
	fs.StringVar(&o.NodeID, "node-id", "", "node ID reported by NodeGetInfo, in the format the vendor's controller expects. Default: the host name")
	fs.Int64Var(&o.MaxVolumesPerNode, "max-volumes-per-node", 0, "maximum number of volumes the CO may place on this node; 0 means no limit")
	fs.Var(mapFlag{m: &o.Topology, name: "topology"}, "topology", "topology segment key=value reported by NodeGetInfo (repeatable)")
	defKubelet := "/var/lib/kubelet"
	defHost := ""
	if goos == "windows" {
		defKubelet = `C:\var\lib\kubelet`
		defHost = HostWindows
	}
	fs.StringVar(&o.KubeletDir, "kubelet-dir", defKubelet, "kubelet root directory; every staging and target path must lie below it")
	fs.StringVar(&o.StateDir, "state-dir", "", "directory of the plugin's stage journal. Default: <kubelet-dir>/plugins/<driver-name>/state (sim: <sim-dir>/journal)")
	fs.StringVar(&o.Host, "host", defHost, "host backend: windows, or sim for the simulated Windows host (Linux only; no default outside Windows)")
	fs.StringVar(&o.SimDir, "sim-dir", "", "directory of the simulated host's state and volume contents (required with --host=sim)")
	fs.StringVar(&o.SimConfig, "sim-config", "", "with --host=sim: YAML file of disks, SMB shares and iSCSI targets to add to the simulated host (docs/sim-config.md)")
	fs.BoolVar(&o.SimAutoAttach, "sim-auto-attach", true, "with --host=sim: the stand-in for the controller attaches a blank disk for a disk volume the simulated host has not seen, and grows it on expansion")
	o.SimDiskSize = 1 << 30
	fs.Var(&o.SimDiskSize, "sim-disk-size", "with --host=sim: size of the disks the stand-in for the controller attaches (bytes, or with a Ki/Mi/Gi/Ti suffix)")
	fs.DurationVar(&o.SimLatency, "sim-latency", 0, "with --host=sim: latency injected before every simulated host call")
	fs.StringVar(&o.HTTPEndpoint, "http-endpoint", "", "host:port serving /metrics and /healthz; empty disables it")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", false, "also serve the Go profiler on --http-endpoint under /debug/pprof/ (keep that endpoint on localhost)")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVar(&o.KubeletRegistration, "kubelet-registration", false, "register with kubelet itself, as node-driver-registrar does, on <kubelet-dir>/plugins_registry/<driver-name>-reg.sock: for a pod without the registrar and livenessprobe sidecars. /healthz then also waits for kubelet's confirmation; the pod's liveness probe needs it, so keep --http-endpoint")
	fs.StringVar(&o.KubeletRegistrationPath, "kubelet-registration-path", "", "with --kubelet-registration: the CSI socket's path as kubelet dials it, told to kubelet. Default: the path of --endpoint")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", 25*time.Second, "how long in-flight RPCs may run after SIGTERM before they are cancelled")
	fs.StringVar(&o.DefaultBackend, "default-backend", "", "backend when volume_context sets none and names no source or iqn: disk, smb or iscsi")
	fs.Var(mapFlag{m: &o.ContextAliases, name: "context-alias"}, "context-alias", "VENDORKEY=ourKey: read a vendor's volume_context/publish_context key as one of ours (repeatable)")
	fs.Var(listFlag{l: &o.DiskPresets}, "disk-preset", "cloud preset for finding disks: azure-disk, aws-ebs, gce-pd, vsphere (repeatable)")
	fs.StringVar(&o.VolumeIDDisk, "volume-id-disk", "", "when a disk volume names no disk: \"serial\" selects the disk whose serial equals the volume ID; none turns this off")
	fs.BoolVar(&o.SMBRequirePriv, "smb-require-privacy", true, "default of the requirePrivacy parameter (SMB 3 encryption) for SMB global mappings")
	fs.StringVar(&o.SMBDefaultDomain, "smb-default-domain", "", "domain for SMB user names that carry none; empty means none is added")
	fs.StringVar(&o.VolumeRootAccess, "volume-root-access", "", "volumeRootAccess of disk and iSCSI volumes that set none: <principal>:<right> entries separated by ';', for example \"ContainerUser:modify\"; empty grants nothing")
	fs.BoolVar(&o.SMBKeepMappings, "smb-keep-mappings", false, "keep an SMB global mapping when the last volume using its share is unstaged")
	fs.BoolVar(&o.OfflineDiskOnUnstage, "offline-disk-on-unstage", true, "take a disk offline after unmounting it, so that detach cannot hang")
	fs.BoolVar(&o.KeepISCSIPortals, "keep-iscsi-portals", false, "never remove iSCSI target portals, even when no target on them is in use")
	fs.StringVar(&o.OrphanSweep, "orphan-sweep", OrphanSweepReport, "what to do, at start and every --orphan-sweep-interval, with host resources this plugin made that no staged volume uses: off, report (log and count them) or clean (also remove them)")
	fs.DurationVar(&o.OrphanSweepInterval, "orphan-sweep-interval", 10*time.Minute, "time between two rounds of the orphan sweep")
	fs.StringVar(&o.RecordHostCalls, "record-host-calls", "", "write every WMI and Win32 call of the Windows host and its answer to this file, as JSON lines, for a bug report or a test (docs/selftest.md#recordings; secrets are never written). Empty: off")
	fs.StringVar(&o.Cloud, "cloud", CloudNone, "read the node ID and topology from this cloud's instance metadata service at start, as its CSI controller expects them: none, aws, gce or azure (--node-id and --topology win)")
	fs.StringVar(&o.CloudMetadataEndpoint, "cloud-metadata-endpoint", "", "with --cloud: base URL of the instance metadata service. Default: http://169.254.169.254")
	fs.DurationVar(&o.CloudMetadataTimeout, "cloud-metadata-timeout", 30*time.Second, "with --cloud: how long start-up may spend reading the instance metadata service, retries included, before the plugin exits")
	return o
}

// Finish applies defaults that depend on other flags and validates. set
// names the flags given on the command line (flag.FlagSet.Visit).
func (o *Options) Finish(fs *flag.FlagSet, goos, hostname string) error {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })

	var errs []error
	if err := ValidateDriverName(o.DriverName); err != nil {
		errs = append(errs, fmt.Errorf("--driver-name: %w", err))
	}
	switch o.Host {
	case HostWindows:
		if goos != "windows" {
			errs = append(errs, errors.New("--host=windows: the Windows host only runs on Windows; use --host=sim to simulate one"))
		}
	case HostSim:
		if goos == "windows" {
			// The simulated host models Windows on Linux (POSIX paths, Linux
			// symlinks as mount points); on a Windows node it would pretend
			// to stage volumes while touching nothing (pkg/sim doc).
			errs = append(errs, errors.New("--host=sim: the simulated host runs on Linux only and is never used on a Windows node; use --host=windows"))
		}
		if o.SimDir == "" {
			errs = append(errs, errors.New("--sim-dir is required with --host=sim"))
		}
	case "":
		errs = append(errs, errors.New("--host is required: windows, or sim for the simulated Windows host"))
	default:
		errs = append(errs, fmt.Errorf("--host=%s: want windows or sim", o.Host))
	}
	errs = append(errs, o.finishCloud()...)
	// With aws and gce the node ID comes from the metadata service; with
	// azure it is the node name, as without --cloud.
	if o.NodeID == "" && !o.CloudNodeID() {
		o.NodeID = hostname
		if o.NodeID == "" {
			errs = append(errs, errors.New("--node-id is empty and the host name is unknown"))
		}
	}
	if o.NodeID != "" {
		if err := ValidateNodeID(o.NodeID); err != nil {
			errs = append(errs, fmt.Errorf("--node-id: %w", err))
		}
	}
	if o.MaxVolumesPerNode < 0 {
		errs = append(errs, fmt.Errorf("--max-volumes-per-node=%d: must not be negative", o.MaxVolumesPerNode))
	}
	for k, v := range o.Topology {
		if err := ValidateTopology(k, v); err != nil {
			errs = append(errs, fmt.Errorf("--topology %s=%s: %w", k, v, err))
		}
	}
	if err := ValidateTopologyKeys(o.Topology); err != nil {
		errs = append(errs, fmt.Errorf("--topology: %w", err))
	}
	if o.KubeletDir == "" {
		errs = append(errs, errors.New("--kubelet-dir must not be empty"))
	}
	sep := "/"
	if goos == "windows" {
		sep = `\`
	}
	if o.Endpoint == "" && o.lookupEnv != nil {
		if v, ok := o.lookupEnv(EndpointEnv); ok && v != "" {
			o.Endpoint, o.endpointFromEnv = v, true
		}
	}
	if o.Endpoint == "" && o.DriverName != "" {
		o.Endpoint = "unix://" + join(sep, o.KubeletDir, "plugins", o.DriverName, "csi.sock")
	}
	if o.StateDir == "" && o.DriverName != "" {
		if o.Host == HostSim && o.SimDir != "" {
			o.StateDir = join(sep, o.SimDir, "journal")
		} else {
			o.StateDir = join(sep, o.KubeletDir, "plugins", o.DriverName, "state")
		}
	}
	switch o.VolumeIDDisk {
	case "", "none":
		o.VolumeIDDisk = ""
	case "serial":
	default:
		errs = append(errs, fmt.Errorf("--volume-id-disk=%s: want serial or none", o.VolumeIDDisk))
	}
	switch o.DefaultBackend {
	case "", "disk", "smb", "iscsi":
	default:
		errs = append(errs, fmt.Errorf("--default-backend=%s: want disk, smb or iscsi", o.DefaultBackend))
	}
	if o.HTTPEndpoint != "" {
		if err := validateHostPort(o.HTTPEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("--http-endpoint=%s: %w", o.HTTPEndpoint, err))
		}
	}
	if o.EnablePprof && o.HTTPEndpoint == "" {
		errs = append(errs, errors.New("--enable-pprof needs --http-endpoint"))
	}
	if o.ShutdownGrace <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-grace=%s: must be positive", o.ShutdownGrace))
	}
	switch o.OrphanSweep {
	case OrphanSweepOff, OrphanSweepReport, OrphanSweepClean:
	default:
		errs = append(errs, fmt.Errorf("--orphan-sweep=%s: want off, report or clean", o.OrphanSweep))
	}
	if o.OrphanSweepInterval <= 0 {
		errs = append(errs, fmt.Errorf("--orphan-sweep-interval=%s: must be positive", o.OrphanSweepInterval))
	}
	if o.KubeletRegistrationPath != "" {
		if !o.KubeletRegistration {
			errs = append(errs, errors.New("--kubelet-registration-path only applies with --kubelet-registration"))
		}
		if strings.HasPrefix(strings.ToLower(o.KubeletRegistrationPath), "unix:") {
			errs = append(errs, fmt.Errorf("--kubelet-registration-path=%s: want the socket's path, without unix:// (kubelet dials the path it is given)", o.KubeletRegistrationPath))
		}
	}
	if o.SimLatency < 0 {
		errs = append(errs, fmt.Errorf("--sim-latency=%s: must not be negative", o.SimLatency))
	}
	if o.RecordHostCalls != "" && o.Host != HostWindows {
		errs = append(errs, errors.New("--record-host-calls only applies with --host=windows: the simulated host makes no WMI or Win32 call"))
	}
	if o.Host != HostSim {
		for _, f := range []string{"sim-dir", "sim-config", "sim-latency", "sim-auto-attach", "sim-disk-size"} {
			if o.set[f] {
				errs = append(errs, fmt.Errorf("--%s only applies with --host=sim", f))
			}
		}
	}
	return errors.Join(errs...)
}

// finishCloud validates --cloud and the flags that go with it.
func (o *Options) finishCloud() []error {
	var errs []error
	switch o.Cloud {
	case CloudNone:
		for _, f := range []string{"cloud-metadata-endpoint", "cloud-metadata-timeout"} {
			if o.set[f] {
				errs = append(errs, fmt.Errorf("--%s only applies with --cloud=aws, gce or azure", f))
			}
		}
		return errs
	case CloudAWS, CloudGCE, CloudAzure:
	default:
		return []error{fmt.Errorf("--cloud=%s: want none, aws, gce or azure", o.Cloud)}
	}
	if o.CloudMetadataEndpoint != "" {
		if err := validateBaseURL(o.CloudMetadataEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("--cloud-metadata-endpoint=%s: %w", o.CloudMetadataEndpoint, err))
		}
	}
	if o.CloudMetadataTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--cloud-metadata-timeout=%s: must be positive", o.CloudMetadataTimeout))
	}
	return errs
}

// EndpointSource names where Endpoint came from, for an error about it:
// the flag (or its default) or the environment variable.
func (o *Options) EndpointSource() string {
	if o.endpointFromEnv {
		return EndpointEnv
	}
	return "--endpoint"
}

// CloudNodeID reports whether the node ID is read from the cloud's
// metadata service: with --cloud=aws or gce (whose controllers want the
// instance ID or path), unless --node-id was given.
func (o *Options) CloudNodeID() bool {
	return (o.Cloud == CloudAWS || o.Cloud == CloudGCE) && !o.set["node-id"]
}

// validateBaseURL checks a metadata service's base URL: http or https, a
// host, no user information (it would be logged), query or fragment.
func validateBaseURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("want an http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("the URL names no host")
	case u.User != nil:
		return errors.New("the URL must not hold user information")
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		return errors.New("the URL must not hold a query or fragment")
	}
	return nil
}

// validateHostPort checks a TCP listen address, host:port: an empty host
// is every interface, the port 0 to 65535 (0: one the system picks).
func validateHostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port, such as :29660 or 127.0.0.1:29660")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// IsSet reports whether the flag was given on the command line.
func (o *Options) IsSet(name string) bool { return o.set[name] }

func join(sep string, parts ...string) string {
	out := strings.TrimRight(parts[0], `\/`)
	for _, p := range parts[1:] {
		out += sep + p
	}
	return out
}

// driverName is the CSI naming rule: at most 63 characters, alphanumeric at
// both ends, dashes, dots and alphanumerics between (CSI spec, GetPluginInfo).
var driverName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// ValidateDriverName checks a CSI driver name.
func ValidateDriverName(n string) error {
	switch {
	case n == "":
		return errors.New("required: the name of the vendor's CSI driver, as its controller and CSIDriver object use it")
	case len(n) > 63:
		return fmt.Errorf("%q is %d characters long; at most 63 are allowed", n, len(n))
	case !driverName.MatchString(n):
		return fmt.Errorf("%q must begin and end with an alphanumeric character and hold only alphanumerics, '-' and '.'", n)
	}
	return nil
}

var (
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
)

// MaxNodeIDLength is the most bytes NodeGetInfo's node_id may hold (CSI
// spec v1.13.0, NodeGetInfoResponse.node_id: "SHALL NOT exceed 256 bytes").
const MaxNodeIDLength = 256

// ValidateNodeID checks the node ID NodeGetInfo reports.
func ValidateNodeID(id string) error {
	if len(id) > MaxNodeIDLength {
		return fmt.Errorf("%q is %d bytes long; CSI allows at most %d", id, len(id), MaxNodeIDLength)
	}
	return nil
}

// ValidateTopologyKeys checks that no two topology keys differ only in case
// (CSI spec v1.13.0, Topology: "Keys MUST be case-insensitive. Meaning the
// keys "Zone" and "zone" MUST not both exist").
func ValidateTopologyKeys(segments map[string]string) error {
	seen := make(map[string]string, len(segments))
	for _, k := range slices.Sorted(maps.Keys(segments)) {
		if prev, dup := seen[strings.ToLower(k)]; dup {
			return fmt.Errorf("keys %q and %q differ only in case; CSI topology keys are case-insensitive", prev, k)
		}
		seen[strings.ToLower(k)] = k
	}
	return nil
}

// ValidateTopology checks a topology segment against Kubernetes label rules,
// because the CO turns segments into node labels.
func ValidateTopology(k, v string) error {
	name := k
	if prefix, n, ok := strings.Cut(k, "/"); ok {
		if len(prefix) > 253 || !labelPrefix.MatchString(prefix) {
			return fmt.Errorf("key prefix %q is not a DNS subdomain", prefix)
		}
		name = n
	}
	if !labelName.MatchString(name) {
		return fmt.Errorf("key name %q is not a valid label name", name)
	}
	if v != "" && !labelName.MatchString(v) {
		return fmt.Errorf("value %q is not a valid label value", v)
	}
	return nil
}

// Size is a byte count flag: a number of bytes or a number with a binary
// suffix (Ki, Mi, Gi, Ti), as internal/bytesize parses it.
type Size uint64

func (s Size) String() string { return strconv.FormatUint(uint64(s), 10) }

// Set parses "1073741824", "512Mi" or "16Gi".
func (s *Size) Set(v string) error {
	n, err := bytesize.Parse(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}
