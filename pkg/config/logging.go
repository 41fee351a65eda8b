package config

import (
	"flag"
	"fmt"

	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	// The json log format, registered as Kubernetes components and the
	// CSI sidecars register it.
	_ "k8s.io/component-base/logs/json/register"
)

// loggingFlags are the flags of k8s.io/component-base's logging options
// (logs/api/v1 AddGoFlags) the plugin offers: the format, verbosity per
// process and per file, and the flush interval. The split-stream and
// buffer options it also defines are alpha and need the
// LoggingAlphaOptions feature gate, for which the plugin has no flag, so
// they are left out rather than offered and then refused.
var loggingFlags = []string{"logging-format", "v", "vmodule", logsapi.LogFlushFreqFlagName}

// Logging is the logging configuration the flags fill: k8s.io/component-
// base's LoggingConfiguration, with its feature gates at their defaults
// (the json format is beta and on; contextual logging is on).
type Logging struct {
	config *logsapi.LoggingConfiguration
	gates  featuregate.MutableVersionedFeatureGate
}

// RegisterLogging adds the logging flags to fs (loggingFlags) and returns
// the configuration they fill. It replaces klog.InitFlags: as in
// Kubernetes components since KEP-2845, klog's own output flags
// (--logtostderr, --log_file, ...) are gone; --v and --vmodule keep their
// names and meaning.
func RegisterLogging(fs *flag.FlagSet) *Logging {
	l := &Logging{config: logsapi.NewLoggingConfiguration(), gates: featuregate.NewFeatureGate()}
	if err := logsapi.AddFeatureGates(l.gates); err != nil {
		panic(fmt.Sprintf("logging feature gates: %v", err)) // only on a second registration of the same gates
	}
	all := flag.NewFlagSet("logging", flag.ContinueOnError)
	logsapi.AddGoFlags(l.config, all)
	for _, name := range loggingFlags {
		f := all.Lookup(name)
		if f == nil {
			panic("k8s.io/component-base/logs/api/v1 no longer defines --" + name)
		}
		fs.Var(f.Value, f.Name, f.Usage)
	}
	return l
}

// Format returns the --logging-format given ("text" or "json").
func (l *Logging) Format() string { return l.config.Format }

// Apply validates the logging flags and installs the logger klog and
// every contextual logger use, writing to stderr; the standard library's
// log package goes through it too. Call it once, right after the flags
// are parsed and before anything logs: a second call fails.
func (l *Logging) Apply() error {
	logs.InitLogs()
	if err := logsapi.ValidateAndApply(l.config, l.gates); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	return nil
}
