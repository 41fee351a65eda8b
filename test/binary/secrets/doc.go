// Package secrets runs the secrets suite's steps (test/harness/leakcheck)
// against the real plugin binary at --v=10 in both log formats: no secret
// value appears in its stderr, the errors and messages it returns,
// /metrics, any file below its kubelet and sim directories, or what
// csi-windows-node diagnose prints. test/system/secrets checks the same in
// the test process and on the Windows host over the scripted executor.
package secrets
