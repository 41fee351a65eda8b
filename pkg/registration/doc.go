// Package registration is the plugin's own registration with kubelet
// (--kubelet-registration), the job node-driver-registrar does in the
// default deployment: it serves kubelet's plugin registration API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1) on
// <kubelet-dir>\plugins_registry\<driver>-reg.sock, where kubelet's plugin
// watcher finds it, and answers as node-driver-registrar v2.17.0 answers
// for the same driver name and paths:
//
//   - GetInfo: type CSIPlugin, the driver name, the CSI endpoint as kubelet
//     must dial it (--kubelet-registration-path) and the supported versions
//     ["1.0.0"];
//   - NotifyRegistrationStatus: kubelet's verdict. Registered, the plugin
//     counts as registered (/healthz, csi_windows_node_kubelet_registered);
//     refused, the reason is logged and the plugin stops with an error, so
//     that its container exits non-zero and kubelet restarts it, which
//     registers it again.
//
// Kubelet's side, in the order it calls (kubernetes/kubernetes
// pkg/kubelet/pluginmanager, operationexecutor/operation_generator.go
// GenerateRegisterPluginFunc and notifyPlugin, and pluginwatcher, at
// commit db8b216c556c): the watcher sees the socket appear, kubelet dials
// it and calls GetInfo (1 s deadline), validates the answer with the CSI
// handler, registers the driver (which calls NodeGetInfo on the endpoint
// GetInfo named), then calls NotifyRegistrationStatus (5 s deadline) with
// PluginRegistered true, or false and the error when any step failed.
// Then (pluginwatcher/plugin_watcher.go and monitor.go at commit
// 02910b74b5ea): a socket that disappears deregisters the driver
// (handleDeleteEvent); a kubelet that starts registers every socket it
// finds (traversePluginDir); and newer kubelets watch a registered
// plugin's connection (monitor.go): GetInfo every 10 s, and after two
// failures in a row the driver is deregistered, its socket left in place,
// until GetInfo answers again and kubelet registers it anew.
//
// The plugin learns only what kubelet says to it, a confirmation or a
// refusal, never a deregistration. So once confirmed, Status reports the
// plugin registered until kubelet refuses it or the socket is gone or
// replaced, even when kubelet has dropped the driver meanwhile (a kubelet
// restart that never registers it again, the connection monitor above).
//
// What belongs here: the Registration service, its state (Status: whether
// kubelet confirmed the registration, and what is missing if not), its
// metric, and where its socket lives (SocketPath). What does not: claiming
// and creating the socket (pkg/server.Claim, as for the CSI socket: a lock
// beside it, a stale socket replaced, a live one refused), when it is
// served and what a refusal stops (pkg/plugin.Serve), and the HTTP
// endpoint (pkg/server).
package registration
