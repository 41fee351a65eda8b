// Package hostmetrics measures the plugin's host calls for Prometheus:
// Metrics.Wrap decorates a host.Host so that every call of every method is
// counted and timed on
//
//	csi_windows_node_host_calls_total{area, operation, result}
//	csi_windows_node_host_call_duration_seconds{area, operation}
//
// where area is the host.Host field in lower case (disks, volumes, files,
// smb, iscsi), operation the method name (List, Mount, Stat, ...; the pair
// matches the simulated host's op names, "disks.List") and result "ok" or
// the class of the error (Result). Both are registered on the registry of
// the csi-lib-utils metrics manager, so they are served on /metrics next
// to csi_plugin_operations_seconds: the host calls per RPC and the time an
// RPC spent in them, which separates the plugin's own overhead from the
// host's work (docs/performance.md).
//
// What belongs here: the decorator and its two metrics. What does not: the
// WMI and Win32 round trips below a host call (the Windows host's counting
// executor, pkg/winhost, counts those), and any change to what a call
// does: the decorator passes arguments, context, results and errors
// through untouched.
package hostmetrics
